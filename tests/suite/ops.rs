//! Elementwise ops against naive f64 references, on contiguous and strided views, for every dtype they support,
//! on every device.

use crate::common::*;
use typed_tensor::dtype::cast;
use typed_tensor::prelude::*;

type UnaryCase<T, D> = (
    &'static str,
    fn(&Tensor<T, Mat, D>) -> Tensor<T, Mat, D>,
    fn(f64) -> f64,
    (f64, f64),
);

type BinFn<T, D> = fn(&Tensor<T, Mat, D>, &Tensor<T, Mat, D>) -> Tensor<T, Mat, D>;
type CmpFn<T, D> = fn(&Tensor<T, Mat, D>, &Tensor<T, Mat, D>) -> Tensor<u8, Mat, D>;
type CmpCase<T, D> = (&'static str, CmpFn<T, D>, fn(f64, f64) -> bool);

fn gelu_tanh(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh())
}
fn erf(x: f64) -> f64 {
    let sqrt_pi = std::f64::consts::PI.sqrt();
    if x.abs() < 2.0 {
        // Maclaurin series: well conditioned below 2.
        let (mut sum, mut term, mut n) = (0.0f64, x, 0.0f64);
        while term.abs() > 1e-18 {
            sum += term / (2.0 * n + 1.0);
            n += 1.0;
            term *= -x * x / n;
        }
        sum * 2.0 / sqrt_pi
    } else {
        // Continued fraction for erfc, evaluated backwards: erfc(a) = e^-a^2 / (sqrt(pi) (a + 1/2 / (a + 1 / (a + ...)))).
        let a = x.abs();
        let mut k = a;
        for n in (1..200).rev() {
            k = a + (n as f64 / 2.0) / k;
        }
        let erfc = (-a * a).exp() / (sqrt_pi * k);
        (1.0 - erfc).copysign(x)
    }
}
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}
/// PyTorch's `torch.nn.SELU`, with its constants to the digits it documents them.
#[allow(clippy::excessive_precision)]
fn selu(x: f64) -> f64 {
    let (alpha, scale) = (
        1.6732632423543772848170429916717,
        1.0507009873554804934193349852946,
    );
    scale * if x > 0.0 { x } else { alpha * (x.exp() - 1.0) }
}

fn float_unary_cases<T: FloatDType, D: Device>() -> Vec<UnaryCase<T, D>> {
    vec![
        ("neg", |t| -t, |x| -x, (-4.0, 4.0)),
        ("abs", |t| t.abs(), f64::abs, (-4.0, 4.0)),
        ("sqr", |t| t.sqr(), |x| x * x, (-4.0, 4.0)),
        ("exp", |t| t.exp(), f64::exp, (-5.0, 5.0)),
        ("ln", |t| t.ln(), f64::ln, (0.05, 20.0)),
        ("log", |t| t.log(), f64::ln, (0.05, 20.0)),
        ("sqrt", |t| t.sqrt(), f64::sqrt, (0.0, 20.0)),
        ("recip", |t| t.recip(), |x| 1.0 / x, (0.25, 8.0)),
        ("sin", |t| t.sin(), f64::sin, (-6.0, 6.0)),
        ("cos", |t| t.cos(), f64::cos, (-6.0, 6.0)),
        ("tanh", |t| t.tanh(), f64::tanh, (-4.0, 4.0)),
        ("sigmoid", |t| t.sigmoid(), sigmoid, (-8.0, 8.0)),
        ("relu", |t| t.relu(), |x| x.max(0.0), (-4.0, 4.0)),
        ("gelu", |t| t.gelu(), gelu_tanh, (-4.0, 4.0)),
        (
            "gelu_erf",
            |t| t.gelu_erf(),
            |x| 0.5 * x * (1.0 + erf(x / 2f64.sqrt())),
            (-4.0, 4.0),
        ),
        ("silu", |t| t.silu(), |x| x * sigmoid(x), (-6.0, 6.0)),
        // Rounding and the rest of libm.
        ("floor", |t| t.floor(), f64::floor, (-4.0, 4.0)),
        ("ceil", |t| t.ceil(), f64::ceil, (-4.0, 4.0)),
        ("round", |t| t.round(), f64::round_ties_even, (-4.0, 4.0)),
        ("trunc", |t| t.trunc(), f64::trunc, (-4.0, 4.0)),
        (
            "sign",
            |t| t.sign(),
            |x| {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    x
                }
            },
            (-4.0, 4.0),
        ),
        ("log1p", |t| t.log1p(), f64::ln_1p, (-0.9, 4.0)),
        ("expm1", |t| t.expm1(), f64::exp_m1, (-4.0, 4.0)),
        ("log2", |t| t.log2(), f64::log2, (0.05, 20.0)),
        ("log10", |t| t.log10(), f64::log10, (0.05, 20.0)),
        ("exp2", |t| t.exp2(), f64::exp2, (-5.0, 5.0)),
        ("rsqrt", |t| t.rsqrt(), |x| 1.0 / x.sqrt(), (0.1, 20.0)),
        ("tan", |t| t.tan(), f64::tan, (-1.4, 1.4)),
        ("asin", |t| t.asin(), f64::asin, (-0.99, 0.99)),
        ("acos", |t| t.acos(), f64::acos, (-0.99, 0.99)),
        ("atan", |t| t.atan(), f64::atan, (-4.0, 4.0)),
        ("sinh", |t| t.sinh(), f64::sinh, (-4.0, 4.0)),
        ("cosh", |t| t.cosh(), f64::cosh, (-4.0, 4.0)),
        ("asinh", |t| t.asinh(), f64::asinh, (-4.0, 4.0)),
        ("acosh", |t| t.acosh(), f64::acosh, (1.01, 5.0)),
        ("atanh", |t| t.atanh(), f64::atanh, (-0.95, 0.95)),
        // The activations, with PyTorch's definitions written out directly.
        ("erf", |t| t.erf(), erf, (-3.0, 3.0)),
        ("erfc", |t| t.erfc(), |x| 1.0 - erf(x), (-3.0, 3.0)),
        (
            "softsign",
            |t| t.softsign(),
            |x| x / (1.0 + x.abs()),
            (-4.0, 4.0),
        ),
        ("relu6", |t| t.relu6(), |x| x.clamp(0.0, 6.0), (-2.0, 8.0)),
        (
            "hardtanh",
            |t| t.hardtanh(-1.0, 2.0),
            |x| x.clamp(-1.0, 2.0),
            (-4.0, 4.0),
        ),
        (
            "hardsigmoid",
            |t| t.hardsigmoid(),
            |x| (x + 3.0).clamp(0.0, 6.0) / 6.0,
            (-5.0, 5.0),
        ),
        (
            "hardswish",
            |t| t.hardswish(),
            |x| x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
            (-5.0, 5.0),
        ),
        (
            "mish",
            |t| t.mish(),
            |x| x * (1.0 + x.exp()).ln().tanh(),
            (-5.0, 5.0),
        ),
        (
            "log_sigmoid",
            |t| t.log_sigmoid(),
            |x| sigmoid(x).ln(),
            (-8.0, 8.0),
        ),
        ("selu", |t| t.selu(), selu, (-4.0, 4.0)),
        (
            "leaky_relu",
            |t| t.leaky_relu(0.125),
            |x| if x > 0.0 { x } else { 0.125 * x },
            (-4.0, 4.0),
        ),
        (
            "elu",
            |t| t.elu(1.5),
            |x| if x > 0.0 { x } else { 1.5 * (x.exp() - 1.0) },
            (-4.0, 4.0),
        ),
        (
            "celu",
            |t| t.celu(2.0),
            |x| x.max(0.0) + (2.0 * ((x / 2.0).exp() - 1.0)).min(0.0),
            (-4.0, 4.0),
        ),
        (
            "softplus",
            |t| t.softplus(2.0, 5.0),
            |x| {
                if 2.0 * x > 5.0 {
                    x
                } else {
                    (1.0 + (2.0 * x).exp()).ln() / 2.0
                }
            },
            (-4.0, 4.0),
        ),
        ("powf", |t| t.powf(2.5), |x| x.powf(2.5), (0.1, 4.0)),
        (
            "affine",
            |t| t.affine(1.5, -0.25),
            |x| x * 1.5 - 0.25,
            (-4.0, 4.0),
        ),
        (
            "clamp",
            |t| t.clamp(T::from_f64(-1.0), T::from_f64(2.0)),
            |x| x.clamp(-1.0, 2.0),
            (-4.0, 4.0),
        ),
        (
            "add_scalar",
            |t| t + T::from_f64(0.5),
            |x| x + 0.5,
            (-4.0, 4.0),
        ),
        (
            "sub_scalar",
            |t| t - T::from_f64(0.5),
            |x| x - 0.5,
            (-4.0, 4.0),
        ),
        (
            "mul_scalar",
            |t| t * T::from_f64(3.0),
            |x| x * 3.0,
            (-4.0, 4.0),
        ),
        (
            "div_scalar",
            |t| t / T::from_f64(2.0),
            |x| x / 2.0,
            (-4.0, 4.0),
        ),
    ]
}

fn float_unary<T: FloatDType, D: Device>() {
    for (name, op, reference, (lo, hi)) in float_unary_cases::<T, D>() {
        for v in views::<T, D>(7, lo, hi) {
            let got = op(&v.tensor).to_vec();
            // The reference sees the same (rounded) inputs the op saw.
            let want: Vec<f64> = v.expected.iter().map(|x| reference(x.to_f64())).collect();
            assert_close(&format!("{name} on {} view", v.kind), &got, &want);
        }
    }
}

fn float_unary_all<D: Device>() {
    float_unary::<f32, D>();
    float_unary::<f64, D>();
    float_unary::<f16, D>();
    float_unary::<bf16, D>();
}

/// Integer unary ops and scalar operands on random strided views: wrapping `sqr`, `clamp`, and for i64 `neg`/`abs`.
fn int_unary<T: WithDType, D: Device>(lo: f64, hi: f64) {
    let (clo, chi) = (
        T::from_f64(lo + (hi - lo) * 0.25),
        T::from_f64(lo + (hi - lo) * 0.75),
    );
    for v in views::<T, D>(31, lo, hi) {
        let x: Vec<i128> = v.expected.iter().map(|e| e.to_i64() as i128).collect();
        let wrap = |r: i128| T::from_i64(r as i64);
        let check = |name: &str, got: Vec<T>, want: Vec<T>| {
            assert_eq!(got, want, "{name} on {} view [{}]", v.kind, T::DTYPE)
        };
        check(
            "sqr",
            v.tensor.sqr().to_vec(),
            x.iter().map(|&a| wrap(a * a)).collect(),
        );
        let (l, h) = (clo.to_i64() as i128, chi.to_i64() as i128);
        check(
            "clamp",
            v.tensor.clamp(clo, chi).to_vec(),
            x.iter().map(|&a| wrap(a.clamp(l, h))).collect(),
        );
        let three = T::from_i64(3);
        check(
            "add_scalar",
            (&v.tensor + three).to_vec(),
            x.iter().map(|&a| wrap(a + 3)).collect(),
        );
        check(
            "mul_scalar",
            (&v.tensor * three).to_vec(),
            x.iter().map(|&a| wrap(a * 3)).collect(),
        );
        check(
            "div_scalar",
            (&v.tensor / three).to_vec(),
            x.iter().map(|&a| wrap(a / 3)).collect(),
        );
    }
}

fn int_unary_all<D: Device>() {
    int_unary::<u8, D>(0.0, 256.0);
    int_unary::<i8, D>(-128.0, 128.0);
    int_unary::<u32, D>(0.0, 4.0e9);
    int_unary::<i32, D>(-2.1e9, 2.1e9);
    int_unary::<i64, D>(-3.0e18, 3.0e18);
    for v in views::<i64, D>(32, -1.0e12, 1.0e12) {
        let want_neg: Vec<i64> = v.expected.iter().map(|&a| -a).collect();
        let want_abs: Vec<i64> = v.expected.iter().map(|&a| a.abs()).collect();
        assert_eq!((-&v.tensor).to_vec(), want_neg, "neg on {} view", v.kind);
        assert_eq!(v.tensor.abs().to_vec(), want_abs, "abs on {} view", v.kind);
    }
    // i8 and i32 over their whole range: the minimum negates and abs-es to itself (wrapping, as in PyTorch).
    for v in views::<i8, D>(33, -128.0, 128.0) {
        let want_neg: Vec<i8> = v.expected.iter().map(|&a| a.wrapping_neg()).collect();
        let want_abs: Vec<i8> = v.expected.iter().map(|&a| a.wrapping_abs()).collect();
        assert_eq!((-&v.tensor).to_vec(), want_neg, "i8 neg on {} view", v.kind);
        assert_eq!(
            v.tensor.abs().to_vec(),
            want_abs,
            "i8 abs on {} view",
            v.kind
        );
    }
    for v in views::<i32, D>(34, -2.2e9, 2.2e9) {
        let want_neg: Vec<i32> = v.expected.iter().map(|&a| a.wrapping_neg()).collect();
        let want_abs: Vec<i32> = v.expected.iter().map(|&a| a.wrapping_abs()).collect();
        assert_eq!(
            (-&v.tensor).to_vec(),
            want_neg,
            "i32 neg on {} view",
            v.kind
        );
        assert_eq!(
            v.tensor.abs().to_vec(),
            want_abs,
            "i32 abs on {} view",
            v.kind
        );
    }
    let minimum = Tensor::<i8, _, D>::from_array([i8::MIN, -1, 0, i8::MAX]);
    assert_eq!((-&minimum).to_vec(), [i8::MIN, 1, 0, -i8::MAX]);
    assert_eq!(minimum.abs().to_vec(), [i8::MIN, 1, 0, i8::MAX]);
}

/// The reference for a binary op: integers with wrapping i128 arithmetic, floats in f64.
fn reference_binary<T: WithDType>(op: &str, a: T, b: T) -> f64 {
    if T::DTYPE.is_int() {
        let (x, y) = (a.to_i64() as i128, b.to_i64() as i128);
        let r = match op {
            "add" => x + y,
            "sub" => x - y,
            "mul" => x * y,
            "div" => {
                if y == 0 {
                    0
                } else {
                    x / y
                }
            }
            "maximum" => x.max(y),
            "minimum" => x.min(y),
            _ => unreachable!(),
        };
        return T::from_i64(r as i64).to_f64();
    }
    let (x, y) = (a.to_f64(), b.to_f64());
    match op {
        "add" => x + y,
        "sub" => x - y,
        "mul" => x * y,
        "div" => x / y,
        "maximum" => x.max(y),
        "minimum" => x.min(y),
        _ => unreachable!(),
    }
}

fn binary<T: WithDType, D: Device>() {
    // Integers span their range around the wrap points; floats avoid dividing by ~0.
    let (lo, hi) = value_range::<T>((0.5, 8.0));
    let ops: [(&str, BinFn<T, D>); 6] = [
        ("add", |a, b| a + b),
        ("sub", |a, b| a - b),
        ("mul", |a, b| a * b),
        ("div", |a, b| a / b),
        ("maximum", |a, b| a.maximum(b)),
        ("minimum", |a, b| a.minimum(b)),
    ];
    let lhs = views::<T, D>(11, lo, hi);
    let rhs = views::<T, D>(12, lo, hi);
    for (name, op) in ops {
        for a in &lhs {
            for b in &rhs {
                let got = op(&a.tensor, &b.tensor).to_vec();
                let want: Vec<f64> = a
                    .expected
                    .iter()
                    .zip(&b.expected)
                    .map(|(&x, &y)| reference_binary(name, x, y))
                    .collect();
                assert_close(&format!("{name} on {} x {}", a.kind, b.kind), &got, &want);
            }
        }
    }
}

/// The float-only binary ops against f64, each on operands drawn where it is defined, over every pair of views.
fn float_binary<T: FloatDType, D: Device>() {
    type Case<T, D> = (
        &'static str,
        BinFn<T, D>,
        fn(f64, f64) -> f64,
        (f64, f64),
        (f64, f64),
    );
    let python_remainder = |a: f64, b: f64| a - (a / b).floor() * b;
    let cases: [Case<T, D>; 5] = [
        (
            "atan2",
            |a, b| a.atan2(b),
            f64::atan2,
            (-4.0, 4.0),
            (-4.0, 4.0),
        ),
        ("pow", |a, b| a.pow(b), f64::powf, (0.25, 3.0), (-2.0, 2.5)),
        (
            "fmod",
            |a, b| a.fmod(b),
            |a, b| a % b,
            (-8.0, 8.0),
            (0.5, 3.0),
        ),
        (
            "fmod, negative divisor",
            |a, b| a.fmod(b),
            |a, b| a % b,
            (-8.0, 8.0),
            (-3.0, -0.5),
        ),
        (
            "remainder",
            |a, b| a.remainder(b),
            python_remainder,
            (-8.0, 8.0),
            (-3.0, 3.0),
        ),
    ];
    for (name, op, reference, (alo, ahi), (blo, bhi)) in cases {
        let lhs = views::<T, D>(13, alo, ahi);
        let rhs = views::<T, D>(14, blo, bhi);
        for a in &lhs {
            for b in &rhs {
                let got = op(&a.tensor, &b.tensor).to_vec();
                let want: Vec<f64> = a
                    .expected
                    .iter()
                    .zip(&b.expected)
                    .map(|(&x, &y)| reference(x.to_f64(), y.to_f64()))
                    .collect();
                // A remainder is off by up to one rounding of `b` when it moves by `b` (tolerance scaled by 8).
                let tol_scale = if name.starts_with("remainder") {
                    8.0
                } else {
                    1.0
                };
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    let (g, tol) = (g.to_f64(), tol_scale * tolerance::<T>());
                    assert!(
                        (g - w).abs() <= tol * w.abs().max(1.0),
                        "{name} on {} x {} [{:?}] element {i}: got {g}, want {w}",
                        a.kind,
                        b.kind,
                        T::DTYPE
                    );
                }
            }
        }
    }
    // Known values: the two remainders' sign conventions, atan2 on the axes.
    let a = Tensor::<T, Rank1<4>, D>::from_array([-7.0, 7.0, -7.0, 7.0].map(T::from_f64));
    let b = Tensor::<T, Rank1<4>, D>::from_array([3.0, -3.0, -3.0, 3.0].map(T::from_f64));
    let v = |t: Tensor<T, Rank1<4>, D>| t.to_vec().iter().map(|x| x.to_f64()).collect::<Vec<_>>();
    assert_eq!(v(a.fmod(&b)), [-1.0, 1.0, -1.0, 1.0]);
    assert_eq!(v(a.remainder(&b)), [2.0, -2.0, -1.0, 1.0]);
    let y = Tensor::<T, Rank1<4>, D>::from_array([0.0, 1.0, 0.0, -1.0].map(T::from_f64));
    let x = Tensor::<T, Rank1<4>, D>::from_array([1.0, 0.0, -1.0, 0.0].map(T::from_f64));
    let want = [
        0.0,
        std::f64::consts::FRAC_PI_2,
        std::f64::consts::PI,
        -std::f64::consts::FRAC_PI_2,
    ];
    for (g, w) in v(y.atan2(&x)).iter().zip(want) {
        assert!(
            (g - w).abs() <= 2.0 * tolerance::<T>() * w.abs().max(1.0),
            "atan2: {g} vs {w}"
        );
    }
}

fn binary_all<D: Device>() {
    float_binary::<f32, D>();
    float_binary::<f64, D>();
    float_binary::<f16, D>();
    float_binary::<bf16, D>();
    binary::<u8, D>();
    binary::<i8, D>();
    binary::<u32, D>();
    binary::<i32, D>();
    binary::<i64, D>();
    binary::<f16, D>();
    binary::<bf16, D>();
    binary::<f32, D>();
    binary::<f64, D>();
}

fn suffix_broadcast<D: Device>() {
    let a = Tensor::<f32, _, D>::from_array([[1., 2., 3.], [4., 5., 6.]]);
    let b = Tensor::<f32, _, D>::from_array([10., 20., 30.]);
    assert_eq!((&a + &b).to_array(), [[11., 22., 33.], [14., 25., 36.]]);
    assert_eq!((&b - &a).to_array(), [[9., 18., 27.], [6., 15., 24.]]);
    let s = Tensor::<f32, Rank0, D>::full(2.0);
    assert_eq!((&a * &s).to_array(), [[2., 4., 6.], [8., 10., 12.]]);
    // Broadcast onto a transposed view.
    let at = Tensor::<f32, _, D>::from_array([[1., 4.], [2., 5.], [3., 6.]]).t();
    assert_eq!(
        (at / b.clone()).to_array(),
        [[0.1, 0.1, 0.1], [0.4, 0.25, 0.2]]
    );
    // Integer ops wrap and divide by zero to 0.
    let x = Tensor::<u8, _, D>::from_array([250, 7, 9]);
    let y = Tensor::<u8, _, D>::from_array([10, 0, 2]);
    assert_eq!((&x + &y).to_vec(), [4, 7, 11]);
    assert_eq!((&x / &y).to_vec(), [25, 0, 4]);
    assert_eq!((&y - &x).to_vec(), [16, 249, 249]);
    let m = Tensor::<i64, _, D>::from_array([i64::MIN, -7]);
    assert_eq!((-&m).to_vec(), [i64::MIN, 7]);
    assert_eq!(m.abs().to_vec(), [i64::MIN, 7]);
    assert_eq!((&m / -1).to_vec(), [i64::MIN, 7]);
    assert_eq!(m.clamp(-5, 5).sqr().to_vec(), [25, 25]);
}

fn comparisons<T: WithDType, D: Device>() {
    let lhs = views::<T, D>(21, 0.0, 4.0);
    let rhs = views::<T, D>(22, 0.0, 4.0);
    for a in &lhs {
        for b in &rhs {
            let cases: [CmpCase<T, D>; 6] = [
                ("eq", |a, b| a.eq(b), |x, y| x == y),
                ("ne", |a, b| a.ne(b), |x, y| x != y),
                ("lt", |a, b| a.lt(b), |x, y| x < y),
                ("le", |a, b| a.le(b), |x, y| x <= y),
                ("gt", |a, b| a.gt(b), |x, y| x > y),
                ("ge", |a, b| a.ge(b), |x, y| x >= y),
            ];
            for (name, op, reference) in cases {
                let got = op(&a.tensor, &b.tensor).to_vec();
                let want: Vec<u8> = a
                    .expected
                    .iter()
                    .zip(&b.expected)
                    .map(|(x, y)| reference(x.to_f64(), y.to_f64()) as u8)
                    .collect();
                assert_eq!(
                    got,
                    want,
                    "{name} on {} x {} [{}]",
                    a.kind,
                    b.kind,
                    T::DTYPE
                );
            }
            // where_cond picks from a and b by a mask that is itself strided.
            let mask = a.tensor.ge(&b.tensor);
            let mask_t = Tensor::<u8, Rank2<N, M>, D>::from_vec(mask.t().to_vec())
                .unwrap()
                .t();
            let got = mask_t.where_cond(&a.tensor, &b.tensor).to_vec();
            let want: Vec<T> = a
                .expected
                .iter()
                .zip(&b.expected)
                .map(|(&x, &y)| if x.to_f64() >= y.to_f64() { x } else { y })
                .collect();
            assert_eq!(
                got,
                want,
                "where_cond on {} x {} [{}]",
                a.kind,
                b.kind,
                T::DTYPE
            );
        }
    }
    // NaN is unequal to everything.
    if T::DTYPE.is_float() {
        let nan = Tensor::<T, Rank1<2>, D>::from_vec(vec![T::from_f64(f64::NAN), T::ONE]).unwrap();
        assert_eq!(nan.eq(&nan).to_vec(), [0, 1]);
        assert_eq!(nan.ne(&nan).to_vec(), [1, 0]);
    }
}

fn comparisons_all<D: Device>() {
    comparisons::<u8, D>();
    comparisons::<i8, D>();
    comparisons::<u32, D>();
    comparisons::<i32, D>();
    comparisons::<i64, D>();
    comparisons::<f16, D>();
    comparisons::<bf16, D>();
    comparisons::<f32, D>();
    comparisons::<f64, D>();
}

/// Values that exercise every cast rule: fractions, negatives, out-of-range, NaN, infinities, RNE ties.
const CAST_INPUTS: [f64; 16] = [
    0.0,
    1.5,
    -2.7,
    255.0,
    256.0,
    300.7,
    -1.0,
    65504.0,
    65520.0,
    2049.0,
    1e10,
    -1e19,
    1e-8,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
];

fn cast_from<T: WithDType, D: Device>() {
    let src: Vec<T> = CAST_INPUTS.iter().map(|&x| T::from_f64(x)).collect();
    // Strided source: the values sit in the second column of a (16, 2) buffer.
    let mut buf = Vec::new();
    for &x in &src {
        buf.push(T::ZERO);
        buf.push(x);
    }
    let t = Tensor::<T, Rank2<16, 2>, D>::from_vec(buf)
        .unwrap()
        .i((.., 1));
    fn check<T: WithDType, U: WithDType, D: Device>(t: &Tensor<T, Rank1<16>, D>, src: &[T]) {
        let got = t.to_dtype::<U>().to_vec();
        let want: Vec<U> = src.iter().map(|&x| cast::<T, U>(x)).collect();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let same = g == w || (g.to_f64().is_nan() && w.to_f64().is_nan());
            assert!(
                same,
                "cast {} -> {} of {}: got {g}, want {w}",
                T::DTYPE,
                U::DTYPE,
                src[i]
            );
        }
    }
    check::<T, u8, D>(&t, &src);
    check::<T, i8, D>(&t, &src);
    check::<T, u32, D>(&t, &src);
    check::<T, i32, D>(&t, &src);
    check::<T, i64, D>(&t, &src);
    check::<T, f16, D>(&t, &src);
    check::<T, bf16, D>(&t, &src);
    check::<T, f32, D>(&t, &src);
    check::<T, f64, D>(&t, &src);
}

fn casts<D: Device>() {
    cast_from::<u8, D>();
    cast_from::<i8, D>();
    cast_from::<u32, D>();
    cast_from::<i32, D>();
    cast_from::<i64, D>();
    cast_from::<f16, D>();
    cast_from::<bf16, D>();
    cast_from::<f32, D>();
    cast_from::<f64, D>();
    // Known results, independent of `cast`.
    let x = Tensor::<f32, _, D>::from_array([-1.5, 2.7, 300.0, f32::NAN]);
    assert_eq!(x.to_dtype::<u8>().to_vec(), [0, 2, 255, 0]);
    assert_eq!(x.to_dtype::<i64>().to_vec(), [-1, 2, 300, 0]);
    let y = Tensor::<i64, _, D>::from_array([-1, 256, 257]);
    assert_eq!(y.to_dtype::<u8>().to_vec(), [255, 0, 1]);
    assert_eq!(
        y.to_dtype::<bf16>().to_vec(),
        [
            bf16::from_f32(-1.0),
            bf16::from_f32(256.0),
            bf16::from_f32(256.0)
        ]
    );
    let z = Tensor::<f64, _, D>::from_array([2049.0, 2051.0, 1e6]);
    assert_eq!(
        z.to_dtype::<f16>().to_vec(),
        [f16::from_f32(2048.0), f16::from_f32(2052.0), f16::INFINITY]
    );
}

/// Tiny static tensors (elements within 64 bytes) in host memory skip the kernels for a loop of their own; a
/// strided view of the same values takes the kernel. Both must give the same bits, for every dtype.
type Tiny = Rank2<2, 2>;
type TinyOp<T, U, D> = fn(&Tensor<T, Tiny, D>, &Tensor<T, Tiny, D>) -> Tensor<U, Tiny, D>;
type TinyFn<T, D> = TinyOp<T, T, D>;
type TinyMask<T, D> = TinyOp<T, u8, D>;
/// A whole-tensor reduction of an `S` tensor.
type Reduction<T, U, S, D> = fn(&Tensor<T, S, D>) -> Tensor<U, (), D>;
/// A reduction as the tiny path (static shape) and the kernel (runtime shape) take it.
type ReductionPair<T, U, D> = (Reduction<T, U, Tiny, D>, Reduction<T, U, (usize, usize), D>);

/// The same values as a dense tensor and as a transposed (strided) view.
fn tiny_pair<T: WithDType, D: Device>(seed: u64, lo: f64, hi: f64) -> [Tensor<T, Tiny, D>; 2] {
    let v: Vec<T> = Rng::new(seed)
        .vec(4, lo, hi)
        .into_iter()
        .map(T::from_f64)
        .collect();
    let dense = Tensor::<T, Tiny, D>::from_vec(v.clone()).unwrap();
    let strided = Tensor::<T, Tiny, D>::from_vec(vec![v[0], v[2], v[1], v[3]])
        .unwrap()
        .t();
    assert!(dense.is_contiguous() && !strided.is_contiguous());
    [dense, strided]
}

fn tiny_matches_kernel<T: WithDType, D: Device>(extra: &[(&str, TinyFn<T, D>)]) {
    let (lo, hi) = value_range::<T>((0.5, 8.0));
    let [a, a_strided] = tiny_pair::<T, D>(21, lo, hi);
    let [b, b_strided] = tiny_pair::<T, D>(22, lo, hi);
    let common: [(&str, TinyFn<T, D>); 10] = [
        ("add", |a, b| a + b),
        ("where_cond", |a, b| a.lt(b).where_cond(a, b)),
        ("where_cond, constant mask", |a, b| a.ne(a).where_cond(a, b)),
        ("sub", |a, b| a - b),
        ("mul", |a, b| a * b),
        ("maximum", |a, b| a.maximum(b)),
        ("try_binary", |a, b| {
            a.try_binary(typed_tensor::ops::Mul, b).unwrap()
        }),
        ("sqr", |a, _| a.sqr()),
        ("scalar rhs mul", |a, _| a * T::from_f64(3.0)),
        ("scalar rhs sub", |a, _| a - T::from_f64(1.0)),
    ];
    for &(name, op) in common.iter().chain(extra) {
        check_tiny(name, op, [&a, &a_strided], [&b, &b_strided]);
    }
    // Comparisons of one static shape: u8 masks.
    let masks: [(&str, TinyMask<T, D>); 4] = [
        ("lt", |a, b| a.lt(b)),
        ("ge", |a, b| a.ge(b)),
        ("ne", |a, b| a.ne(b)),
        ("eq", |a, b| a.eq(&a.maximum(b))),
    ];
    for (name, op) in masks {
        check_tiny(name, op, [&a, &a_strided], [&b, &b_strided]);
    }
}

/// The same values as a tiny dense tensor, its transposed (strided) twin and a runtime-shaped dense copy.
#[allow(clippy::type_complexity)]
fn tiny_reduction_inputs<T: WithDType, D: Device>(
    seed: u64,
    lo: f64,
    hi: f64,
) -> ([Tensor<T, Tiny, D>; 2], Tensor<T, (usize, usize), D>) {
    let pair = tiny_pair::<T, D>(seed, lo, hi);
    let runtime = Tensor::from_vec_with_shape((2, 2), pair[0].to_vec()).unwrap();
    (pair, runtime)
}

/// A whole-tensor reduction of a tiny dense tensor (the tiny path) equals the kernel's on the same values in a
/// runtime-shaped dense tensor (one run folded from the op's initial state: the same bits), and, to rounding,
/// on a transposed view (the kernel walks it element by element).
fn check_reduction<T: WithDType, U: WithDType, D: Device>(
    name: &str,
    [a, a_strided]: &[Tensor<T, Tiny, D>; 2],
    runtime: &Tensor<T, (usize, usize), D>,
    (tiny, kernel): ReductionPair<T, U, D>,
) {
    let got = tiny(a).to_scalar();
    let what = format!("{name} of {:?} {:?}", T::DTYPE, a.to_vec());
    assert_eq!(got, kernel(runtime).to_scalar(), "{what}");
    let (x, y) = (got.to_f64(), tiny(a_strided).to_scalar().to_f64());
    assert!(
        (x - y).abs() <= 1e-2 * x.abs().max(1.0),
        "{what}: strided {y}"
    );
}

fn tiny_reductions_match_the_kernel<T: WithDType, D: Device>(float: bool) {
    let (lo, hi) = value_range::<T>((-4.0, 4.0));
    let (pair, runtime) = tiny_reduction_inputs::<T, D>(23, lo, hi);
    let values: [(&str, ReductionPair<T, T, D>); 4] = [
        ("sum_all", (|t| t.sum_all(), |t| t.sum_all())),
        ("prod_all", (|t| t.prod_all(), |t| t.prod_all())),
        ("max_all", (|t| t.max_all(), |t| t.max_all())),
        ("min_all", (|t| t.min_all(), |t| t.min_all())),
    ];
    for (name, ops) in values {
        check_reduction(name, &pair, &runtime, ops);
    }
    let positions: [(&str, ReductionPair<T, u32, D>); 2] = [
        ("argmax_all", (|t| t.argmax_all(), |t| t.argmax_all())),
        ("argmin_all", (|t| t.argmin_all(), |t| t.argmin_all())),
    ];
    for (name, ops) in positions {
        check_reduction(name, &pair, &runtime, ops);
    }
    // The naive sum, for the dtypes whose sum of four such values is exact enough to compare.
    if float {
        let want: f64 = pair[0].to_vec().iter().map(|x| x.to_f64()).sum();
        let got = pair[0].sum_all().to_scalar().to_f64();
        assert!(
            (got - want).abs() <= 0.05 * want.abs().max(1.0),
            "sum_all of {:?}: {got} vs {want}",
            T::DTYPE
        );
    }
}

fn tiny_float_reductions_match_the_kernel<T: FloatDType, D: Device>() {
    tiny_reductions_match_the_kernel::<T, D>(true);
    let (pair, runtime) = tiny_reduction_inputs::<T, D>(24, -4.0, 4.0);
    let ops: [(&str, ReductionPair<T, T, D>); 5] = [
        ("mean_all", (|t| t.mean_all(), |t| t.mean_all())),
        ("var_all", (|t| t.var_all(), |t| t.var_all())),
        (
            "var_population_all",
            (|t| t.var_population_all(), |t| t.var_population_all()),
        ),
        (
            "logsumexp_all",
            (|t| t.logsumexp_all(), |t| t.logsumexp_all()),
        ),
        ("norm_all", (|t| t.norm_all(), |t| t.norm_all())),
    ];
    for (name, ops) in ops {
        check_reduction(name, &pair, &runtime, ops);
    }
    let mean = pair[0].to_vec().iter().map(|x| x.to_f64()).sum::<f64>() / 4.0;
    let got = pair[0].mean_all().to_scalar().to_f64();
    assert!(
        (got - mean).abs() <= 0.02 * mean.abs().max(1.0),
        "mean_all of {:?}: {got} vs {mean}",
        T::DTYPE
    );
}

fn tiny_reductions_all<D: Device>() {
    tiny_reductions_match_the_kernel::<u8, D>(false);
    tiny_reductions_match_the_kernel::<u32, D>(false);
    tiny_reductions_match_the_kernel::<i8, D>(false);
    tiny_reductions_match_the_kernel::<i32, D>(false);
    tiny_reductions_match_the_kernel::<i64, D>(false);
    tiny_float_reductions_match_the_kernel::<f16, D>();
    tiny_float_reductions_match_the_kernel::<bf16, D>();
    tiny_float_reductions_match_the_kernel::<f32, D>();
    tiny_float_reductions_match_the_kernel::<f64, D>();
}

/// The range to draw test values of `T` from: integer ranges wide enough to wrap their sums and products, and
/// `float` for the float types.
fn value_range<T: WithDType>(float: (f64, f64)) -> (f64, f64) {
    match T::DTYPE {
        DType::U8 => (0.0, 256.0),
        DType::I8 => (-128.0, 128.0),
        DType::U32 => (0.0, 4.0e9),
        DType::I32 => (-2.1e9, 2.1e9),
        DType::I64 => (-3.0e18, 3.0e18),
        _ => float,
    }
}

/// Values of `T` from [`value_range`] (floats in -4..4).
fn tiny_values<T: WithDType>(seed: u64, n: usize) -> Vec<T> {
    let (lo, hi) = value_range::<T>((-4.0, 4.0));
    Rng::new(seed)
        .vec(n, lo, hi)
        .into_iter()
        .map(T::from_f64)
        .collect()
}

/// `x.$op::<$axes>()` on a static tensor and on its runtime-shaped twin (the kernel) give the same bits.
macro_rules! same_as_kernel {
    ($x:expr, $twin:expr; $($op:ident::<$axes:ty>),* $(,)?) => {
        $(
            assert_eq!(
                $x.$op::<$axes>().to_vec(),
                $twin.$op::<$axes>().to_vec(),
                "{} over {} of {:?} {:?}",
                stringify!($op),
                stringify!($axes),
                T::DTYPE,
                $x.to_vec(),
            );
        )*
    };
}

/// Reductions over some axes of tiny static tensors (the tiny path: a walk with its accumulators on the stack)
/// give the same bits as the kernel on runtime-shaped twins: reduced axes that merge into one run (across a
/// size-1 axis), that stay separate runs, that lie across the innermost kept axis (the accumulate walk), and
/// index-tracking ops; sums also match a naive sum.
fn tiny_axis_reductions_match_the_kernel<T: WithDType, D: Device>() {
    let v = tiny_values::<T>(31, 12);
    // (2, 3, 2): 48 bytes of f32 (the tiny path); 96 of f64 and i64 (the kernel on both sides, as a control).
    let x = Tensor::<T, Rank3<2, 3, 2>, D>::from_vec(v.clone()).unwrap();
    let twin = Tensor::<T, (usize, usize, usize), D>::from_vec_with_shape((2, 3, 2), v).unwrap();
    same_as_kernel!(x, twin;
        sum::<Axis<0>>, sum::<Axis<1>>, sum::<Axis<2>>, sum::<(Axis<0>, Axis<2>)>,
        sum::<(Axis<1>, Axis<2>)>, sum_keepdim::<Axis<1>>, prod::<Axis<2>>, prod::<Axis<0>>,
        max::<Axis<1>>, max_keepdim::<Axis<2>>, min::<(Axis<0>, Axis<2>)>, argmax::<Axis<1>>,
        argmin::<Axis<2>>, argmax::<(Axis<0>, Axis<1>)>, argmin_keepdim::<Axis<0>>,
    );
    // (2, 1, 4): 64 bytes of f64 and i64; axes 0 and 2 merge into one run of 8 across the size-1 axis.
    let v = tiny_values::<T>(32, 8);
    let y = Tensor::<T, Rank3<2, 1, 4>, D>::from_vec(v.clone()).unwrap();
    let twin =
        Tensor::<T, (usize, usize, usize), D>::from_vec_with_shape((2, 1, 4), v.clone()).unwrap();
    same_as_kernel!(y, twin;
        sum::<(Axis<0>, Axis<2>)>, sum::<Axis<0>>, sum::<Axis<1>>, sum::<(Axis<0>, Axis<1>)>,
        max::<(Axis<0>, Axis<2>)>, argmax::<(Axis<0>, Axis<2>)>, argmin::<Axis<2>>, prod::<Axis<2>>,
        min_keepdim::<(Axis<1>, Axis<2>)>,
    );
    // A naive column sum (exact for the small integers and close for floats).
    let got = y.sum::<Axis<0>>().to_vec();
    for (k, g) in got.iter().enumerate() {
        let want = T::from_f64(v[k].to_f64() + v[4 + k].to_f64());
        // Integers wrap: compared to the kernel above.
        let close = T::DTYPE.is_int()
            || (g.to_f64() - want.to_f64()).abs() <= 1e-2 * want.to_f64().abs().max(1.0);
        assert!(close, "sum over axis 0 of {:?}: {g} vs {want}", T::DTYPE);
    }
}

/// The float reductions, softmax and the norms along an axis of tiny static tensors give the kernel's bits.
fn tiny_float_axis_ops_match_the_kernel<T: FloatDType, D: Device>() {
    tiny_axis_reductions_match_the_kernel::<T, D>();
    let v = tiny_values::<T>(33, 8);
    let x = Tensor::<T, Rank2<2, 4>, D>::from_vec(v.clone()).unwrap();
    let twin = Tensor::<T, (usize, usize), D>::from_vec_with_shape((2, 4), v.clone()).unwrap();
    same_as_kernel!(x, twin;
        mean::<Axis<1>>, mean::<Axis<0>>, var::<Axis<1>>, var_population::<Axis<0>>,
        logsumexp::<Axis<1>>, logsumexp_keepdim::<Axis<0>>, norm::<Axis<1>>,
        softmax::<Axis<0>>, softmax::<Axis<1>>, log_softmax::<Axis<0>>, log_softmax::<Axis<1>>,
    );
    for (a, b) in [
        (
            x.layer_norm::<Axis<1>>(1e-5),
            twin.layer_norm::<Axis<1>>(1e-5),
        ),
        (
            x.layer_norm::<Axis<0>>(1e-5),
            twin.layer_norm::<Axis<0>>(1e-5),
        ),
        (x.rms_norm::<Axis<1>>(1e-5), twin.rms_norm::<Axis<1>>(1e-5)),
    ] {
        assert_eq!(a.to_vec(), b.to_vec(), "norm of {:?}", T::DTYPE);
    }
    // A naive softmax of each row.
    let p = x.softmax::<Axis<1>>().to_vec();
    for r in 0..2 {
        let row: Vec<f64> = v[4 * r..4 * r + 4].iter().map(|x| x.to_f64()).collect();
        let m = row.iter().cloned().fold(f64::MIN, f64::max);
        let z: f64 = row.iter().map(|x| (x - m).exp()).sum();
        for c in 0..4 {
            let want = (row[c] - m).exp() / z;
            let got = p[4 * r + c].to_f64();
            assert!(
                (got - want).abs() <= 1e-2 * want,
                "softmax of {:?}: {got} vs {want}",
                T::DTYPE
            );
        }
    }
}

fn tiny_axis_ops_all<D: Device>() {
    tiny_axis_reductions_match_the_kernel::<u8, D>();
    tiny_axis_reductions_match_the_kernel::<u32, D>();
    tiny_axis_reductions_match_the_kernel::<i8, D>();
    tiny_axis_reductions_match_the_kernel::<i32, D>();
    tiny_axis_reductions_match_the_kernel::<i64, D>();
    tiny_float_axis_ops_match_the_kernel::<f16, D>();
    tiny_float_axis_ops_match_the_kernel::<bf16, D>();
    tiny_float_axis_ops_match_the_kernel::<f32, D>();
    tiny_float_axis_ops_match_the_kernel::<f64, D>();
}

/// `op` on the dense tiny operands (the tiny path) equals `op` on their strided twins (the kernels), and `op`
/// element by element on broadcast single elements; the result is dense.
fn check_tiny<T: WithDType, U: WithDType, D: Device>(
    name: &str,
    op: TinyOp<T, U, D>,
    [a, a_strided]: [&Tensor<T, Tiny, D>; 2],
    [b, b_strided]: [&Tensor<T, Tiny, D>; 2],
) {
    let tiny = op(a, b);
    assert_eq!(
        tiny.to_vec(),
        op(a_strided, b_strided).to_vec(),
        "{name} on {:?}",
        T::DTYPE
    );
    assert!(tiny.is_contiguous());
    let want: Vec<U> = (0..4)
        .map(|i| {
            op(
                &a.i(i / 2).i(i % 2).broadcast(),
                &b.i(i / 2).i(i % 2).broadcast(),
            )
            .to_vec()[0]
        })
        .collect();
    assert_eq!(tiny.to_vec(), want, "{name} on {:?}, elementwise", T::DTYPE);
}

fn tiny_matches_kernel_float<T: FloatDType, D: Device>() {
    tiny_matches_kernel::<T, D>(&[
        ("div", |a, b| a / b),
        ("exp", |a, _| a.exp()),
        ("tanh", |a, _| a.tanh()),
        ("sigmoid", |a, _| a.sigmoid()),
        ("gelu", |a, _| a.gelu()),
        ("silu", |a, _| a.silu()),
        ("sqrt", |a, _| a.sqrt()),
        ("neg", |a, _| -a),
        ("affine", |a, _| a.affine(-1.5, 0.25)),
    ]);
}

fn tiny_matches_kernel_all<D: Device>() {
    tiny_matches_kernel::<u8, D>(&[("scalar lhs sub", |a, _| 255u8 - a)]);
    tiny_matches_kernel::<u32, D>(&[]);
    tiny_matches_kernel::<i8, D>(&[("neg", |a, _| -a)]);
    tiny_matches_kernel::<i32, D>(&[("neg", |a, _| -a)]);
    tiny_matches_kernel::<i64, D>(&[("neg", |a, _| -a)]);
    tiny_matches_kernel_float::<f16, D>();
    tiny_matches_kernel_float::<bf16, D>();
    tiny_matches_kernel_float::<f32, D>();
    tiny_matches_kernel::<f32, D>(&[
        ("scalar lhs sub", |a, _| 1.5 - a),
        ("scalar lhs div", |a, _| 2.0 / a),
    ]);
    tiny_matches_kernel_float::<f64, D>();
}

/// The activations at NaN (propagated by every one, as in PyTorch) and on the edges of their pieces: PyTorch's
/// conventions (`hardswish(-3) = 0`, `hardsigmoid(3) = 1`, softplus exactly at its threshold still takes the
/// logarithm, `leaky_relu(-0.0)` is `-0.0 * slope`).
fn activation_edges<T: FloatDType, D: Device>() {
    let nan = Tensor::<T, Rank1<1>, D>::from_array([T::from_f64(f64::NAN)]);
    type Act<T, D> = fn(&Tensor<T, Rank1<1>, D>) -> Tensor<T, Rank1<1>, D>;
    let all: [(&str, Act<T, D>); 15] = [
        ("erf", |t| t.erf()),
        ("erfc", |t| t.erfc()),
        ("softsign", |t| t.softsign()),
        ("relu6", |t| t.relu6()),
        ("hardtanh", |t| t.hardtanh(-1.0, 1.0)),
        ("hardsigmoid", |t| t.hardsigmoid()),
        ("hardswish", |t| t.hardswish()),
        ("mish", |t| t.mish()),
        ("log_sigmoid", |t| t.log_sigmoid()),
        ("selu", |t| t.selu()),
        ("leaky_relu", |t| t.leaky_relu(0.01)),
        ("elu", |t| t.elu(1.0)),
        ("celu", |t| t.celu(1.0)),
        ("softplus", |t| t.softplus(1.0, 20.0)),
        ("gelu_erf", |t| t.gelu_erf()),
    ];
    for (name, f) in all {
        assert!(
            f(&nan).to_vec()[0].to_f64().is_nan(),
            "{name}(NaN) on {:?}",
            T::DTYPE
        );
    }
    let x = Tensor::<T, Rank1<4>, D>::from_array([-3.0, 3.0, 4.0, -0.0].map(T::from_f64));
    let v = |t: Tensor<T, Rank1<4>, D>| t.to_vec().iter().map(|x| x.to_f64()).collect::<Vec<_>>();
    assert_eq!(v(x.hardswish())[..3], [0.0, 3.0, 4.0]);
    assert_eq!(v(x.hardsigmoid())[..3], [0.0, 1.0, 1.0]);
    assert!(v(x.leaky_relu(0.5))[3].is_sign_negative());
    // beta x = 4 = threshold: still ln(1 + e^4) = 4.01814992791781 (from Python's math.log1p(math.exp(4))).
    let at = v(x.softplus(1.0, 4.0))[2];
    assert!(
        (at - 4.018_149_927_917_81).abs() < 4.1 * tolerance::<T>(),
        "{at}"
    );
    assert_eq!(v(x.softplus(1.0, 3.5))[2], 4.0);
}

/// `round` takes halves to even; `sign` keeps the sign of zeros; the masks of special values.
fn rounding_and_masks<T: FloatDType, D: Device>() {
    let halves =
        Tensor::<T, Rank1<6>, D>::from_array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5].map(T::from_f64));
    let v = |t: Tensor<T, Rank1<6>, D>| t.to_vec().iter().map(|x| x.to_f64()).collect::<Vec<_>>();
    assert_eq!(v(halves.round()), [0.0, 2.0, 2.0, -0.0, -2.0, -2.0]);
    assert_eq!(v(halves.trunc()), [0.0, 1.0, 2.0, -0.0, -1.0, -2.0]);
    let zeros = Tensor::<T, Rank1<2>, D>::from_array([0.0, -0.0].map(T::from_f64)).sign();
    let z = zeros.to_vec();
    assert!(
        z[0].to_f64() == 0.0 && z[1].to_f64().is_sign_negative(),
        "{:?}",
        T::DTYPE
    );
    let special = [
        1.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        65504.0,
    ];
    let x = Tensor::<T, Rank1<6>, D>::from_array(special.map(T::from_f64));
    assert_eq!(x.isnan().to_vec(), [0, 1, 0, 0, 0, 0]);
    assert_eq!(x.isinf().to_vec(), [0, 0, 1, 1, 0, 0]);
    assert_eq!(x.isfinite().to_vec(), [1, 0, 0, 0, 1, 1]);
    // On a strided view: every other element of a transposed matrix.
    let m = Tensor::<T, Rank2<2, 3>, D>::from_array(
        [[1.0, f64::NAN, 2.0], [f64::INFINITY, 3.0, f64::NAN]].map(|r| r.map(T::from_f64)),
    );
    assert_eq!(m.t().isnan().to_vec(), [0, 0, 1, 0, 0, 1]);
    assert_eq!(m.t().isfinite().to_vec(), [1, 0, 0, 1, 1, 0]);
}

/// The logical ops on masks: any non-zero byte is true, results are 0/1, broadcasting and strided views.
fn logical_masks<D: Device>() {
    let a = Tensor::<u8, Rank2<3, 4>, D>::from_array([[0, 1, 2, 255], [0, 0, 9, 1], [3, 0, 0, 0]]);
    let b = Tensor::<u8, Rank1<4>, D>::from_array([0, 7, 0, 1]);
    let truth = |x: u8| x != 0;
    let want = |f: fn(bool, bool) -> bool| -> Vec<u8> {
        let (av, bv) = (a.to_vec(), b.to_vec());
        (0..12)
            .map(|k| f(truth(av[k]), truth(bv[k % 4])) as u8)
            .collect()
    };
    assert_eq!(a.logical_and(&b).to_vec(), want(|x, y| x && y));
    assert_eq!(a.logical_or(&b).to_vec(), want(|x, y| x || y));
    assert_eq!(a.logical_xor(&b).to_vec(), want(|x, y| x != y));
    assert_eq!(
        a.logical_not().to_vec(),
        a.to_vec()
            .iter()
            .map(|&x| (x == 0) as u8)
            .collect::<Vec<_>>()
    );
    // A transposed view against itself: xor is all zeros, and matches `ne` of the 0/1 forms.
    let t = a.t();
    assert_eq!(t.logical_xor(&t).to_vec(), [0; 12]);
    assert_eq!(
        t.logical_and(&t.logical_not()).to_vec(),
        [0; 12],
        "x and not x"
    );
}

fn activation_edges_all<D: Device>() {
    logical_masks::<D>();
    rounding_and_masks::<f32, D>();
    rounding_and_masks::<f64, D>();
    rounding_and_masks::<f16, D>();
    rounding_and_masks::<bf16, D>();
    activation_edges::<f32, D>();
    activation_edges::<f64, D>();
    activation_edges::<f16, D>();
    activation_edges::<bf16, D>();
}

/// The bitwise ops and shifts on every integer dtype over every view kind, with a broadcast right operand,
/// against Rust's operators; shift amounts past the width (and negative ones for i64) follow PyTorch's rules.
fn bitwise_for<T: IntDType, D: Device>(bits: u32) {
    let rhs_vals: Vec<i64> = (0..N as i64)
        .map(|j| {
            if j == N as i64 - 1 {
                bits as i64 + 3
            } else {
                j
            }
        })
        .collect();
    let rhs =
        Tensor::<T, Rank1<N>, D>::from_vec(rhs_vals.iter().map(|&v| T::from_i64(v)).collect())
            .unwrap();
    // The result as `T` holds it: the low bits, as the cast rules wrap.
    let wrap = |x: i128| -> i64 { T::from_i64(x as i64).to_i64() };
    let (lo, hi) = if T::DTYPE == DType::I64 {
        (-1e6, 1e6)
    } else {
        (0.0, 250.0)
    };
    for v in views::<T, D>(87, lo, hi) {
        let xs: Vec<i64> = v.expected.iter().map(|x| x.to_i64()).collect();
        let what = |op: &str| format!("{op} of {} view [{}]", v.kind, T::DTYPE);
        type Op<T, D> = fn(&Tensor<T, Mat, D>, &Tensor<T, Rank1<N>, D>) -> Tensor<T, Mat, D>;
        type Reference = fn(i64, i64, u32) -> i128;
        let cases: [(&str, Op<T, D>, Reference); 5] = [
            (
                "bitwise_and",
                |a, b| a.bitwise_and(b),
                |a, b, _| (a & b) as i128,
            ),
            (
                "bitwise_or",
                |a, b| a.bitwise_or(b),
                |a, b, _| (a | b) as i128,
            ),
            (
                "bitwise_xor",
                |a, b| a.bitwise_xor(b),
                |a, b, _| (a ^ b) as i128,
            ),
            (
                "bitwise_left_shift",
                |a, b| a.bitwise_left_shift(b),
                |a, b, bits| {
                    if b < 0 || b >= bits as i64 {
                        0
                    } else {
                        (a as i128) << b
                    }
                },
            ),
            (
                "bitwise_right_shift",
                |a, b| a.bitwise_right_shift(b),
                |a, b, bits| {
                    if b < 0 || b >= bits as i64 {
                        if a < 0 {
                            -1
                        } else {
                            0
                        }
                    } else {
                        (a >> b) as i128
                    }
                },
            ),
        ];
        for (name, op, f) in cases {
            let got: Vec<i64> = op(&v.tensor, &rhs)
                .to_vec()
                .iter()
                .map(|x| x.to_i64())
                .collect();
            let want: Vec<i64> = (0..M * N)
                .map(|k| wrap(f(xs[k], rhs_vals[k % N], bits)))
                .collect();
            assert_eq!(got, want, "{}", what(name));
        }
        let got: Vec<i64> = v
            .tensor
            .bitwise_not()
            .to_vec()
            .iter()
            .map(|x| x.to_i64())
            .collect();
        let want: Vec<i64> = xs.iter().map(|&x| wrap(!x as i128)).collect();
        assert_eq!(got, want, "{}", what("bitwise_not"));
    }
}

fn bitwise_all<D: Device>() {
    bitwise_for::<u8, D>(8);
    bitwise_for::<i8, D>(8);
    bitwise_for::<u32, D>(32);
    bitwise_for::<i32, D>(32);
    bitwise_for::<i64, D>(64);
    // Negative amounts: nothing to the left, the sign fill to the right.
    let x = Tensor::<i64, _, D>::from_array([-5, 5]);
    let by = Tensor::<i64, _, D>::from_array([-1, -1]);
    assert_eq!(x.bitwise_left_shift(&by).to_array(), [0, 0]);
    assert_eq!(x.bitwise_right_shift(&by).to_array(), [-1, 0]);
}

/// prelu against `x > 0 ? x : w[c] x` with `c` the index on axis 1, every view kind and float dtype, and a
/// rank-4 (N, C, H, W) input.
fn prelu_for<T: FloatDType, D: Device>() {
    let slopes: Vec<f64> = (0..N).map(|c| 0.1 * c as f64 - 0.2).collect();
    let w = Tensor::<T, Rank1<N>, D>::from_vec(slopes.iter().map(|&v| T::from_f64(v)).collect())
        .unwrap();
    for v in views::<T, D>(89, -3.0, 3.0) {
        let xs: Vec<f64> = v.expected.iter().map(|x| x.to_f64()).collect();
        let want: Vec<f64> = (0..M * N)
            .map(|k| {
                if xs[k] > 0.0 {
                    xs[k]
                } else {
                    T::from_f64(slopes[k % N]).to_f64() * xs[k]
                }
            })
            .collect();
        let got = v.tensor.prelu(&w).to_vec();
        assert_close(&format!("prelu of {} view", v.kind), &got, &want);
    }
    let x = Tensor::<T, Rank4<2, 3, 2, 2>, D>::arange().affine(1.0, -12.0);
    let w3 = Tensor::<T, Rank1<3>, D>::from_array([
        T::from_f64(0.5),
        T::from_f64(0.25),
        T::from_f64(2.0),
    ]);
    let got: Vec<f64> = x.prelu(&w3).to_vec().iter().map(|v| v.to_f64()).collect();
    let want: Vec<f64> = (0..24)
        .map(|k| {
            let v = k as f64 - 12.0;
            if v > 0.0 {
                v
            } else {
                [0.5, 0.25, 2.0][(k / 4) % 3] * v
            }
        })
        .collect();
    assert_eq!(got, want, "prelu of (N, C, H, W) [{}]", T::DTYPE);
}

fn prelu_all<D: Device>() {
    prelu_for::<f32, D>();
    prelu_for::<f64, D>();
    prelu_for::<f16, D>();
    prelu_for::<bf16, D>();
}

device_tests! {
    prelu_per_channel => prelu_all;
    bitwise_ops_and_shifts => bitwise_all;
    activations_at_nan_and_piece_edges => activation_edges_all;
    tiny_tensors_match_the_kernels => tiny_matches_kernel_all;
    tiny_reductions_match_the_kernel => tiny_reductions_all;
    tiny_axis_ops_match_the_kernel => tiny_axis_ops_all;
    float_unary_ops => float_unary_all;
    integer_unary_ops => int_unary_all;
    binary_ops_all_dtypes => binary_all;
    suffix_broadcast_and_integer_semantics => suffix_broadcast;
    comparisons_and_where => comparisons_all;
    to_dtype_all_pairs => casts;
    flatten_and_unflatten_axis_ranges => flatten_ranges;
}

embedded_tests! {
    flatten_and_unflatten_axis_ranges => flatten_ranges;
    prelu_per_channel => prelu_all;
    bitwise_ops_and_shifts => bitwise_all;
    activations_at_nan_and_piece_edges => activation_edges_all;
    float_unary_ops => float_unary_all;
    integer_unary_ops => int_unary_all;
    binary_ops_all_dtypes => binary_all;
    suffix_broadcast_and_integer_semantics => suffix_broadcast;
    comparisons_and_where => comparisons_all;
    to_dtype_all_pairs => casts;
}

/// Rows whose inner stride is 0 (a column broadcast along them) take the host loops' repeated-value paths:
/// unary and scalar ops, and zips with a dense row, a broadcast row, or another repeated column.
#[test]
fn ops_over_repeated_rows() {
    let col = Tensor::<f32, _, Cpu>::from_array([[1.], [2.], [3.]]).broadcast::<Rank2<3, 4>>();
    let other = Tensor::<f32, _, Cpu>::from_array([[5.], [7.], [9.]]).broadcast::<Rank2<3, 4>>();
    let row = Tensor::<f32, _, Cpu>::from_array([10., 20., 30., 40.]).broadcast::<Rank2<3, 4>>();
    let dense: Tensor<f32, Rank2<3, 4>, Cpu> = Tensor::arange();
    assert_eq!(col.sqr().to_array(), [[1.; 4], [4.; 4], [9.; 4]]);
    assert_eq!((&col + 1.0).to_array(), [[2.; 4], [3.; 4], [4.; 4]]);
    assert_eq!((&other - &col).to_array(), [[4.; 4], [5.; 4], [6.; 4]]);
    let want = |f: fn(f32, f32) -> f32,
                a: &Tensor<f32, Rank2<3, 4>, Cpu>,
                b: &Tensor<f32, Rank2<3, 4>, Cpu>| {
        a.to_vec()
            .iter()
            .zip(b.to_vec())
            .map(|(&x, y)| f(x, y))
            .collect::<Vec<_>>()
    };
    assert_eq!((&col - &dense).to_vec(), want(|x, y| x - y, &col, &dense));
    assert_eq!((&dense - &col).to_vec(), want(|x, y| x - y, &dense, &col));
    assert_eq!((&col / &row).to_vec(), want(|x, y| x / y, &col, &row));
    assert_eq!((&row / &col).to_vec(), want(|x, y| x / y, &row, &col));
    let lt = col.lt(&other).to_vec();
    assert!(lt.iter().all(|&m| m == 1));
}

/// A keep-dim result broadcasts back to its input's rank: a rank-r shape reaches every rank from r to 6 (the
/// trait paired ranks wrongly before, so rank 4 and up could not broadcast to their own rank).
#[test]
fn keepdim_results_broadcast_back() {
    let x: Tensor<f32, Rank4<2, 3, 2, 2>, Cpu> = Tensor::arange();
    let means = x
        .mean_keepdim::<(Axis<0>, Axis<2>, Axis<3>)>()
        .broadcast::<Rank4<2, 3, 2, 2>>();
    let want: Vec<f32> = (0..24).map(|i| 4.0 * ((i / 4) % 3) as f32 + 7.5).collect();
    assert_eq!(means.to_vec(), want);
    let six: Tensor<f32, Rank6<1, 1, 1, 1, 1, 2>, Cpu> = Tensor::from_vec(vec![1., 2.]).unwrap();
    let wide = six.broadcast::<Rank6<1, 2, 1, 1, 3, 2>>();
    assert_eq!(wide.to_vec(), [1., 2.].repeat(6));
}

/// flatten/unflatten of axis ranges: the merge or split of a strided view keeps the row-major order of its
/// elements, on every device.
fn flatten_ranges<D: Device>() {
    let x = Tensor::<f32, Rank4<3, 4, 5, 2>, D>::arange()
        .permute::<(Axis<3>, Axis<0>, Axis<1>, Axis<2>)>();
    let values = x.to_vec(); // (2, 3, 4, 5), strided
    let merged: Tensor<f32, Rank2<2, 60>, D> = x.flatten::<Axis<1>, Axis<3>, _>();
    assert_eq!(merged.to_vec(), values);
    let head: Tensor<f32, Rank3<6, 4, 5>, D> = x.flatten::<Axis<0>, Axis<1>, _>();
    assert_eq!(head.to_vec(), values);
    let split: Tensor<f32, Rank5<2, 3, 2, 2, 5>, D> = x.unflatten::<Axis<2>, _>();
    assert_eq!(split.to_vec(), values);
    let back: Tensor<f32, Rank4<2, 3, 4, 5>, D> = merged.unflatten::<Axis<1>, _>();
    assert_eq!(back.to_vec(), values);
}

/// Strided operands large enough for the host loops to split them across threads (blocks of rows): the values
/// are the serial walk's, for a zip with a transposed view and a repeated column, a unary op over a transposed
/// view, and an in-place update by a repeated column.
#[test]
fn large_strided_elementwise_ops_split_across_threads() {
    let a: Tensor<f32, Rank2<600, 500>, Cpu> = Tensor::<f32, Rank2<500, 600>, Cpu>::arange().t();
    let col = Tensor::<f32, Rank2<600, 1>, Cpu>::arange().broadcast::<Rank2<600, 500>>();
    let av = a.to_vec();
    let want: Vec<f32> = (0..600 * 500).map(|k| av[k] - (k / 500) as f32).collect();
    assert_eq!((&a - &col).to_vec(), want);
    let want: Vec<f32> = av.iter().map(|x| x * 2.0).collect();
    assert_eq!((&a * 2.0).to_vec(), want);
    assert_eq!(
        a.sqr().to_vec(),
        av.iter().map(|x| x * x).collect::<Vec<_>>()
    );
    let mut acc = Tensor::<f32, Rank2<600, 500>, Cpu>::zeros() + 1.0;
    acc += &col;
    let want: Vec<f32> = (0..600 * 500).map(|k| 1.0 + (k / 500) as f32).collect();
    assert_eq!(acc.to_vec(), want);
}
