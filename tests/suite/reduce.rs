//! Reductions against naive f64 references, over every axis set of strided (5, 7) views and a rank-3 tensor,
//! for every dtype each reduction supports.

use crate::common::*;
use typed_tensor::prelude::*;
use typed_tensor::shape::ReduceShape;

/// Reduces `values` (row-major over `dims`) over the `reduced` axes with `f`, which sees each output's elements
/// in row-major order.
fn reference<X: Copy, R>(
    values: &[X],
    dims: &[usize],
    reduced: &[bool],
    f: impl Fn(&[X]) -> R,
) -> Vec<R> {
    let rank = dims.len();
    let mut groups: std::collections::BTreeMap<Vec<usize>, Vec<X>> = Default::default();
    for (flat, &x) in values.iter().enumerate() {
        let mut rest = flat;
        let mut idx = vec![0; rank];
        for ax in (0..rank).rev() {
            idx[ax] = rest % dims[ax];
            rest /= dims[ax];
        }
        let key: Vec<usize> = (0..rank).filter(|&a| !reduced[a]).map(|a| idx[a]).collect();
        groups.entry(key).or_default().push(x);
    }
    groups.values().map(|g| f(g)).collect()
}

fn assert_reduced<T: WithDType>(what: &str, got: &[T], want: &[f64], scale: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let tol = tolerance::<T>() * 4.0;
    for (i, ((g, w), s)) in got.iter().zip(want).zip(scale).enumerate() {
        let g = g.to_f64();
        let ok = if T::DTYPE.is_int() {
            g == *w
        } else {
            (g - w).abs() <= tol * (s + 1e-6)
        };
        assert!(ok, "{what} [{}]: output {i}: got {g}, want {w}", T::DTYPE);
    }
}

fn wrap<T: WithDType>(x: i128) -> f64 {
    T::from_i64(x as i64).to_f64()
}

/// sum, prod, max, min, argmax, argmin over `Axes` of every view kind.
fn all_dtype_reductions<T: WithDType, D: Device, Axes>(lo: f64, hi: f64)
where
    Mat: ReduceShape<Axes>,
{
    let reduced = <Mat as ReduceShape<Axes>>::REDUCED;
    let int = T::DTYPE.is_int();
    for v in views::<T, D>(41, lo, hi) {
        let what = |op: &str| format!("{op} over {:?} of {} view", &reduced[..2], v.kind);
        let xs: Vec<f64> = v.expected.iter().map(|x| x.to_f64()).collect();
        let ints: Vec<i64> = v.expected.iter().map(|x| x.to_i64()).collect();
        let dims = [M, N];
        let abs_sum = reference(&xs, &dims, &reduced, |g| {
            g.iter().map(|x| x.abs()).sum::<f64>()
        });
        let abs_max = reference(&xs, &dims, &reduced, |g| {
            g.iter().fold(0.0f64, |a, x| a.max(x.abs()))
        });

        let want = if int {
            reference(&ints, &dims, &reduced, |g| {
                wrap::<T>(g.iter().map(|&x| x as i128).sum())
            })
        } else {
            reference(&xs, &dims, &reduced, |g| g.iter().sum())
        };
        assert_reduced(
            &what("sum"),
            &v.tensor.sum::<Axes>().to_vec(),
            &want,
            &abs_sum,
        );
        assert_eq!(
            v.tensor.sum_keepdim::<Axes>().to_vec(),
            v.tensor.sum::<Axes>().to_vec()
        );

        let want = if int {
            reference(&ints, &dims, &reduced, |g| {
                wrap::<T>(g.iter().fold(1i64, |a, &x| a.wrapping_mul(x)) as i128)
            })
        } else {
            reference(&xs, &dims, &reduced, |g| g.iter().product())
        };
        let prod_scale: Vec<f64> = want.iter().map(|w| w.abs() * 8.0).collect();
        assert_reduced(
            &what("prod"),
            &v.tensor.prod::<Axes>().to_vec(),
            &want,
            &prod_scale,
        );

        let max = reference(&xs, &dims, &reduced, |g| {
            g.iter().cloned().fold(f64::MIN, f64::max)
        });
        assert_reduced(
            &what("max"),
            &v.tensor.max::<Axes>().to_vec(),
            &max,
            &abs_max,
        );
        let min = reference(&xs, &dims, &reduced, |g| {
            g.iter().cloned().fold(f64::MAX, f64::min)
        });
        assert_reduced(
            &what("min"),
            &v.tensor.min::<Axes>().to_vec(),
            &min,
            &abs_max,
        );

        let argmax = reference(&xs, &dims, &reduced, |g| {
            (0..g.len()).fold(0, |b, i| if g[i] > g[b] { i } else { b }) as u32
        });
        assert_eq!(
            v.tensor.argmax::<Axes>().to_vec(),
            argmax,
            "{}",
            what("argmax")
        );
        let argmin = reference(&xs, &dims, &reduced, |g| {
            (0..g.len()).fold(0, |b, i| if g[i] < g[b] { i } else { b }) as u32
        });
        assert_eq!(
            v.tensor.argmin::<Axes>().to_vec(),
            argmin,
            "{}",
            what("argmin")
        );
        // The `_last` forms: a later tie wins.
        let argmax_last = reference(&xs, &dims, &reduced, |g| {
            (0..g.len()).fold(0, |b, i| if g[i] >= g[b] { i } else { b }) as u32
        });
        let got = v.tensor.argmax_last::<Axes>().to_vec();
        assert_eq!(got, argmax_last, "{}", what("argmax_last"));
        let argmin_last = reference(&xs, &dims, &reduced, |g| {
            (0..g.len()).fold(0, |b, i| if g[i] <= g[b] { i } else { b }) as u32
        });
        let got = v.tensor.argmin_last::<Axes>().to_vec();
        assert_eq!(got, argmin_last, "{}", what("argmin_last"));
    }
}

/// mean, var (both corrections), logsumexp, norm over `Axes` of every view kind.
fn float_reductions<T: FloatDType, D: Device, Axes>()
where
    Mat: ReduceShape<Axes>,
{
    let reduced = <Mat as ReduceShape<Axes>>::REDUCED;
    for v in views::<T, D>(43, -3.0, 3.0) {
        let what = |op: &str| format!("{op} over {:?} of {} view", &reduced[..2], v.kind);
        let xs: Vec<f64> = v.expected.iter().map(|x| x.to_f64()).collect();
        let dims = [M, N];
        let abs_mean = reference(&xs, &dims, &reduced, |g| {
            g.iter().map(|x| x.abs()).sum::<f64>() / g.len() as f64
        });
        let mean = |g: &[f64]| g.iter().sum::<f64>() / g.len() as f64;
        let var = |g: &[f64], c: usize| {
            g.iter().map(|x| (x - mean(g)).powi(2)).sum::<f64>() / (g.len() - c) as f64
        };

        let want = reference(&xs, &dims, &reduced, mean);
        assert_reduced(
            &what("mean"),
            &v.tensor.mean::<Axes>().to_vec(),
            &want,
            &abs_mean,
        );
        let sq_scale = reference(&xs, &dims, &reduced, |g| {
            g.iter().map(|x| x * x).sum::<f64>() / g.len() as f64
        });
        for (c, got) in [
            (1, v.tensor.var::<Axes>()),
            (0, v.tensor.var_population::<Axes>()),
        ] {
            let want = reference(&xs, &dims, &reduced, |g| var(g, c));
            assert_reduced(
                &what(&format!("var (correction {c})")),
                &got.to_vec(),
                &want,
                &sq_scale,
            );
        }
        let want = reference(&xs, &dims, &reduced, |g| {
            let m = g.iter().cloned().fold(f64::MIN, f64::max);
            m + g.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
        });
        let lse_scale: Vec<f64> = want.iter().map(|w| w.abs() + 1.0).collect();
        assert_reduced(
            &what("logsumexp"),
            &v.tensor.logsumexp::<Axes>().to_vec(),
            &want,
            &lse_scale,
        );
        let want = reference(&xs, &dims, &reduced, |g| {
            g.iter().map(|x| x * x).sum::<f64>().sqrt()
        });
        assert_reduced(
            &what("norm"),
            &v.tensor.norm::<Axes>().to_vec(),
            &want,
            &want,
        );
    }
}

fn reductions_for<T: WithDType, D: Device>(lo: f64, hi: f64) {
    all_dtype_reductions::<T, D, Axis<0>>(lo, hi);
    all_dtype_reductions::<T, D, Axis<1>>(lo, hi);
    all_dtype_reductions::<T, D, (Axis<0>, Axis<1>)>(lo, hi);
}

fn float_reductions_for<T: FloatDType, D: Device>() {
    float_reductions::<T, D, Axis<0>>();
    float_reductions::<T, D, Axis<1>>();
    float_reductions::<T, D, (Axis<0>, Axis<1>)>();
}

fn every_dtype<D: Device>() {
    // Products of 35 integers wrap; sums of u8 wrap too: both are checked against wrapping references.
    reductions_for::<u8, D>(0.0, 256.0);
    reductions_for::<i8, D>(-128.0, 128.0);
    reductions_for::<u32, D>(0.0, 4.0e9);
    reductions_for::<i32, D>(-2.1e9, 2.1e9);
    reductions_for::<i64, D>(-3.0e18, 3.0e18);
    // Floats near 1 in magnitude keep 35-element products finite.
    reductions_for::<f16, D>(0.7, 1.4);
    reductions_for::<bf16, D>(0.7, 1.4);
    reductions_for::<f32, D>(-1.4, 1.4);
    reductions_for::<f64, D>(-1.4, 1.4);
    float_reductions_for::<f16, D>();
    float_reductions_for::<bf16, D>();
    float_reductions_for::<f32, D>();
    float_reductions_for::<f64, D>();
}

/// count_nonzero, any, all over each axis set of a (5, 7) tensor with zeros, contiguous and transposed, for
/// every dtype; std against the square root of var; NaN counts as non-zero; empty axes.
fn truth_reductions_and_std<D: Device>() {
    fn for_dtype<T: WithDType, D: Device>() {
        let pattern = |i: usize| T::from_f64(((i * 5 + i / 7) % 3) as f64);
        let dense =
            Tensor::<T, Rank2<M, N>, D>::from_vec((0..M * N).map(pattern).collect()).unwrap();
        let flipped = Tensor::<T, Rank2<N, M>, D>::from_vec((0..M * N).map(pattern).collect())
            .unwrap()
            .t();
        for (kind, t) in [("contiguous", dense), ("transposed", flipped)] {
            let xs: Vec<f64> = t.to_vec().iter().map(|x| x.to_f64()).collect();
            let count = |reduced: &[bool]| {
                reference(&xs, &[M, N], reduced, |g| {
                    g.iter().filter(|&&x| x != 0.0).count() as i64
                })
            };
            let any = |c: &[i64]| c.iter().map(|&c| (c > 0) as u8).collect::<Vec<u8>>();
            let all = |c: &[i64], n: i64| c.iter().map(|&c| (c == n) as u8).collect::<Vec<u8>>();
            let what = format!("{kind} [{}]", T::DTYPE);
            let c0 = count(&[true, false]);
            assert_eq!(t.count_nonzero::<Axis<0>>().to_vec(), c0, "{what}");
            assert_eq!(t.any::<Axis<0>>().to_vec(), any(&c0), "{what}");
            assert_eq!(t.all::<Axis<0>>().to_vec(), all(&c0, M as i64), "{what}");
            let c1 = count(&[false, true]);
            assert_eq!(t.count_nonzero::<Axis<1>>().to_vec(), c1, "{what}");
            assert_eq!(t.any::<Axis<1>>().to_vec(), any(&c1), "{what}");
            assert_eq!(t.all::<Axis<1>>().to_vec(), all(&c1, N as i64), "{what}");
            let total = count(&[true, true])[0];
            assert_eq!(t.count_nonzero_all().to_scalar(), total, "{what}");
            assert_eq!(t.any_all().to_scalar(), 1, "{what}");
            assert_eq!(t.all_all().to_scalar(), 0, "{what}");
        }
        let ones = Tensor::<T, Rank2<2, 3>, D>::ones();
        assert_eq!(ones.all_all().to_scalar(), 1);
        assert_eq!(ones.zeros_like().any::<Axis<1>>().to_array(), [0, 0]);
    }
    for_dtype::<u8, D>();
    for_dtype::<u32, D>();
    for_dtype::<i8, D>();
    for_dtype::<i32, D>();
    for_dtype::<i64, D>();
    for_dtype::<f16, D>();
    for_dtype::<bf16, D>();
    for_dtype::<f32, D>();
    for_dtype::<f64, D>();
    // NaN is non-zero; an empty axis: count 0, any false, all true.
    let x = Tensor::<f32, _, D>::from_array([f32::NAN, 0.0]);
    assert_eq!(x.count_nonzero_all().to_scalar(), 1);
    let empty = Tensor::<f32, Rank2<2, 0>, D>::zeros();
    assert_eq!(empty.count_nonzero::<Axis<1>>().to_array(), [0, 0]);
    assert_eq!(empty.any::<Axis<1>>().to_array(), [0, 0]);
    assert_eq!(empty.all::<Axis<1>>().to_array(), [1, 1]);
    assert_eq!(
        (empty.any_all().to_scalar(), empty.all_all().to_scalar()),
        (0, 1)
    );
    let none = Tensor::<f32, Rank2<0, 3>, D>::zeros();
    assert_eq!(none.any::<Axis<1>>().to_vec(), Vec::<u8>::new());
    assert_eq!(none.all::<Axis<0>>().to_array(), [1, 1, 1]);
    // NaN is true for both.
    assert_eq!((x.any_all().to_scalar(), x.all_all().to_scalar()), (1, 0));
    let nan = Tensor::<f32, _, D>::from_array([[f32::NAN, -1.0], [0.0, f32::NAN]]);
    assert_eq!(nan.all::<Axis<1>>().to_array(), [1, 0]);
    assert_eq!(nan.any::<Axis<0>>().to_array(), [1, 1]);
    // std is the square root of var, both corrections, every view.
    for v in views::<f64, D>(47, -3.0, 3.0) {
        let sqrt =
            |t: Tensor<f64, Rank1<N>, D>| t.to_vec().iter().map(|x| x.sqrt()).collect::<Vec<_>>();
        assert_eq!(
            v.tensor.std::<Axis<0>>().to_vec(),
            sqrt(v.tensor.var::<Axis<0>>()),
            "{}",
            v.kind
        );
        assert_eq!(
            v.tensor.std_population::<Axis<0>>().to_vec(),
            sqrt(v.tensor.var_population::<Axis<0>>()),
            "{}",
            v.kind
        );
    }
    let x = Tensor::<f32, _, D>::from_array([[1., 3.], [2., 2.]]);
    assert_eq!(x.std_keepdim::<Axis<1>>().to_array(), [[2f32.sqrt()], [0.]]);
    assert_eq!(x.std_population_all().to_scalar(), 0.5f32.sqrt());
}

fn rank3_and_keepdim<D: Device>() {
    let x: Tensor<f64, Rank3<2, 3, 4>, D> = Tensor::arange();
    let v: Vec<f64> = (0..24).map(|i| i as f64).collect();
    let dims = [2, 3, 4];
    let s: Tensor<f64, Rank2<2, 4>, D> = x.sum::<Axis<1>>();
    assert_eq!(
        s.to_vec(),
        reference(&v, &dims, &[false, true, false], |g| g.iter().sum::<f64>())
    );
    let s: Tensor<f64, Rank1<3>, D> = x.sum::<(Axis<0>, Axis<2>)>();
    assert_eq!(s.to_vec(), [60., 92., 124.]);
    let k: Tensor<f64, Rank3<1, 3, 1>, D> = x.sum_keepdim::<(Axis<0>, Axis<2>)>();
    assert_eq!(k.to_vec(), [60., 92., 124.]);
    let all: Tensor<f64, Rank0, D> = x.sum_all();
    assert_eq!(all.to_scalar(), 276.0);
    // Over a permuted view: the reduced axis is the memory-innermost one after permuting.
    let p = x.permute::<(Axis<2>, Axis<0>, Axis<1>)>(); // (4, 2, 3)
    let pv = p.to_vec();
    let m: Tensor<f64, Rank2<4, 2>, D> = p.max::<Axis<2>>();
    assert_eq!(
        m.to_vec(),
        reference(&pv, &[4, 2, 3], &[false, false, true], |g| g
            .iter()
            .cloned()
            .fold(f64::MIN, f64::max))
    );
    // argmax over two axes gives the flattened position within them.
    let a: Tensor<u32, Rank1<4>, D> = p.argmax::<(Axis<1>, Axis<2>)>();
    assert_eq!(a.to_vec(), [5, 5, 5, 5]);
    assert_eq!(x.argmin_all().to_scalar(), 0);
    assert_eq!(x.argmax_all().to_scalar(), 23);
    // keepdim results broadcast back against the input: x - max_keepdim.
    let shifted = &x - &x.max_keepdim::<Axis<2>>().broadcast::<Rank3<2, 3, 4>>();
    assert_eq!(shifted.max_all().to_scalar(), 0.0);
}

#[inline(never)]
fn sixteen_million_ones_sum_exactly<D: Device>() {
    let big = Tensor::<f32, Rank1<{ 1 << 24 }>, D>::ones();
    assert_eq!(big.sum_all().to_scalar(), 16_777_216.0);
}

fn known_values_and_edge_cases<D: Device>() {
    // Accumulating in f32: 4096 f16 ones sum to 4096 (candle's f16 sum gives 2048).
    let ones = Tensor::<f16, Rank1<4096>, D>::ones();
    assert_eq!(ones.sum_all().to_scalar(), f16::from_f32(4096.0));
    assert_eq!(
        Tensor::<bf16, Rank1<4096>, D>::ones()
            .mean_all()
            .to_scalar(),
        bf16::ONE
    );
    // 16M f32 ones: exact thanks to the blocked accumulation (a 64 MB tensor: not on the embedded device, whose
    // tensors are arrays on the stack; in a function of its own, so that an unoptimised build does not reserve
    // its stack slot in this frame).
    if crate::common::views_share::<D>() {
        sixteen_million_ones_sum_exactly::<D>();
    }
    // NaN propagates through max/min and wins argmax/argmin; ties pick the first position.
    let x = Tensor::<f32, _, D>::from_array([[1.0, f32::NAN, 3.0], [2.0, 7.0, 7.0]]);
    assert!(x.max::<Axis<1>>().to_vec()[0].is_nan());
    assert_eq!(x.max::<Axis<1>>().to_vec()[1], 7.0);
    assert!(x.min_all().to_scalar().is_nan());
    assert_eq!(x.argmax::<Axis<1>>().to_vec(), [1, 1]);
    assert_eq!(x.argmin::<Axis<1>>().to_vec(), [1, 0]);
    // The `_last` forms: the later of tied extremes, the last NaN.
    let y = Tensor::<f32, _, D>::from_array([[f32::NAN, 1.0, f32::NAN], [2.0, 7.0, 7.0]]);
    assert_eq!(y.argmax_last::<Axis<1>>().to_vec(), [2, 2]);
    assert_eq!(y.argmin_last::<Axis<1>>().to_vec(), [2, 0]);
    assert_eq!(y.argmax::<Axis<1>>().to_vec(), [0, 1]);
    assert_eq!(y.argmax_last_keepdim::<Axis<0>>().to_vec(), [0, 1, 0]);
    // A long lane of one value: the first and the last position, whichever parts the lane is cut into.
    let same = Tensor::<i32, Rank1<100_003>, D>::full(4);
    assert_eq!(same.argmax_all().to_scalar(), 0);
    assert_eq!(same.argmax_last_all().to_scalar(), 100_002);
    assert_eq!(same.argmin_last_all().to_scalar(), 100_002);
    // logsumexp does not overflow, and handles infinities.
    let l =
        Tensor::<f32, _, D>::from_array([[1000.0, 1000.0], [f32::NEG_INFINITY, f32::NEG_INFINITY]]);
    let lse = l.logsumexp::<Axis<1>>().to_vec();
    assert!((lse[0] - (1000.0 + 2f32.ln())).abs() < 1e-3, "{lse:?}");
    assert_eq!(lse[1], f32::NEG_INFINITY);
    // Variance of one element: unbiased is NaN (0/0), population is 0, as in PyTorch.
    let one = Tensor::<f64, Rank1<1>, D>::full(3.0);
    assert!(one.var_all().to_scalar().is_nan());
    assert_eq!(one.var_population_all().to_scalar(), 0.0);
    // Known values (NumPy): np.var([1, 2, 3, 4], ddof=1) = 1.6666..., np.linalg.norm([3, 4]) = 5.
    let v = Tensor::<f64, _, D>::from_array([1.0, 2.0, 3.0, 4.0]);
    assert!((v.var_all().to_scalar() - 5.0 / 3.0).abs() < 1e-15);
    assert_eq!(
        Tensor::<f32, _, D>::from_array([3.0, 4.0])
            .norm_all()
            .to_scalar(),
        5.0
    );
    // Integer sums wrap in the element type.
    let bytes = Tensor::<u8, _, D>::from_array([200, 100]);
    assert_eq!(bytes.sum_all().to_scalar(), 44);
}

/// Reductions over an empty runtime-sized axis: max, min, argmax and argmin have no value there and are an
/// error (`try_` forms) or a panic with its message; the others give their identity or PyTorch's NaN.
fn empty_axes<D: Device>() {
    // (2, 0): two empty lanes along axis 1; axis 0 is not empty.
    let e = Tensor::<f32, (Const<2>, usize), D>::zeros_with_shape((Const, 0));
    let empty = |axis| Error::EmptyAxis { op: "max", axis };
    assert_eq!(e.try_max::<Axis<1>>().unwrap_err(), empty(1));
    assert_eq!(e.try_max_keepdim::<Axis<1>>().unwrap_err(), empty(1));
    assert_eq!(e.try_max_all().unwrap_err(), empty(1));
    assert_eq!(
        e.try_min::<Axis<1>>().unwrap_err().to_string(),
        "min: axis 1 has size 0, and the op has no value over zero elements"
    );
    assert!(matches!(
        e.try_argmax_last::<Axis<1>>(),
        Err(Error::EmptyAxis {
            op: "argmax_last",
            axis: 1
        })
    ));
    assert!(matches!(
        e.try_argmax::<Axis<1>>(),
        Err(Error::EmptyAxis {
            op: "argmax",
            axis: 1
        })
    ));
    assert!(matches!(
        e.try_argmin_keepdim::<Axis<1>>(),
        Err(Error::EmptyAxis {
            op: "argmin",
            axis: 1
        })
    ));
    assert!(matches!(
        e.try_argmin_all(),
        Err(Error::EmptyAxis {
            op: "argmin",
            axis: 1
        })
    ));
    assert_eq!(panic_message(|| e.max::<Axis<1>>()), empty(1).to_string());
    assert_eq!(
        panic_message(|| e.argmax_all()),
        "argmax: axis 1 has size 0, and the op has no value over zero elements"
    );
    // Reducing the non-empty axis of an empty tensor is fine: the result is empty too.
    assert_eq!(e.try_max::<Axis<0>>().unwrap().to_vec(), Vec::<f32>::new());
    assert_eq!(e.argmin::<Axis<0>>().dims().to_vec(), [0]);
    // The reductions that have a value over nothing (docs/ops.md, "Policies": "Empty tensors").
    assert_eq!(e.sum::<Axis<1>>().to_vec(), [0., 0.]);
    assert_eq!(e.prod::<Axis<1>>().to_vec(), [1., 1.]);
    assert_eq!(e.norm::<Axis<1>>().to_vec(), [0., 0.]);
    assert_eq!(e.logsumexp::<Axis<1>>().to_vec(), [f32::NEG_INFINITY; 2]);
    for nan in [
        e.mean::<Axis<1>>(),
        e.var::<Axis<1>>(),
        e.var_population::<Axis<1>>(),
    ] {
        assert!(nan.to_vec().iter().all(|x| x.is_nan()), "{nan}");
    }
    assert_eq!(e.sum_all().to_scalar(), 0.0);
    assert!(e.mean_all().to_scalar().is_nan());
    let ints = Tensor::<i64, (usize,), D>::zeros_with_shape((0,));
    assert_eq!(ints.sum_all().to_scalar(), 0);
    assert_eq!(ints.prod_all().to_scalar(), 1);
    assert!(ints.try_min_all().is_err());
    // A non-empty runtime axis works as ever.
    let x = Tensor::<f32, (usize,), D>::from_vec_with_shape((3,), vec![1., 5., 2.]).unwrap();
    assert_eq!(x.try_max_all().unwrap().to_scalar(), 5.0);
    assert_eq!(x.try_argmax_all().unwrap().to_scalar(), 1);
}

/// Inputs above the CPU's threading threshold (split along a kept axis, or along a reduced one with partial
/// states merged), contiguous and transposed, against f64 references; argmax ties across part boundaries.
fn large_inputs<D: Device>() {
    const R: usize = 64;
    const C: usize = 4099; // parts of the 64 rows and of the 4099 columns do not line up with anything
    let x: Tensor<f64, Rank2<R, C>, D> = random(51);
    let v = x.to_vec();
    let dims = [R, C];
    let sum = |g: &[f64]| g.iter().sum::<f64>();
    let max = |g: &[f64]| g.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    for (what, got, reduced) in [
        ("sum rows", x.sum::<Axis<1>>().to_vec(), [false, true]),
        ("sum cols", x.sum::<Axis<0>>().to_vec(), [true, false]),
    ] {
        let want = reference(&v, &dims, &reduced, sum);
        let scale = reference(&v, &dims, &reduced, |g| g.iter().map(|x| x.abs()).sum());
        assert_reduced(what, &got, &want, &scale);
    }
    let want = reference(&v, &dims, &[true, true], sum);
    assert_reduced(
        "sum all",
        &[x.sum_all().to_scalar()],
        &want,
        &[v.len() as f64],
    );
    // The transposed view: its first kept axis is the (strided) column axis.
    let xt: Tensor<f64, Rank2<C, R>, D> = x.t();
    let want = reference(&v, &dims, &[true, false], max);
    assert_reduced(
        "max of transposed rows",
        &xt.max::<Axis<1>>().to_vec(),
        &want,
        &want,
    );
    assert_eq!(xt.max_all().to_scalar(), max(&v));

    // argmax over all elements: the maximum appears three times, the first in the middle of the data.
    let mut w = vec![0.0f32; R * C];
    for k in [R * C / 2 + 3, R * C / 2 + 4, R * C - 1] {
        w[k] = 5.0;
    }
    let t = Tensor::<f32, Rank2<R, C>, D>::from_vec(w.clone()).unwrap();
    assert_eq!(t.argmax_all().to_scalar() as usize, R * C / 2 + 3);
    let ones = Tensor::<f32, Rank1<{ R * C }>, D>::ones();
    assert_eq!(
        ones.argmin_all().to_scalar(),
        0,
        "ties pick the first position"
    );
    // Column argmax on the transposed view (the rows walk with a strided innermost axis).
    let tt: Tensor<f32, Rank2<C, R>, D> = t.t();
    let want: Vec<u32> = (0..C)
        .map(|c| (0..R).find(|&r| w[r * C + c] == 5.0).unwrap_or(0) as u32)
        .collect();
    assert_eq!(tt.argmax::<Axis<1>>().to_vec(), want);
}

device_tests! {
    reductions_over_empty_axes => empty_axes;
    reductions_every_dtype_every_view => every_dtype;
    reductions_rank3_keepdim_and_permuted => rank3_and_keepdim;
    reductions_known_values_and_edge_cases => known_values_and_edge_cases;
    reductions_of_large_inputs_split_across_threads => large_inputs;
    truth_reductions_and_std => truth_reductions_and_std;
}

/// Of equal values max and min keep the first (-0 before +0 gives -0, +0 before -0 gives +0), on rows shorter
/// than the CPU kernel's 16 lanes (folded one by one) and longer ones (folded in lanes, then joined).
#[test]
fn cpu_max_min_keep_the_first_of_equal_zeros() {
    fn rows<const L: usize>() {
        let mut v = vec![-1f32; 2 * L];
        (v[0], v[L - 1]) = (-0.0, 0.0);
        (v[L], v[2 * L - 1]) = (0.0, -0.0);
        let x = Tensor::<f32, Rank2<2, L>, Cpu>::from_vec(v.clone()).unwrap();
        let bits = |t: Vec<f32>| t.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(x.max::<Axis<1>>().to_vec()),
            bits(vec![-0.0, 0.0]),
            "max, rows of {L}"
        );
        let y = Tensor::<f32, Rank2<2, L>, Cpu>::from_vec(v.iter().map(|e| -e).collect()).unwrap();
        // Negated: -1 becomes 1 and the zeros swap signs, so min sees +0 first in row 0 and -0 first in row 1.
        assert_eq!(
            bits(y.min::<Axis<1>>().to_vec()),
            bits(vec![0.0, -0.0]),
            "min, rows of {L}"
        );
    }
    rows::<5>();
    rows::<20>();
}

embedded_tests! {
    reductions_every_dtype_every_view => every_dtype;
    reductions_rank3_keepdim_and_permuted => rank3_and_keepdim;
    reductions_known_values_and_edge_cases => known_values_and_edge_cases;
    truth_reductions_and_std => truth_reductions_and_std;
}
