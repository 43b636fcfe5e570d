//! With the `cuda` feature, compiles every `ptx/*.cu` to PTX with nvcc into `OUT_DIR`, where
//! `src/device/cuda/kernels.rs` embeds it with `include_str!`.
//!
//! The target is the virtual architecture `compute_70` (Volta and newer: f16/bf16 arithmetic through f32, PTX that
//! current drivers JIT for any newer GPU), unless the file's first line names another (`// nvcc-arch: compute_80`
//! for kernels that need Ampere; the loader skips such modules on older GPUs). Nothing here asks for a GPU, so the
//! build works on machines without one.
//! `NVCC` overrides the compiler (default: `nvcc` on `PATH`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=NVCC");
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let ptx_dir = Path::new("ptx");
    println!("cargo:rerun-if-changed=ptx");
    let nvcc = std::env::var("NVCC").unwrap_or_else(|_| "nvcc".to_string());

    let mut sources: Vec<PathBuf> = std::fs::read_dir(ptx_dir)
        .expect("ptx/ holds the CUDA kernel sources")
        .map(|e| e.expect("readable ptx/ entry").path())
        .collect();
    sources.sort();
    for path in &sources {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    for src in sources
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
    {
        let stem = src.file_stem().expect("a .cu file has a stem");
        let out = out_dir.join(stem).with_extension("ptx");
        let text = std::fs::read_to_string(src).expect("readable .cu file");
        let arch = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("// nvcc-arch: "))
            .unwrap_or("compute_70")
            .trim();
        let status = Command::new(&nvcc)
            .args(["--ptx", &format!("-arch={arch}"), "-O3", "-std=c++14", "-I"])
            .arg(ptx_dir)
            .arg(src)
            .arg("-o")
            .arg(&out)
            .status()
            .unwrap_or_else(|e| {
                panic!(
                    "the `cuda` feature compiles ptx/*.cu with nvcc, which could not be run ({nvcc}: {e}); \
                     install the CUDA toolkit (see .ci/install-cuda.sh) or set NVCC"
                )
            });
        assert!(status.success(), "nvcc failed on {}", src.display());
    }
}
