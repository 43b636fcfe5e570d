//! matmul in every shape form, for f32/f64/f16/bf16, on contiguous and strided operands, against a naive f64
//! reference; small sizes take the direct loop, larger ones gemm.

use crate::common::*;
use typed_tensor::prelude::*;

/// Naive `[B, M, K] x [B, K, N]` in f64 over row-major buffers.
fn reference(a: &[f64], b: &[f64], batch: usize, m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; batch * m * n];
    for p in 0..batch {
        for i in 0..m {
            for j in 0..n {
                out[(p * m + i) * n + j] = (0..k)
                    .map(|q| a[(p * m + i) * k + q] * b[(p * k + q) * n + j])
                    .sum();
            }
        }
    }
    out
}

fn values<T: WithDType>(t: &[T]) -> Vec<f64> {
    t.iter().map(|x| x.to_f64()).collect()
}

/// Products of `K` terms: the tolerance grows with K (f16/bf16 round inputs once, then accumulate in f32).
fn check<T: WithDType>(what: &str, got: &[T], want: &[f64], k: usize) {
    let f32_rounding = if T::DTYPE == DType::F32 {
        1e-6 * k as f64
    } else {
        0.0
    };
    assert_within(
        what,
        got,
        want,
        tolerance::<T>() * (k as f64).sqrt() * 2.0 + f32_rounding,
    );
}

fn matrix_forms<T: FloatDType, D: Device, const M: usize, const K: usize, const N: usize>() {
    let a: Tensor<T, Rank2<M, K>, D> = random(1);
    let b: Tensor<T, Rank2<K, N>, D> = random(2);
    let (va, vb) = (values(&a.to_vec()), values(&b.to_vec()));
    let want = reference(&va, &vb, 1, M, K, N);
    check("(M, K) x (K, N)", &a.matmul(&b).to_vec(), &want, K);

    // Transposed operands (strided, not copied) and a narrowed one.
    let at: Tensor<T, Rank2<K, M>, D> = Tensor::from_vec(a.t().to_vec()).unwrap();
    let bt: Tensor<T, Rank2<N, K>, D> = Tensor::from_vec(b.t().to_vec()).unwrap();
    check("a.t().t() x b", &at.t().matmul(&b).to_vec(), &want, K);
    check("a x b.t().t()", &a.matmul(&bt.t()).to_vec(), &want, K);
    check(
        "a.t().t() x b.t().t()",
        &at.t().matmul(&bt.t()).to_vec(),
        &want,
        K,
    );
    let wide: Tensor<T, Rank2<M, 70>, D> = random(3); // K <= 68 in every call
    let narrow = wide.narrow::<Axis<1>, 2, K>();
    let want_n = reference(&values(&narrow.to_vec()), &vb, 1, M, K, N);
    check("narrowed x b", &narrow.matmul(&b).to_vec(), &want_n, K);

    // Matrix-vector, vector-matrix, dot; the vector is a strided column of a matrix.
    let col = bt.i(0); // a contiguous (K,) vector
    let col_strided = b.i((.., 1)); // stride N
    let v = values(&col_strided.to_vec());
    check(
        "(M, K) x (K,)",
        &a.matmul(&col_strided).to_vec(),
        &reference(&va, &v, 1, M, K, 1),
        K,
    );
    let row = a.i(0);
    let vr = values(&row.to_vec());
    check(
        "(K,) x (K, N)",
        &row.matmul(&b).to_vec(),
        &reference(&vr, &vb, 1, 1, K, N),
        K,
    );
    let dot = reference(&values(&col.to_vec()), &v, 1, 1, K, 1);
    check(
        "(K,) x (K,)",
        &[col.matmul(&col_strided).to_scalar()],
        &dot,
        K,
    );
}

fn batched_forms<
    T: FloatDType,
    D: Device,
    const B: usize,
    const M: usize,
    const K: usize,
    const N: usize,
>() {
    let a: Tensor<T, Rank3<B, M, K>, D> = random(4);
    let b: Tensor<T, Rank3<B, K, N>, D> = random(5);
    let (va, vb) = (values(&a.to_vec()), values(&b.to_vec()));
    check(
        "(B, M, K) x (B, K, N)",
        &a.matmul(&b).to_vec(),
        &reference(&va, &vb, B, M, K, N),
        K,
    );

    // Batched x shared matrix: the matrix is repeated for the reference.
    let w: Tensor<T, Rank2<K, N>, D> = random(6);
    let vw: Vec<f64> = values(&w.to_vec()).repeat(B);
    check(
        "(B, M, K) x (K, N)",
        &a.matmul(&w).to_vec(),
        &reference(&va, &vw, B, M, K, N),
        K,
    );

    // A shared matrix on the left, and a transposed one (its columns strided).
    let l: Tensor<T, Rank2<M, K>, D> = random(11);
    let vl: Vec<f64> = values(&l.to_vec()).repeat(B);
    check(
        "(M, K) x (B, K, N)",
        &l.matmul(&b).to_vec(),
        &reference(&vl, &vb, B, M, K, N),
        K,
    );
    let lt = random::<T, Rank2<K, M>, D>(12).t();
    let vlt: Vec<f64> = values(&lt.to_vec()).repeat(B);
    check(
        "(M, K)^T x (B, K, N)",
        &lt.matmul(&b).to_vec(),
        &reference(&vlt, &vb, B, M, K, N),
        K,
    );
    // Vectors shared by a batch: (B, M, K) x (K,) and (K,) x (B, K, N).
    let vk: Tensor<T, Rank1<K>, D> = random(13);
    let vvk = values(&vk.to_vec());
    check(
        "(B, M, K) x (K,)",
        &a.matmul(&vk).to_vec(),
        &reference(&va, &vvk.repeat(B), B, M, K, 1),
        K,
    );
    check(
        "(K,) x (B, K, N)",
        &vk.matmul(&b).to_vec(),
        &reference(&vvk.repeat(B), &vb, B, 1, K, N),
        K,
    );

    // A permuted batch: (M, B, K) viewed as (B, M, K).
    let mbk: Tensor<T, Rank3<M, B, K>, D> = random(7);
    let p = mbk.permute::<(Axis<1>, Axis<0>, Axis<2>)>();
    check(
        "permuted batch",
        &p.matmul(&b).to_vec(),
        &reference(&values(&p.to_vec()), &vb, B, M, K, N),
        K,
    );

    // Rank 4, including a view whose batch axes cannot merge (copied first).
    let a4: Tensor<T, Rank4<2, B, M, K>, D> = random(8);
    let b4: Tensor<T, Rank4<2, B, K, N>, D> = random(9);
    let want4 = reference(&values(&a4.to_vec()), &values(&b4.to_vec()), 2 * B, M, K, N);
    check(
        "(B1, B2, M, K) x (B1, B2, K, N)",
        &a4.matmul(&b4).to_vec(),
        &want4,
        K,
    );
    // A matrix shared by two batch axes, on either side.
    check(
        "(B1, B2, M, K) x (K, N)",
        &a4.matmul(&w).to_vec(),
        &reference(
            &values(&a4.to_vec()),
            &values(&w.to_vec()).repeat(2 * B),
            2 * B,
            M,
            K,
            N,
        ),
        K,
    );
    check(
        "(M, K) x (B1, B2, K, N)",
        &l.matmul(&b4).to_vec(),
        &reference(
            &values(&l.to_vec()).repeat(2 * B),
            &values(&b4.to_vec()),
            2 * B,
            M,
            K,
            N,
        ),
        K,
    );
    let swapped: Tensor<T, Rank4<B, 2, M, K>, D> = random(10);
    let s = swapped.transpose::<Axis<0>, Axis<1>>();
    let want_s = reference(&values(&s.to_vec()), &values(&b4.to_vec()), 2 * B, M, K, N);
    check(
        "unmergeable batch axes",
        &s.matmul(&b4).to_vec(),
        &want_s,
        K,
    );
}

fn all_forms<T: FloatDType, D: Device>() {
    matrix_forms::<T, D, 1, 1, 2>(); // static shapes up to 16: the unrolled loop (dense operands)
    matrix_forms::<T, D, 4, 4, 4>();
    matrix_forms::<T, D, 16, 3, 9>();
    matrix_forms::<T, D, 16, 16, 16>();
    matrix_forms::<T, D, 5, 7, 3>(); // strided operands: the direct loop
    matrix_forms::<T, D, 33, 65, 17>(); // gemm
    matrix_forms::<T, D, 130, 66, 150>(); // past one 128 x 128 GPU tile, K not a multiple of the K slice
    matrix_forms::<T, D, 130, 64, 136>(); // rows a multiple of 8: the tensor-core kernel's vector loads
    matrix_forms::<T, D, 132, 20, 140>(); // all multiples of 4: the GPU f32 kernel's 16-byte loads, both axes
    batched_forms::<T, D, 3, 4, 5, 6>();
    batched_forms::<T, D, 2, 31, 40, 29>();
    batched_forms::<T, D, 2, 132, 36, 8>(); // the 16-byte loads with batch strides
}

fn every_dtype<D: Device>() {
    all_forms::<f32, D>();
    all_forms::<f64, D>();
    all_forms::<f16, D>();
    all_forms::<bf16, D>();
}

fn known_values_and_runtime_dims<D: Device>() {
    // torch.tensor([[1., 2.], [3., 4.]]) @ torch.tensor([[5., 6.], [7., 8.]]) = [[19, 22], [43, 50]]
    let a = Tensor::<f32, _, D>::from_array([[1., 2.], [3., 4.]]);
    let b = Tensor::<f32, _, D>::from_array([[5., 6.], [7., 8.]]);
    assert_eq!(a.matmul(&b).to_array(), [[19., 22.], [43., 50.]]);
    // f16 inputs accumulate in f32: 1024 products of 1 sum to 1024 exactly.
    let ones = Tensor::<f16, Rank2<1, 1024>, D>::ones();
    let col = Tensor::<f16, Rank2<1024, 1>, D>::ones();
    assert_eq!(ones.matmul(&col).to_array(), [[f16::from_f32(1024.0)]]);
    // A runtime batch: (usize, 2) x (2, 3).
    let x = Tensor::<f64, (usize, Const<2>), D>::from_vec_with_shape(
        (3, Const),
        vec![1., 0., 0., 1., 1., 1.],
    )
    .unwrap();
    let w = Tensor::<f64, _, D>::from_array([[1., 2., 3.], [4., 5., 6.]]);
    let y = x.matmul(&w);
    assert_eq!(y.shape(), (3, Const));
    assert_eq!(y.to_vec(), [1., 2., 3., 4., 5., 6., 5., 7., 9.]);
    // Runtime inner dims that disagree are an error naming both shapes.
    let l = Tensor::<f32, (Const<2>, usize), D>::zeros_with_shape((Const, 3));
    let r = Tensor::<f32, (usize, Const<2>), D>::zeros_with_shape((4, Const));
    let err = l.try_matmul(&r).unwrap_err();
    assert_eq!(
        err.to_string(),
        "matmul: shapes [2, 3] and [4, 2] do not match"
    );
}

/// Dense static products up to 16 run an unrolled loop on host memory; it sums in the order of the general
/// direct loop (which strided views of the same values take), so both give identical bits.
fn static_path_is_the_direct_loop<T: FloatDType>() {
    let a: Tensor<T, Rank2<6, 8>, Cpu> = random(11);
    let b: Tensor<T, Rank2<8, 4>, Cpu> = random(12);
    let at: Tensor<T, Rank2<8, 6>, Cpu> = Tensor::from_vec(a.t().to_vec()).unwrap();
    let bt: Tensor<T, Rank2<4, 8>, Cpu> = Tensor::from_vec(b.t().to_vec()).unwrap();
    let unrolled = a.matmul(&b).to_vec();
    assert_eq!(unrolled, a.try_matmul(&b).unwrap().to_vec());
    assert_eq!(unrolled, at.t().matmul(&b).to_vec(), "{:?}", T::DTYPE);
    assert_eq!(unrolled, a.matmul(&bt.t()).to_vec(), "{:?}", T::DTYPE);
    let (v, w) = (a.i(2), b.i((.., 1)).contiguous());
    assert_eq!(v.matmul(&b).to_vec(), at.t().i(2).matmul(&b).to_vec());
    assert_eq!(a.matmul(&w).to_vec(), a.matmul(&b.i((.., 1))).to_vec());
    assert_eq!(
        v.matmul(&v.contiguous()).to_scalar(),
        v.matmul(&at.i((.., 2))).to_scalar()
    );
}

#[test]
fn cpu_static_path_is_the_direct_loop() {
    static_path_is_the_direct_loop::<f32>();
    static_path_is_the_direct_loop::<f64>();
    static_path_is_the_direct_loop::<f16>();
    static_path_is_the_direct_loop::<bf16>();
    // A 4x4 f32 product (64 bytes) needs no heap at all on the CPU.
    let a = Tensor::<f32, Rank2<4, 4>, Cpu>::from_array([[1., 2., 3., 4.]; 4]);
    let eye = Tensor::<f32, Rank2<4, 4>, Cpu>::from_array(std::array::from_fn(|i| {
        std::array::from_fn(|j| (i == j) as u8 as f32)
    }));
    let c = a.matmul(&eye);
    assert!(c.storage().is_inline());
    assert_eq!(c.to_array(), a.to_array());
    // Sums start from their first product: products that are all -0 sum to -0 (their exact sum), on the
    // unrolled path and on the direct loop that a strided operand takes alike.
    let z = Tensor::<f32, Rank2<2, 2>, Cpu>::from_array([[-0.0, -0.0], [1.0, -0.0]]);
    let zt = Tensor::<f32, Rank2<2, 2>, Cpu>::from_array(z.t().to_array());
    let ones = Tensor::<f32, Rank2<2, 2>, Cpu>::ones();
    for c in [z.matmul(&ones), zt.t().matmul(&ones)] {
        let c = c.to_array();
        assert!(c[0][0] == 0.0 && c[0][0].is_sign_negative(), "{c:?}");
        assert_eq!(c[1], [1.0, 1.0]);
    }
}

/// The 4x4 f32 product (the static path's most common case, compiled straight into the caller) gives the bits
/// of the direct loop that a transposed view of the same values takes, specials included: NaN, infinities
/// (inf - inf is NaN), -0 sums and values whose sum order decides the rounding. Host devices only: a GPU kernel
/// may fuse the multiply-adds. (On the embedded device a transposed view is a dense copy, so there the explicit
/// values below are what checks the loop.)
fn mat4_f32_is_the_direct_loop<D: Device>() {
    let noise = random::<f32, Rank2<4, 4>, Cpu>(21).to_array();
    let special = [
        [f32::NAN, 1.0, 2.0, 3.0],
        [f32::INFINITY, f32::NEG_INFINITY, 0.0, 1.0],
        [-0.0, -0.0, -0.0, -0.0],
        [1.0, 1e-8, -1.0, 1e-8], // 1 + 1e-8 rounds to 1: only `q` order leaves 1e-8
    ];
    let b = random::<f32, Rank2<4, 4>, D>(22);
    let ones = Tensor::<f32, Rank2<4, 4>, D>::ones();
    let bits =
        |t: Tensor<f32, Rank2<4, 4>, D>| t.to_vec().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for a in [noise, special] {
        let at: [[f32; 4]; 4] = core::array::from_fn(|i| core::array::from_fn(|j| a[j][i]));
        let (a, at) = (
            Tensor::<f32, _, D>::from_array(a),
            Tensor::<f32, _, D>::from_array(at),
        );
        for b in [&b, &ones] {
            assert_eq!(bits(a.matmul(b)), bits(at.t().matmul(b)));
        }
    }
    let c = Tensor::<f32, _, D>::from_array(special)
        .matmul(&ones)
        .to_array();
    assert!(c[0].iter().chain(&c[1]).all(|x| x.is_nan()), "{c:?}");
    assert!(
        c[2].iter().all(|x| *x == 0.0 && x.is_sign_negative()),
        "{c:?}"
    );
    assert_eq!(c[3], [1e-8; 4]);
}

#[test]
fn cpu_matmul_4x4_f32_is_the_direct_loop() {
    mat4_f32_is_the_direct_loop::<Cpu>();
}

device_tests! {
    matmul_every_form_every_dtype => every_dtype;
    matmul_known_values_and_runtime_dims => known_values_and_runtime_dims;
}

embedded_tests! {
    matmul_4x4_f32_is_the_direct_loop => mat4_f32_is_the_direct_loop;
    matmul_every_form_every_dtype => every_dtype;
}

/// Both CUDA paths: every form and dtype again through the library's own kernels (the `cuda` variants above take
/// cuBLAS wherever it can read the layouts), and which path each kind of layout takes.
#[cfg(feature = "cuda")]
mod cuda_paths {
    use super::*;
    use typed_tensor::device::{Cuda, MatmulBackend};

    fn gpu() -> bool {
        Cuda::init()
            .map_err(|e| eprintln!("skipped a CUDA matmul path test: {e}"))
            .is_ok()
    }

    #[test]
    fn every_form_every_dtype_through_the_kernels() {
        if gpu() {
            Cuda::with_matmul_backend(MatmulBackend::Kernels, every_dtype::<Cuda>);
        }
    }

    fn paths_agree<T: FloatDType>() {
        // Products of at least 2^20 multiply-adds: the size cuBLAS takes.
        const B: usize = 3;
        const M: usize = 128;
        const K: usize = 96;
        const N: usize = 136;
        let a: Tensor<T, Rank3<B, M, K>, Cuda> = random(31);
        let b: Tensor<T, Rank2<K, N>, Cuda> = random(32); // broadcast over the batch: stride 0
        let want = {
            let (va, vb) = (values(&a.to_vec()), values(&b.to_vec()));
            let vb: Vec<f64> = (0..B).flat_map(|_| vb.iter().copied()).collect();
            reference(&va, &vb, B, M, K, N)
        };
        let kernels = Cuda::with_matmul_backend(MatmulBackend::Kernels, || a.matmul(&b));
        assert_eq!(Cuda::last_matmul_backend(), Some(MatmulBackend::Kernels));
        let default = a.matmul(&b);
        let expect = match Cuda::cublas_version() {
            Ok(_) => MatmulBackend::Cublas,
            Err(e) => {
                eprintln!("cuBLAS is not used, so both runs took the kernels: {e}");
                MatmulBackend::Kernels
            }
        };
        assert_eq!(Cuda::last_matmul_backend(), Some(expect));
        check("kernels", &kernels.to_vec(), &want, K);
        check("default path", &default.to_vec(), &want, K);

        // Transposed operands are passed transposed, not copied, and still reach cuBLAS.
        let at: Tensor<T, Rank2<K, M>, Cuda> = random(33);
        let bt: Tensor<T, Rank2<N, K>, Cuda> = random(34);
        let want_t = reference(
            &values(&at.t().to_vec()),
            &values(&bt.t().to_vec()),
            1,
            M,
            K,
            N,
        );
        let product = at.t().matmul(&bt.t());
        assert_eq!(Cuda::last_matmul_backend(), Some(expect));
        check("a.t() x b.t()", &product.to_vec(), &want_t, K);

        // A matrix whose rows repeat one row (stride 0) has no cuBLAS description: the kernels take it.
        let row: Tensor<T, Rank1<K>, Cuda> = random(35);
        let rows = row.broadcast::<Rank2<M, K>>();
        let want_r = reference(&values(&rows.to_vec()), &values(&b.to_vec()), 1, M, K, N);
        let product = rows.matmul(&b);
        assert_eq!(Cuda::last_matmul_backend(), Some(MatmulBackend::Kernels));
        check("broadcast rows x b", &product.to_vec(), &want_r, K);

        // A small product stays with the kernels (cuBLAS's host time per call would exceed its GPU time).
        let small = a.narrow::<Axis<1>, 0, 8>().matmul(&b);
        assert_eq!(Cuda::last_matmul_backend(), Some(MatmulBackend::Kernels));
        let want_small: Vec<f64> = (0..B)
            .flat_map(|p| want[p * M * N..][..8 * N].iter().copied())
            .collect();
        check("small", &small.to_vec(), &want_small, K);
    }

    #[test]
    fn cublas_and_the_kernels_agree_and_each_layout_takes_its_path() {
        if gpu() {
            paths_agree::<f32>();
            paths_agree::<f64>();
            paths_agree::<f16>();
            paths_agree::<bf16>();
        }
    }
}

/// An empty batch against a single matrix on either side gives an empty batch (a shared matrix's batch of 1 must
/// not win over 0), and a product too large to allocate is `Error::OutOfMemory` from `try_matmul` (and a panic
/// with that message from `matmul`), never an abort.
#[test]
fn empty_batches_and_products_too_large_to_allocate() {
    let empty =
        Tensor::<f32, (usize, Const<3>, Const<8>), Cpu>::zeros_with_shape((0, Const, Const));
    let w = Tensor::<f32, Rank2<8, 5>, Cpu>::ones();
    assert_eq!(empty.matmul(&w).dims().to_vec(), [0, 3, 5]);
    let rhs = Tensor::<f32, (usize, Const<8>, Const<5>), Cpu>::zeros_with_shape((0, Const, Const));
    let lhs = Tensor::<f32, Rank2<3, 8>, Cpu>::ones();
    assert_eq!(lhs.matmul(&rhs).dims().to_vec(), [0, 3, 5]);
    // (2^44, 4, 0) x (0, 12): no elements in, 2^44 x 48 out (3 PB).
    let x =
        Tensor::<f32, (usize, Const<4>, Const<0>), Cpu>::zeros_with_shape((1 << 44, Const, Const));
    let w = Tensor::<f32, Rank2<0, 12>, Cpu>::zeros();
    let err = x.try_matmul(&w).unwrap_err();
    assert!(
        matches!(err, Error::OutOfMemory { op: "matmul", .. }),
        "{err}"
    );
    let message = panic_message(|| x.matmul(&w));
    assert!(message.contains("matmul: out of memory"), "{message}");
}
