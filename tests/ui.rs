//! The compile-fail gallery: every shape rule, shown by a program that must not compile, with the exact error
//! (`tests/ui/fail/*.stderr`). The passing case makes trybuild run `cargo build`, which is what the rules checked
//! by `const` assertions need. Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test --test ui`.

//!
//! With the `cuda` feature the gallery checks the CUDA-only cases instead of the device-independent ones, which the
//! default `cargo test` already checks (the whole gallery takes minutes to compile).

#[test]
fn shape_rules() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    #[cfg(not(feature = "cuda"))]
    t.compile_fail("tests/ui/fail/*.rs");
    #[cfg(feature = "cuda")]
    t.compile_fail("tests/ui/cuda/*.rs");
}
