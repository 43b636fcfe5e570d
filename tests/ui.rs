//! The compile-fail gallery: every shape rule, shown by a program that must not compile, with the exact error
//! (`tests/ui/fail/*.stderr`). The passing case makes trybuild run `cargo build`, which is what the rules checked
//! by `const` assertions need. Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test --test ui`.
//! A new case is listed in `src/shape_errors.rs` (the gallery in the API docs, which includes its `.stderr`: create
//! the file empty first, so the crate builds, then overwrite it).

//!
//! With the `cuda` feature the gallery checks the CUDA-only cases instead of the device-independent ones, which the
//! default `cargo test` already checks (the whole gallery takes minutes to compile).

#[test]
fn shape_rules() {
    // trybuild builds the crate, its dependencies and every case in its own target directory, with cargo's default
    // dev profile: full debuginfo, which no case here needs (the failing ones never link).
    // SAFETY: this binary's only test, so no other thread reads the environment while it is written.
    unsafe { std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "0") };
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    #[cfg(not(feature = "cuda"))]
    t.compile_fail("tests/ui/fail/*.rs");
    #[cfg(feature = "cuda")]
    t.compile_fail("tests/ui/cuda/*.rs");
}

/// Every program of the gallery is shown in the API docs (`typed_tensor::shape_errors`), and the docs show no
/// program that is not there.
#[test]
fn every_case_is_in_the_docs() {
    let mut on_disk: Vec<String> = std::fs::read_dir("tests/ui/fail")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut shown: Vec<String> = typed_tensor::shape_errors::CASES
        .iter()
        .map(|c| c.to_string())
        .collect();
    shown.sort();
    assert_eq!(
        shown, on_disk,
        "src/shape_errors.rs lists the tests/ui/fail programs"
    );
}
