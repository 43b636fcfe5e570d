//! The CUDA device's own services, on a GPU (skipped without one): the caching allocator's books and reuse, and
//! its refusals (sizes too large to address, allocations larger than the GPU, reads past a buffer); then the
//! process-wide TF32 switch of the f32 products.
//! One test in its own binary, so no other test allocates while it reads the global statistics, and no other
//! product runs while TF32 is on.
#![cfg(feature = "cuda")]

use typed_tensor::device::Cuda;
use typed_tensor::prelude::*;

#[test]
fn caching_allocator_reuses_freed_buffers_and_reports_bytes() {
    if let Err(e) = Cuda::init() {
        eprintln!("skipped the caching allocator test: {e}");
        return;
    }
    Cuda::empty_cache().unwrap();
    let start = Cuda::memory_stats().unwrap();
    assert_eq!(start.cached, 0);

    // 1M f32 = 4 MiB: a 1 MiB size class multiple, so the books count exactly 4 MiB.
    let a = Tensor::<f32, Rank1<{ 1 << 20 }>, Cuda>::ones();
    let held = Cuda::memory_stats().unwrap();
    assert_eq!(held.in_use - start.in_use, 4 << 20);
    drop(a);
    let freed = Cuda::memory_stats().unwrap();
    assert_eq!(freed.in_use, start.in_use);
    assert_eq!(freed.cached, 4 << 20);

    // The same size again comes from the cache, and computes correctly in the reused buffer.
    let b = Tensor::<f32, Rank1<{ 1 << 20 }>, Cuda>::full(3.0);
    let reused = Cuda::memory_stats().unwrap();
    assert_eq!(reused.cached, 0);
    assert_eq!(reused.in_use - start.in_use, 4 << 20);
    assert_eq!(b.sum_all().to_scalar(), 3.0 * (1 << 20) as f32);

    // A small tensor rounds up to the 512-byte class; empty_cache gives the cached bytes back.
    let small = Tensor::<u8, Rank1<3>, Cuda>::zeros();
    assert_eq!(
        Cuda::memory_stats().unwrap().in_use - reused.in_use,
        512,
        "3 bytes take one 512-byte class"
    );
    drop((b, small));
    Cuda::empty_cache().unwrap();
    let end = Cuda::memory_stats().unwrap();
    assert_eq!((end.in_use, end.cached), (start.in_use, 0));

    // Sizes too large to address, and allocations larger than the GPU, are errors that leave the books alone.
    assert!(matches!(
        Tensor::<f64, (usize,), Cuda>::try_full_with_shape((1 << 61,), 0.0),
        Err(Error::ShapeOverflow { op: "full", .. })
    ));
    let err = Tensor::<u8, (usize,), Cuda>::try_full_with_shape((1 << 50,), 0).unwrap_err();
    assert!(matches!(err, Error::Cuda { op: "full", .. }), "{err}");
    // A read through a hand-built layout past the buffer's end is refused before the copy.
    use typed_tensor::device::Kernels;
    use typed_tensor::layout::Layout;
    use typed_tensor::shape::Dims;
    let t = Tensor::<f32, Rank1<4>, Cuda>::ones();
    let past = Layout::from_parts(Dims::from_slice(&[4]), &[1], 2);
    let err = <Cuda as Kernels>::to_vec(t.storage(), &past).unwrap_err();
    assert!(
        err.to_string().contains("past the end of a buffer of 4"),
        "{err}"
    );
    drop(t);
    let after = Cuda::memory_stats().unwrap();
    assert_eq!(after.in_use, start.in_use);

    tf32_products_stay_within_their_stated_error();
}

/// With TF32 allowed, an f32 product of `K` terms in [-1, 1) is within `4 * 2^-11 * sqrt(K)` of the exact one
/// (`Cuda::set_allow_tf32`'s stated precision); switched off again, products are exact f32 again.
fn tf32_products_stay_within_their_stated_error() {
    const K: usize = 512;
    let values = |seed: u64, n: usize| -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                ((x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32) * 2.0
                    - 1.0
            })
            .collect()
    };
    let (va, vb) = (values(1, 64 * K), values(2, K * 48));
    let a = Tensor::<f32, Rank2<64, K>, Cuda>::from_vec(va.clone()).unwrap();
    let b = Tensor::<f32, Rank2<K, 48>, Cuda>::from_vec(vb.clone()).unwrap();
    let want: Vec<f64> = (0..64 * 48)
        .map(|ij| {
            let (i, j) = (ij / 48, ij % 48);
            (0..K)
                .map(|k| va[i * K + k] as f64 * vb[k * 48 + j] as f64)
                .sum()
        })
        .collect();
    let worst = |got: Vec<f32>| {
        got.iter()
            .zip(&want)
            .map(|(g, w)| (*g as f64 - w).abs())
            .fold(0.0, f64::max)
    };
    assert!(!Cuda::allow_tf32(), "TF32 is off by default");
    let exact = worst(a.matmul(&b).to_vec());
    Cuda::set_allow_tf32(true);
    let tf32 = worst(a.matmul(&b).to_vec());
    Cuda::set_allow_tf32(false);
    let again = worst(a.matmul(&b).to_vec());
    println!("largest error of a {K}-term f32 product: {exact:e} exact, {tf32:e} with TF32");
    assert!(exact < 1e-4 && again < 1e-4, "{exact} {again}");
    let bound = 4.0 * 2f64.powi(-11) * (K as f64).sqrt();
    assert!(tf32 < bound, "TF32 error {tf32} over {bound}");
}
