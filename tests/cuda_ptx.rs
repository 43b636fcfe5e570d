//! Checks of the CUDA kernels that need no GPU: every kernel the Rust side can launch exists in the compiled PTX
//! with the parameter sizes the launcher passes, every PTX entry is reachable from Rust, and each module carries the
//! machine code that `ptxas` made of it for sm_70, sm_80 and sm_90.
#![cfg(feature = "cuda")]

use std::collections::BTreeMap;
use typed_tensor::device::cuda::kernels::{PtxModule, PTX_MODULES};
use typed_tensor::ops::cuda_catalog as catalog;

/// `.entry` name -> parameter sizes in bytes, from PTX text.
fn entries(ptx: &str) -> BTreeMap<String, Vec<usize>> {
    let mut out = BTreeMap::new();
    let mut lines = ptx.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.trim().strip_prefix(".visible .entry ") else {
            continue;
        };
        let name = rest.trim_end_matches('(').to_string();
        let mut params = Vec::new();
        for p in lines.by_ref() {
            let p = p.trim();
            if p.starts_with(')') {
                break;
            }
            params.push(param_size(p));
        }
        out.insert(name, params);
    }
    out
}

fn param_size(decl: &str) -> usize {
    // `.param .u64 name,` or `.param .align 8 .b8 name[104]`
    if let Some(open) = decl.find('[') {
        let close = decl.find(']').expect("array param closes");
        return decl[open + 1..close].parse().expect("array size");
    }
    let ty = decl.split_whitespace().nth(1).expect("param type");
    match &ty[2..] {
        "8" => 1,
        "16" => 2,
        "32" => 4,
        "64" => 8,
        other => panic!("unexpected PTX param type {ty} ({other})"),
    }
}

#[test]
fn every_launched_kernel_exists_with_matching_parameters() {
    let modules: BTreeMap<&str, BTreeMap<String, Vec<usize>>> = PTX_MODULES
        .iter()
        .map(|m| (m.name, entries(m.ptx)))
        .collect();
    let sigs = catalog();
    assert!(
        sigs.len() > 200,
        "catalog unexpectedly small: {}",
        sigs.len()
    );
    for sig in &sigs {
        let module = &modules[sig.module];
        let params = module.get(&sig.name).unwrap_or_else(|| {
            panic!(
                "kernel {} is missing from module {} ({}.cu)",
                sig.name, sig.module, sig.module
            )
        });
        assert_eq!(params, sig.params(), "parameter sizes of {}", sig.name);
    }
    // And the other way round: no kernel is compiled that Rust cannot launch.
    let launched: std::collections::BTreeSet<&str> = sigs.iter().map(|s| s.name.as_str()).collect();
    for (module, kernels) in &modules {
        for name in kernels.keys() {
            assert!(
                launched.contains(name.as_str()),
                "{module}.cu defines {name}, unknown to Rust"
            );
        }
    }
}

/// build.rs turns each module's PTX into machine code for sm_70, sm_80 and sm_90 (those that can load it) with
/// nvcc, whose ptxas fails the build on a module it rejects. This checks that every fatbin the loader gets holds
/// that machine code, as `cuobjdump` lists it: ptxas accepted each module for each architecture. (Running ptxas
/// again here, as this test did before, repeated the build's work: two minutes of CI on two cores.)
#[test]
fn ptxas_accepted_every_module_for_sm70_sm80_sm90() {
    let dir = std::env::temp_dir().join(format!("typed-tensor-fatbin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for module in PTX_MODULES {
        let path = dir.join(format!("{}.fatbin", module.name));
        std::fs::write(&path, module.fatbin).unwrap();
        let out = std::process::Command::new("cuobjdump")
            .arg("-lelf")
            .arg(&path)
            .output()
            .expect("cuobjdump (from the CUDA toolkit, see .ci/install-cuda.sh) must be on PATH");
        let listing = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "cuobjdump could not read {}'s fatbin:\n{}",
            module.name,
            String::from_utf8_lossy(&out.stderr)
        );
        // A module built for compute_80 cannot target sm_70: it carries the archs that can load it.
        for cc in [70, 80, 90]
            .into_iter()
            .filter(|&cc| cc >= module.min_capability)
        {
            assert!(
                listing.contains(&format!(".sm_{cc}.cubin")),
                "{}.cu has no sm_{cc} machine code in its fatbin:\n{listing}",
                module.name
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A kernel parameter indexed at run time is copied to local memory by every thread (it cut elementwise
/// bandwidth to ~5% on an H100), so no kernel may have a local stack frame, except `sin`/`cos`/`tan`, whose
/// range reduction in CUDA's libm keeps a small local array.
#[test]
fn no_kernel_copies_its_parameters_to_local_memory() {
    for PtxModule {
        name: module, ptx, ..
    } in PTX_MODULES
    {
        for body in ptx.split(".visible .entry ").skip(1) {
            let name = body.split('(').next().unwrap_or_default();
            // The entry's own text ends where the next function (libm's helpers, say) begins.
            let body = body.split("\n.func").next().unwrap_or_default();
            if ["sin_", "cos_", "tan_"].iter().any(|f| name.starts_with(f)) {
                continue;
            }
            assert!(
                !body.contains("__local_depot"),
                "{module}.cu: kernel {name} uses local memory"
            );
        }
    }
}

/// Every CUDA source (`ptx/*.cu`, and each family's `src/ops/<family>/*.cu`) is a module the loader knows: build.rs
/// writes `PTX_MODULES` from the files it compiles, and this checks that the table it wrote covers each of them
/// once.
#[test]
fn every_cuda_source_is_a_listed_module() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let entries = |dir: std::path::PathBuf| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect()
    };
    let mut dirs = vec![root.join("ptx")];
    dirs.extend(
        entries(root.join("src/ops"))
            .into_iter()
            .filter(|p| p.is_dir()),
    );
    let mut sources: Vec<String> = dirs
        .into_iter()
        .flat_map(entries)
        .filter_map(|path| {
            (path.extension()? == "cu").then(|| path.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    let mut listed: Vec<String> = PTX_MODULES.iter().map(|m| m.name.to_string()).collect();
    sources.sort();
    listed.sort();
    assert_eq!(sources, listed);
}
