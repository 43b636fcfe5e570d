//! With the `cuda` feature, compiles kernels/swish.cu to PTX in OUT_DIR (nvcc from `NVCC`, else on `PATH`), which
//! the op embeds with `include_str!` and hands to `PtxKernel`. Without it nothing is built.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=kernels/swish.cu");
    println!("cargo:rerun-if-env-changed=NVCC");
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let nvcc = std::env::var("NVCC").unwrap_or_else(|_| "nvcc".to_string());
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("swish.ptx");
    let status = Command::new(&nvcc)
        .args(["--ptx", "-arch=compute_70", "-O3", "kernels/swish.cu", "-o"])
        .arg(&out)
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "the `cuda` feature runs nvcc ({nvcc}: {e}); install the CUDA toolkit or set NVCC"
            )
        });
    assert!(status.success(), "nvcc failed on kernels/swish.cu");
}
