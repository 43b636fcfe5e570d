//! The embedded device: every tensor is a dense array of its static shape, held by value, with no heap.
//!
//! The first part of this file needs no heap from the crate: `.ci/run` also runs it with the crate built without
//! features (`cargo test --no-default-features --test embedded`), which is the embedded configuration. The
//! `against_cpu` part (with `alloc`) checks that the embedded device's heap-free loops give the CPU's bits.

use typed_tensor::prelude::*;
use typed_tensor::tensor::{Conv, Pool2d};

type E = Embedded;

/// `|got - want| <= 1e-6 (1 + |want|)` elementwise.
fn close<const N: usize>(got: [f32; N], want: [f32; N]) -> bool {
    got.iter()
        .zip(&want)
        .all(|(g, w)| (g - w).abs() <= 1e-6 * (1.0 + w.abs()))
}

#[test]
fn a_tensor_is_its_array() {
    use core::mem::size_of;
    assert_eq!(size_of::<Tensor<f32, Rank2<4, 4>, E>>(), 64);
    assert_eq!(size_of::<Tensor<f64, Rank0, E>>(), 8);
    assert_eq!(size_of::<Tensor<u8, Rank1<3>, E>>(), 3);
    assert_eq!(size_of::<Tensor<f16, Rank4<1, 2, 3, 4>, E>>(), 48);
    let t = Tensor::<f32, _, E>::from_array([[1., 2.], [3., 4.]]);
    assert_eq!(t.as_array(), &[[1., 2.], [3., 4.]]);
    assert_eq!(t.storage().as_slice(), &[1., 2., 3., 4.]);
    // A clone is a copy, and writing one leaves the other alone.
    let mut u = t.clone();
    u += 1.0;
    assert_eq!(
        (t.to_array(), u.to_array()),
        ([[1., 2.], [3., 4.]], [[2., 3.], [4., 5.]])
    );
}

// A dense layer whose parameters are in the binary.
static W: Tensor<f32, Rank2<3, 2>, E> = Tensor::from_array_const([[1., -1.], [0.5, 2.], [-3., 0.]]);
static B: Tensor<f32, Rank1<3>, E> = Tensor::from_array_const([0.1, 0.2, 0.3]);

#[test]
fn static_weights_run_a_layer() {
    let x = Tensor::<f32, _, E>::from_array([[1., 2.], [3., -1.]]);
    let y = (&x.matmul(&W.t()) + &B).relu();
    // By hand: W x0 + b = [-0.9, 4.7, -2.7] and W x1 + b = [4.1, -0.3, -8.7], then relu.
    let [y0, y1] = y.to_array();
    assert!(
        close(y0, [0., 4.7, 0.]) && close(y1, [4.1, 0., 0.]),
        "{y0:?} {y1:?}"
    );
    // W's transpose was a copy: the static is unchanged.
    assert_eq!(W.to_array(), [[1., -1.], [0.5, 2.], [-3., 0.]]);
}

#[test]
fn views_reductions_and_joins() {
    let a = Tensor::<f32, _, E>::from_array([[1., 2., 3.], [4., 5., 6.]]);
    assert_eq!(a.t().to_array(), [[1., 4.], [2., 5.], [3., 6.]]);
    assert_eq!(a.narrow::<Axis<1>, 1, 2>().to_array(), [[2., 3.], [5., 6.]]);
    assert_eq!(a.i(1).to_array(), [4., 5., 6.]);
    assert_eq!(a.i((1, 2)).to_scalar(), 6.);
    let b: Tensor<f32, Rank3<2, 2, 3>, E> = a.broadcast();
    assert_eq!(b.i(1).to_array(), a.to_array());
    let r: Tensor<f32, Rank1<6>, E> = a.t().reshape();
    assert_eq!(r.to_array(), [1., 4., 2., 5., 3., 6.]);

    assert_eq!(a.sum::<Axis<1>>().to_array(), [6., 15.]);
    assert_eq!(a.max::<Axis<0>>().to_array(), [4., 5., 6.]);
    assert_eq!(a.argmax::<Axis<1>>().to_array(), [2, 2]);
    assert_eq!(a.mean_all().to_scalar(), 3.5);
    assert_eq!(a.var_population::<Axis<1>>().to_array(), [2. / 3., 2. / 3.]);
    assert_eq!(
        Tensor::<f16, Rank1<4096>, E>::ones().sum_all().to_scalar(),
        f16::from_f32(4096.)
    );

    let c: Tensor<f32, Rank2<4, 3>, E> = a.cat::<Axis<0>, 4, _>(&a);
    assert_eq!(c.i(3).to_array(), [4., 5., 6.]);
    let s: Tensor<f32, Rank3<2, 2, 3>, E> = Tensor::stack::<Axis<0>, 2>(&[a.clone(), a.clone()]);
    assert_eq!(s.to_array(), [a.to_array(); 2]);
    let [top, bottom] = a.split::<Axis<0>, 1, 2>();
    assert_eq!(
        (top.to_array(), bottom.to_array()),
        ([[1., 2., 3.]], [[4., 5., 6.]])
    );
    assert_eq!(
        a.roll::<Axis<1>>(1).to_array(),
        [[3., 1., 2.], [6., 4., 5.]]
    );
    assert_eq!(
        a.roll::<Axis<1>>(-4).to_array(),
        [[2., 3., 1.], [5., 6., 4.]]
    );
    let p: Tensor<f32, Rank2<2, 5>, E> = a.pad::<Axis<1>, 1, 1, 5>();
    assert_eq!(p.to_array(), [[0., 1., 2., 3., 0.], [0., 4., 5., 6., 0.]]);
}

#[test]
fn matmul_softmax_conv_and_pool() {
    // A product wider than the unrolled static path (N = 20 > 16) takes the direct loop.
    let a = Tensor::<f64, _, E>::from_array([[1., 2.], [3., 4.]]);
    let mut row = [0.; 20];
    for (j, r) in row.iter_mut().enumerate() {
        *r = j as f64;
    }
    let b = Tensor::<f64, _, E>::from_array([row, [1.; 20]]);
    let [p0, p1] = a.matmul(&b).to_array();
    for (j, (&x0, &x1)) in p0.iter().zip(&p1).enumerate() {
        assert_eq!((x0, x1), (j as f64 + 2., 3. * j as f64 + 4.));
    }

    let x = Tensor::<f32, _, E>::from_array([[1000., 1000.], [0., 2f32.ln()]]);
    let sm = x.softmax::<Axis<1>>().to_array();
    assert!(
        close(sm[0], [0.5, 0.5]) && close(sm[1], [1. / 3., 2. / 3.]),
        "{sm:?}"
    );

    // A 4x4 image: a 2x2 box filter (stride 2), max and average pooling.
    let img = Tensor::<f32, Rank4<1, 1, 4, 4>, E>::from_array([[[
        [1., 2., 3., 4.],
        [5., 6., 7., 8.],
        [9., 10., 11., 12.],
        [13., 14., 15., 16.],
    ]]]);
    let ones = Tensor::<f32, Rank4<1, 1, 2, 2>, E>::ones();
    let conv: Tensor<f32, Rank4<1, 1, 2, 2>, E> = img.conv2d(&ones, Conv::<2, 0, 1, 1>);
    assert_eq!(conv.to_array(), [[[[14., 22.], [46., 54.]]]]);
    let max: Tensor<f32, Rank4<1, 1, 2, 2>, E> = img.max_pool2d(Pool2d::<2, 2, 0>);
    assert_eq!(max.to_array(), [[[[6., 8.], [14., 16.]]]]);
    let avg: Tensor<f32, Rank4<1, 1, 2, 2>, E> = img.avg_pool2d(Pool2d::<2, 2, 0>);
    assert_eq!(avg.to_array(), [[[[3.5, 5.5], [11.5, 13.5]]]]);
    // 'Same' padding: the centre of a 3x3 box sums all nine neighbours.
    let box3 = Tensor::<f32, Rank4<1, 1, 3, 3>, E>::ones();
    let same: Tensor<f32, Rank4<1, 1, 4, 4>, E> = img.conv2d(&box3, Conv::<1, 1, 1, 1>);
    assert_eq!(same.i((0, 0, 1, 1)).to_scalar(), 54.);
    assert_eq!(same.i((0, 0, 0, 0)).to_scalar(), 14.);
}

#[test]
fn prints_without_a_heap() {
    let a = Tensor::<f32, _, E>::from_array([[1., 2.5], [-3., 4.]]);
    let want = "tensor([[ 1.0000,  2.5000],\n        [-3.0000,  4.0000]], shape=[2, 2], dtype=f32, device=embedded)";
    assert_eq!(format!("{a}"), want);
    assert_eq!(format!("{a:?}"), "Tensor[[2, 2], f32, embedded]");
    // arange, flip and the seeded generators need no heap either.
    let r: Tensor<u8, Rank2<2, 3>, E> = Tensor::arange();
    assert_eq!(r.flip::<Axis<1>>().to_array(), [[2, 1, 0], [5, 4, 3]]);
    let u: Tensor<f64, Rank1<64>, E> = Tensor::rand(3);
    assert!(u.to_array().iter().all(|&x| (0.0..1.0).contains(&x)));
    let n: Tensor<f32, Rank1<64>, E> = Tensor::randn(3);
    assert!(n.to_array().iter().any(|&x| x < 0.0) && n.to_array().iter().any(|&x| x > 0.0));
}

#[test]
fn runtime_data_errors_are_errors() {
    let table = Tensor::<f32, _, E>::from_array([[1., 2.], [3., 4.]]);
    let ids = Tensor::<u32, _, E>::from_array([1, 2]);
    let err = table.try_index_select::<Axis<0>, u32, _>(&ids).unwrap_err();
    assert_eq!(
        err,
        Error::IndexOutOfRange {
            op: "index_select",
            axis: 0,
            index: 2,
            size: 2
        }
    );
    assert!(table.try_i(2).is_err());
    assert!(Tensor::<f32, Rank2<2, 2>, E>::from_slice(&[1., 2., 3.]).is_err());
}

/// `io::write_static`'s output for the tensors `statics()` builds, committed and compiled in (regenerate with
/// `UPDATE_STATICS=1 cargo test --test embedded`).
mod generated {
    use typed_tensor::prelude::*;
    include!("data/embedded_statics.rs");
}

/// Tensors of every dtype with the values a round trip through text can lose: NaN payloads, -0, subnormals,
/// extremes.
#[allow(clippy::type_complexity)]
fn statics() -> (
    Tensor<f32, Rank2<2, 4>, E>,
    Tensor<f64, Rank0, E>,
    Tensor<f16, Rank3<1, 2, 2>, E>,
    Tensor<bf16, Rank1<3>, E>,
    Tensor<u8, Rank1<2>, E>,
    Tensor<u32, Rank1<2>, E>,
    Tensor<i64, Rank2<2, 1>, E>,
) {
    (
        Tensor::from_array([
            [0.1, -0.0, f32::NAN, f32::from_bits(0x7f80_0001)],
            [1e-40, f32::MAX, f32::NEG_INFINITY, 3.0],
        ]),
        Tensor::from_array(-2.5e300),
        Tensor::from_array([[[f16::from_f32(0.1), f16::NAN], [f16::NEG_ZERO, f16::MAX]]]),
        Tensor::from_array([bf16::from_f32(-1.5), bf16::INFINITY, bf16::MIN_POSITIVE]),
        Tensor::from_array([0, 255]),
        Tensor::from_array([7, u32::MAX]),
        Tensor::from_array([[i64::MIN], [-3]]),
    )
}

#[test]
fn rust_statics_read_back_to_the_same_bits() {
    use typed_tensor::io::write_static;
    let (f, d, h, b, u, w, i) = statics();
    let mut text = String::new();
    write_static(&mut text, "F32", &f).unwrap();
    write_static(&mut text, "F64", &d).unwrap();
    write_static(&mut text, "F16", &h).unwrap();
    write_static(&mut text, "BF16", &b).unwrap();
    write_static(&mut text, "U8", &u).unwrap();
    write_static(&mut text, "U32", &w).unwrap();
    write_static(&mut text, "I64", &i).unwrap();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/embedded_statics.rs"
    );
    if std::env::var_os("UPDATE_STATICS").is_some() {
        std::fs::write(path, &text).unwrap();
    }
    assert_eq!(text, include_str!("data/embedded_statics.rs"));
    // The compiled statics hold exactly the tensors' bits.
    let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(generated::F32.as_array().as_flattened()),
        bits(f.as_array().as_flattened())
    );
    assert_eq!(
        generated::F64.to_scalar().to_bits(),
        d.to_scalar().to_bits()
    );
    let half_bits = |x: &[f16]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        half_bits(generated::F16.as_array()[0].as_flattened()),
        half_bits(h.as_array()[0].as_flattened())
    );
    assert_eq!(
        generated::BF16.as_array().map(bf16::to_bits),
        b.as_array().map(bf16::to_bits)
    );
    assert_eq!(
        (
            generated::U8.to_array(),
            generated::U32.to_array(),
            generated::I64.to_array()
        ),
        (u.to_array(), w.to_array(), i.to_array())
    );
}

/// The embedded device's heap-free loops against the CPU's kernels, on the same random data.
#[cfg(feature = "alloc")]
mod against_cpu {
    use super::E;
    use typed_tensor::ops::AlongAxis;
    use typed_tensor::prelude::*;
    use typed_tensor::shape::{HasAxis, ReduceShape};

    fn data<T: WithDType>(n: usize, seed: u64) -> Vec<T> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                T::from_f64((s >> 11) as f64 / (1u64 << 53) as f64 * 8.0 - 4.0)
            })
            .collect()
    }

    fn bits<T: WithDType>(v: &[T]) -> Vec<u64> {
        v.iter().map(|x| x.to_f64().to_bits()).collect()
    }

    fn pair<T: WithDType, S: ConstShape>(seed: u64) -> (Tensor<T, S, Cpu>, Tensor<T, S, E>) {
        let v = data::<T>(S::NUMEL, seed);
        (
            Tensor::from_slice(&v).unwrap(),
            Tensor::from_slice(&v).unwrap(),
        )
    }

    /// `op` along axis `A`, on any device.
    fn along<T: FloatDType, S: HasAxis<A>, D: Device, A>(
        t: &Tensor<T, S, D>,
        op: AlongAxis,
    ) -> Tensor<T, S, D> {
        match op {
            AlongAxis::Softmax => t.softmax::<A>(),
            AlongAxis::LogSoftmax => t.log_softmax::<A>(),
            AlongAxis::LayerNorm { eps } => t.layer_norm::<A>(eps),
            AlongAxis::RmsNorm { eps } => t.rms_norm::<A>(eps),
        }
    }

    /// Softmax and the norms run the one lane algorithm over strided lanes without scratch on the embedded device
    /// and over accumulator rows on the CPU (its inline path for a tiny tensor, its kernel otherwise): the same
    /// bits, on both axes, with lanes longer than the log-softmax's 256-element blocks.
    fn lanes<T: FloatDType, S>(seed: u64)
    where
        S: ConstShape + HasAxis<Axis<0>> + HasAxis<Axis<1>>,
    {
        let (c, e) = pair::<T, S>(seed);
        for op in [
            AlongAxis::Softmax,
            AlongAxis::LogSoftmax,
            AlongAxis::LayerNorm { eps: 1e-5 },
            AlongAxis::RmsNorm { eps: 1e-6 },
        ] {
            let what = format!("{op:?} {:?} {:?}", T::DTYPE, c.dims());
            let (c0, e0) = (
                along::<_, _, _, Axis<0>>(&c, op),
                along::<_, _, _, Axis<0>>(&e, op),
            );
            assert_eq!(bits(&c0.to_vec()), bits(&e0.to_vec()), "{what} axis 0");
            let (c1, e1) = (
                along::<_, _, _, Axis<1>>(&c, op),
                along::<_, _, _, Axis<1>>(&e, op),
            );
            assert_eq!(bits(&c1.to_vec()), bits(&e1.to_vec()), "{what} axis 1");
        }
    }

    #[test]
    fn softmax_and_norms_match_the_cpu_bit_for_bit() {
        lanes::<f32, Rank2<2, 4>>(1);
        lanes::<f32, Rank2<5, 40>>(2);
        lanes::<f32, Rank2<3, 300>>(3);
        lanes::<f64, Rank2<5, 40>>(4);
        lanes::<f16, Rank2<5, 300>>(5);
        lanes::<bf16, Rank2<2, 4>>(6);
        lanes::<bf16, Rank2<5, 40>>(7);
    }

    /// Reductions fold each output in index order on the embedded device; the CPU adds rows into accumulators
    /// when the reduced axis is not the innermost one (a column sum). Both add in the same order: the same bits.
    fn reductions<T: WithDType, S>(seed: u64)
    where
        S: ConstShape + ReduceShape<Axis<0>> + ReduceShape<Axis<1>>,
    {
        let (c, e) = pair::<T, S>(seed);
        let what = format!("{:?} {:?}", T::DTYPE, c.dims());
        assert_eq!(
            bits(&c.sum::<Axis<0>>().to_vec()),
            bits(&e.sum::<Axis<0>>().to_vec()),
            "{what} sum 0"
        );
        assert_eq!(
            bits(&c.sum::<Axis<1>>().to_vec()),
            bits(&e.sum::<Axis<1>>().to_vec()),
            "{what} sum 1"
        );
        assert_eq!(
            bits(&c.max::<Axis<0>>().to_vec()),
            bits(&e.max::<Axis<0>>().to_vec()),
            "{what} max 0"
        );
        assert_eq!(
            bits(&c.prod::<Axis<1>>().to_vec()),
            bits(&e.prod::<Axis<1>>().to_vec()),
            "{what} prod 1"
        );
        assert_eq!(
            c.argmin::<Axis<0>>().to_vec(),
            e.argmin::<Axis<0>>().to_vec(),
            "{what} argmin 0"
        );
        assert_eq!(
            bits(&[c.sum_all().to_scalar()]),
            bits(&[e.sum_all().to_scalar()]),
            "{what} sum_all"
        );
    }

    #[test]
    fn reductions_match_the_cpu_bit_for_bit() {
        reductions::<f32, Rank2<7, 33>>(11);
        reductions::<f32, Rank2<2, 4>>(12);
        reductions::<f16, Rank2<9, 20>>(13);
        reductions::<f64, Rank2<40, 3>>(14);
        reductions::<i64, Rank2<6, 5>>(15);
    }

    /// One model function, two devices: a two-layer MLP on random weights.
    fn mlp<D: Device>(
        x: &Tensor<f32, Rank2<8, 64>, D>,
        w1: &Tensor<f32, Rank2<32, 64>, D>,
        b1: &Tensor<f32, Rank1<32>, D>,
        w2: &Tensor<f32, Rank2<10, 32>, D>,
    ) -> Tensor<f32, Rank2<8, 10>, D> {
        let h = (&x.matmul(&w1.t()) + b1).relu();
        h.matmul(&w2.t()).log_softmax::<Axis<1>>()
    }

    #[test]
    fn one_model_function_runs_on_both_devices() {
        let (x, xe) = pair::<f32, Rank2<8, 64>>(21);
        let (w1, w1e) = pair::<f32, Rank2<32, 64>>(22);
        let (b1, b1e) = pair::<f32, Rank1<32>>(23);
        let (w2, w2e) = pair::<f32, Rank2<10, 32>>(24);
        let want = mlp(&x, &w1, &b1, &w2).to_vec();
        let got = mlp(&xe, &w1e, &b1e, &w2e).to_vec();
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "{g} vs {w}");
        }
        // And across devices: the embedded result copied to the CPU is the same tensor.
        let moved: Tensor<f32, Rank2<8, 10>, Cpu> = mlp(&xe, &w1e, &b1e, &w2e).to_device().unwrap();
        assert_eq!(moved.to_vec(), got);
    }
}
