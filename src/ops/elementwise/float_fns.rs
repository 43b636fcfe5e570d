//! The differentiable float functions (`exp`, `relu`, `gelu`, ...), one row each: the method name, the op's
//! descriptor and the derivative. The row generates both the `Tensor` method (a call of the op's kernel) and,
//! with `std`, the `Traced` method (the same forward, recorded with the derivative as its backward rule), so an
//! op's forward and backward are written once.
//!
//! A derivative receives the output's gradient `g` and whichever of the input `x` (`input` rows) or the result
//! `y` (`output` rows) it is written with, or neither (`neither` rows): the recorded graph keeps only what it
//! names alive until the backward pass. A row's parameters (`powf`'s exponent) are the methods' parameters, and
//! the derivative may use them.

#[cfg(feature = "std")]
use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::dtype::FloatDType;
use crate::ops;
#[cfg(feature = "std")]
use crate::ops::CmpOp;
use crate::ops::Device;
use crate::shape::Shape;
#[cfg(feature = "std")]
use crate::tensor::Grad;
use crate::tensor::Tensor;

/// Generates the `Traced` method of each row: the value from the `Tensor` method of the same name, recorded with the
/// row's derivative. `float_fns!` uses it for its rows' traced halves; on its own it serves the unary ops that
/// plain tensors have beyond the floats (`abs` for signed types, `sqr` and `clamp` for every type), whose `Tensor`
/// methods live with those wider bounds in `tensor.rs`. (`neg` is the `Neg` operator on tensors, with its traced
/// method beside the traced operators.)
macro_rules! traced_fns {
    ($(
        $(#[$m:meta])*
        $name:ident($($p:ident: $pt:ty),*), $kind:ident |$g:ident $(, $v:ident)?| $grad:expr;
    )*) => {
        #[cfg(feature = "std")]
        impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
            $(
                $(#[$m])*
                pub fn $name(&self $(, $p: $pt)*) -> Self {
                    let y = self.value.$name($($p),*);
                    traced_fns!(@record self, y, ($($p: $pt),*), $kind |$g $(, $v)?| $grad)
                }
            )*
        }
    };
    // The derivative is a nested `fn` generic over the element type and device only (a closure would be
    // compiled once per shape), and the saved value and the gradients are in autograd's padded form. `input` and
    // `output` rows differ only in the value saved for the derivative.
    (@record $self:ident, $y:ident, ($($p:ident: $pt:ty),*), input |$g:ident, $v:ident| $grad:expr) => {{
        let saved = $self.value.padded();
        traced_fns!(@saved $self, $y, saved, ($($p: $pt),*), |$g, $v| $grad)
    }};
    (@record $self:ident, $y:ident, ($($p:ident: $pt:ty),*), output |$g:ident, $v:ident| $grad:expr) => {{
        let saved = $y.padded();
        traced_fns!(@saved $self, $y, saved, ($($p: $pt),*), |$g, $v| $grad)
    }};
    (@saved $self:ident, $y:ident, $saved:ident, ($($p:ident: $pt:ty),*), |$g:ident, $v:ident| $grad:expr) => {{
        fn rule<T: FloatDType, D: Device>(
            $g: Grad<T, D>,
            (slot, $v, ($($p,)*)): (Slot, Grad<T, D>, ($($pt,)*)),
            grads: &mut Gradients,
        ) {
            let $v = &$v;
            slot.give_padded(grads, $grad)
        }
        record_with($y, &[&$self.node], ($self.slot(), $saved, ($($p,)*)), rule::<T, D>)
    }};
    (@record $self:ident, $y:ident, ($($p:ident: $pt:ty),*), neither |$g:ident| $grad:expr) => {{
        #[allow(unused_variables)] // a derivative may ignore a parameter (`affine`'s `add`)
        fn rule<T: FloatDType, D: Device>(
            $g: Grad<T, D>,
            (slot, ($($p,)*)): (Slot, ($($pt,)*)),
            grads: &mut Gradients,
        ) {
            slot.give_padded(grads, $grad)
        }
        record_with($y, &[&$self.node], ($self.slot(), ($($p,)*)), rule::<T, D>)
    }};
}

/// Generates the `Tensor` and `Traced` method of each row (see the module docs).
macro_rules! float_fns {
    ($(
        $(#[$m:meta])*
        $name:ident($($p:ident: $pt:ty),*) => $op:expr, $kind:ident |$g:ident $(, $v:ident)?| $grad:expr;
    )*) => {
        impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
            $(
                $(#[$m])*
                pub fn $name(&self $(, $p: $pt)*) -> Self {
                    self.unary($op)
                }
            )*
        }

        traced_fns! {
            $(
                $(#[$m])*
                $name($($p: $pt),*), $kind |$g $(, $v)?| $grad;
            )*
        }
    };
}

float_fns! {
    /// e^x.
    exp() => ops::Exp, output |g, y| g.zip_same(ops::Mul, y);
    /// Natural logarithm.
    ln() => ops::Ln, input |g, x| g.zip_same(ops::Div, x);
    /// Natural logarithm under PyTorch's name (`torch.log`): the same op as [`Tensor::ln`].
    log() => ops::Ln, input |g, x| g.zip_same(ops::Div, x);
    /// Square root.
    sqrt() => ops::Sqrt, output |g, y| g.zip_same(ops::Div, &y.affine(2.0, 0.0));
    /// `1 / x`.
    recip() => ops::Recip, output |g, y| -&g.zip_same(ops::Mul, &y.sqr());
    /// Sine.
    sin() => ops::Sin, input |g, x| g.zip_same(ops::Mul, &x.cos());
    /// Cosine.
    cos() => ops::Cos, input |g, x| -&g.zip_same(ops::Mul, &x.sin());
    /// Hyperbolic tangent.
    tanh() => ops::Tanh, output |g, y| g.zip_same(ops::Mul, &y.sqr().affine(-1.0, 1.0));
    /// `1 / (1 + e^-x)`.
    sigmoid() => ops::Sigmoid, output |g, y| g.zip_same(ops::Mul, &y.zip_same(ops::Mul, &y.affine(-1.0, 1.0)));
    /// `max(x, 0)`; the gradient at 0 is 0.
    relu() => ops::Relu, input |g, x| x.zip_same(ops::ReluBackward, &g);
    /// GELU, tanh approximation (PyTorch's `approximate="tanh"`).
    gelu() => ops::GeluTanh, input |g, x| g.zip_same(ops::Mul, &gelu_tanh_derivative(x));
    /// GELU, exact erf form (PyTorch's default): gradient `Phi(x) + x phi(x)` (the normal CDF and density).
    gelu_erf() => ops::GeluErf, input |g, x| g.zip_same(ops::Mul, &gelu_erf_derivative(x));
    /// `x * sigmoid(x)`.
    silu() => ops::Silu, input |g, x| g.zip_same(ops::Mul, &silu_derivative(x));
    /// The error function (see [`ops::Erf`]).
    ///
    /// ```
    /// # use typed_tensor::prelude::*;
    /// let x = Tensor::<f64, Rank1<2>, Cpu>::from_array([0.0, 0.5]);
    /// assert!((x.erf().to_vec()[1] - 0.520_499_877_813_046_5).abs() < 1e-15);
    /// ```
    erf() => ops::Erf, input |g, x| g.zip_same(ops::Mul, &gaussian(x, 2.0));
    /// The complementary error function, `1 - erf x`, accurate where `erf x` is near 1.
    erfc() => ops::Erfc, input |g, x| g.zip_same(ops::Mul, &gaussian(x, -2.0));
    /// `x / (1 + |x|)`.
    softsign() => ops::Softsign, input |g, x| g.zip_same(ops::Div, &x.abs().affine(1.0, 1.0).sqr());
    /// `min(max(x, 0), 6)`; the gradient is 1 strictly between 0 and 6.
    relu6() => ops::Relu6, input |g, x| g.zip_same(ops::Mul, &between(x, 0.0, 6.0));
    /// `min(max(x, min), max)` with PyTorch's `hardtanh` gradient: 1 strictly between the bounds, 0 at and
    /// beyond them (`clamp`'s is 1 at the bounds too). `hardtanh(-1.0, 1.0)` is PyTorch's default.
    hardtanh(min: f64, max: f64) => ops::Clamp { lo: T::from_f64(min), hi: T::from_f64(max) },
        input |g, x| g.zip_same(ops::Mul, &between(x, min, max));
    /// 0 for `x <= -3`, 1 for `x >= 3`, `x / 6 + 1/2` between (PyTorch's `hardsigmoid`).
    hardsigmoid() => ops::Hardsigmoid,
        input |g, x| g.zip_same(ops::Mul, &between(x, -3.0, 3.0).affine(1.0 / 6.0, 0.0));
    /// 0 for `x <= -3`, `x` for `x >= 3`, `x (x + 3) / 6` between (PyTorch's `hardswish`).
    hardswish() => ops::Hardswish, input |g, x| g.zip_same(ops::Mul, &hardswish_derivative(x));
    /// `x tanh(softplus(x))` (Mish; PyTorch's `mish`).
    mish() => ops::Mish, input |g, x| g.zip_same(ops::Mul, &mish_derivative(x));
    /// `ln(sigmoid(x))`, computed as `min(x, 0) - ln(1 + e^-|x|)` so that it neither overflows nor rounds to 0.
    log_sigmoid() => ops::LogSigmoid, input |g, x| g.zip_same(ops::Mul, &x.sigmoid().affine(-1.0, 1.0));
    /// SELU: `scale x` for `x > 0`, `scale alpha (e^x - 1)` otherwise, with PyTorch's constants
    /// [`ops::SELU_SCALE`] and [`ops::SELU_ALPHA`].
    selu() => ops::Selu, input |g, x| g.zip_same(
        ops::Mul,
        &exp_below_zero(x, ops::SELU_SCALE, ops::SELU_SCALE * ops::SELU_ALPHA, 1.0),
    );
    /// `x` for `x > 0`, `slope x` otherwise (PyTorch's `leaky_relu(x, negative_slope)`; its default slope is
    /// 0.01). The slope is rounded to `T`.
    leaky_relu(slope: f64) => ops::LeakyRelu { slope: T::from_f64(slope) },
        input |g, x| g.zip_same(ops::Mul, &x.mask_scalar(CmpOp::Gt, T::ZERO).affine(1.0 - slope, slope));
    /// `x` for `x > 0`, `alpha (e^x - 1)` otherwise (PyTorch's `elu`; its default alpha is 1).
    elu(alpha: f64) => ops::Elu { alpha: T::from_f64(alpha) },
        input |g, x| g.zip_same(ops::Mul, &exp_below_zero(x, 1.0, alpha, 1.0));
    /// `x` for `x > 0`, `alpha (e^(x / alpha) - 1)` otherwise (PyTorch's `celu`; its default alpha is 1).
    celu(alpha: f64) => ops::Celu { alpha: T::from_f64(alpha) },
        input |g, x| g.zip_same(ops::Mul, &exp_below_zero(x, 1.0, 1.0, 1.0 / alpha));
    /// `ln(1 + e^(beta x)) / beta`, and `x` itself where `beta x > threshold` (PyTorch's `softplus`; its defaults
    /// are beta 1 and threshold 20). `beta` must be positive.
    softplus(beta: f64, threshold: f64) => ops::Softplus { beta: T::from_f64(beta), threshold: T::from_f64(threshold) },
        input |g, x| g.zip_same(ops::Mul, &softplus_derivative(x, beta, threshold));
    /// The largest integer `<= x`; its gradient is zero (as in PyTorch).
    floor() => ops::Floor, neither |g| g.affine(0.0, 0.0);
    /// The smallest integer `>= x`; zero gradient.
    ceil() => ops::Ceil, neither |g| g.affine(0.0, 0.0);
    /// The nearest integer, halves to even (`round(0.5) = 0`, `round(1.5) = 2`, as PyTorch and NumPy round);
    /// zero gradient.
    ///
    /// ```
    /// # use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank1<4>, Cpu>::from_array([0.5, 1.5, 2.5, -2.5]);
    /// assert_eq!(x.round().to_vec(), [0.0, 2.0, 2.0, -2.0]);
    /// ```
    round() => ops::Round, neither |g| g.affine(0.0, 0.0);
    /// `x` with its fraction dropped (towards zero); zero gradient.
    trunc() => ops::Trunc, neither |g| g.affine(0.0, 0.0);
    /// 1 above zero, -1 below, zeros and NaN unchanged; zero gradient.
    sign() => ops::Sign, neither |g| g.affine(0.0, 0.0);
    /// `ln(1 + x)`, accurate for small `x`.
    log1p() => ops::Log1p, input |g, x| g.zip_same(ops::Div, &x.affine(1.0, 1.0));
    /// `e^x - 1`, accurate for small `x`.
    expm1() => ops::Expm1, output |g, y| g.zip_same(ops::Mul, &y.affine(1.0, 1.0));
    /// Base-2 logarithm.
    log2() => ops::Log2, input |g, x| g.zip_same(ops::Div, &x.affine(core::f64::consts::LN_2, 0.0));
    /// Base-10 logarithm.
    log10() => ops::Log10, input |g, x| g.zip_same(ops::Div, &x.affine(core::f64::consts::LN_10, 0.0));
    /// `2^x`.
    exp2() => ops::Exp2, output |g, y| g.zip_same(ops::Mul, &y.affine(core::f64::consts::LN_2, 0.0));
    /// `1 / sqrt(x)`.
    rsqrt() => ops::Rsqrt, output |g, y| g.zip_same(ops::Mul, &y.sqr().zip_same(ops::Mul, y).affine(-0.5, 0.0));
    /// Tangent.
    tan() => ops::Tan, output |g, y| g.zip_same(ops::Mul, &y.sqr().affine(1.0, 1.0));
    /// Arcsine (NaN outside [-1, 1]).
    asin() => ops::Asin, input |g, x| g.zip_same(ops::Div, &x.sqr().affine(-1.0, 1.0).sqrt());
    /// Arccosine (NaN outside [-1, 1]).
    acos() => ops::Acos, input |g, x| -&g.zip_same(ops::Div, &x.sqr().affine(-1.0, 1.0).sqrt());
    /// Arctangent.
    atan() => ops::Atan, input |g, x| g.zip_same(ops::Div, &x.sqr().affine(1.0, 1.0));
    /// Hyperbolic sine.
    sinh() => ops::Sinh, input |g, x| g.zip_same(ops::Mul, &x.cosh());
    /// Hyperbolic cosine.
    cosh() => ops::Cosh, input |g, x| g.zip_same(ops::Mul, &x.sinh());
    /// Inverse hyperbolic sine.
    asinh() => ops::Asinh, input |g, x| g.zip_same(ops::Div, &x.sqr().affine(1.0, 1.0).sqrt());
    /// Inverse hyperbolic cosine (NaN below 1).
    acosh() => ops::Acosh, input |g, x| g.zip_same(ops::Div, &x.sqr().affine(1.0, -1.0).sqrt());
    /// Inverse hyperbolic tangent (NaN outside [-1, 1]).
    atanh() => ops::Atanh, input |g, x| g.zip_same(ops::Div, &x.sqr().affine(-1.0, 1.0));
    /// `x ^ e` (`e` rounded to the element type for the forward pass).
    powf(e: f64) => ops::Powf(T::from_f64(e)),
        input |g, x| g.zip_same(ops::Mul, &x.powf(e - 1.0).affine(e, 0.0));
    /// `x * mul + add`, computed in f64 and rounded once.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([1., 2.]);
    /// assert_eq!(x.affine(3., 1.).to_vec(), [4., 7.]);
    /// ```
    affine(mul: f64, add: f64) => ops::Affine { mul: T::from_f64(mul), add: T::from_f64(add) },
        neither |g| g.affine(mul, 0.0);
}

traced_fns! {
    /// `|x|`; the gradient at 0 is 0.
    abs(), input |g, x| g.zip_same(
        ops::Mul,
        &x.mask_scalar(CmpOp::Gt, T::ZERO).zip_same(ops::Sub, &x.mask_scalar(CmpOp::Lt, T::ZERO)),
    );
    /// `x * x`.
    sqr(), input |g, x| g.zip_same(ops::Mul, &x.affine(2.0, 0.0));
    /// Every element clamped to `[lo, hi]`; the gradient flows where the input is inside the range.
    clamp(lo: T, hi: T), input |g, x| g.zip_same(ops::Mul, &within(x, lo, hi));
}

/// `d/dx silu(x) = s (1 + x (1 - s))` with `s = sigmoid(x)`.
/// `c / sqrt(pi) * e^(-x^2)`: erf's derivative for `c = 2`, erfc's for `c = -2`.
#[cfg(feature = "std")]
fn gaussian<T: FloatDType, S: Shape, D: Device>(x: &Tensor<T, S, D>, c: f64) -> Tensor<T, S, D> {
    x.sqr()
        .affine(-1.0, 0.0)
        .exp()
        .affine(c / core::f64::consts::PI.sqrt(), 0.0)
}

/// 1 strictly between `lo` and `hi`, 0 elsewhere (and at NaN).
#[cfg(feature = "std")]
fn between<T: FloatDType, S: Shape, D: Device>(
    x: &Tensor<T, S, D>,
    lo: f64,
    hi: f64,
) -> Tensor<T, S, D> {
    x.mask_scalar(CmpOp::Gt, T::from_f64(lo))
        .zip_same(ops::Mul, &x.mask_scalar(CmpOp::Lt, T::from_f64(hi)))
}

/// 1 from `lo` to `hi`, bounds included, 0 elsewhere (and at NaN).
#[cfg(feature = "std")]
fn within<T: FloatDType, S: Shape, D: Device>(
    x: &Tensor<T, S, D>,
    lo: T,
    hi: T,
) -> Tensor<T, S, D> {
    x.mask_scalar(CmpOp::Ge, lo)
        .zip_same(ops::Mul, &x.mask_scalar(CmpOp::Le, hi))
}

/// `above` for `x > 0`, `below * e^(k min(x, 0))` otherwise: SELU's, ELU's and CELU's derivatives (the exponent is
/// clamped at 0 so that large inputs do not make `inf * 0`).
#[cfg(feature = "std")]
fn exp_below_zero<T: FloatDType, S: Shape, D: Device>(
    x: &Tensor<T, S, D>,
    above: f64,
    below: f64,
    k: f64,
) -> Tensor<T, S, D> {
    let positive = x.mask_scalar(CmpOp::Gt, T::ZERO);
    let rest = positive.affine(-1.0, 1.0);
    let min0 = x.zip_same(ops::Sub, &x.relu());
    let tail = min0.affine(k, 0.0).exp().affine(below, 0.0);
    positive
        .affine(above, 0.0)
        .zip_same(ops::Add, &rest.zip_same(ops::Mul, &tail))
}

/// PyTorch's: 0 for `x < -3`, `x / 3 + 1/2` for `-3 <= x <= 3`, 1 above.
#[cfg(feature = "std")]
fn hardswish_derivative<T: FloatDType, S: Shape, D: Device>(
    x: &Tensor<T, S, D>,
) -> Tensor<T, S, D> {
    let mid = within(x, T::from_f64(-3.0), T::from_f64(3.0));
    mid.zip_same(ops::Mul, &x.affine(1.0 / 3.0, 0.5))
        .zip_same(ops::Add, &x.mask_scalar(CmpOp::Gt, T::from_f64(3.0)))
}

/// `tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2)` with `sp = softplus(x)`.
#[cfg(feature = "std")]
fn mish_derivative<T: FloatDType, S: Shape, D: Device>(x: &Tensor<T, S, D>) -> Tensor<T, S, D> {
    let t = x.softplus(1.0, 20.0).tanh();
    let sech2 = t.sqr().affine(-1.0, 1.0);
    let inner = x
        .zip_same(ops::Mul, &x.sigmoid())
        .zip_same(ops::Mul, &sech2);
    t.zip_same(ops::Add, &inner)
}

/// `sigmoid(beta x)`, and 1 where `beta x > threshold`.
#[cfg(feature = "std")]
fn softplus_derivative<T: FloatDType, S: Shape, D: Device>(
    x: &Tensor<T, S, D>,
    beta: f64,
    threshold: f64,
) -> Tensor<T, S, D> {
    let above = x.mask_scalar(CmpOp::Gt, T::from_f64(threshold / beta));
    let below = above.affine(-1.0, 1.0);
    above.zip_same(
        ops::Add,
        &below.zip_same(ops::Mul, &x.affine(beta, 0.0).sigmoid()),
    )
}

#[cfg(feature = "std")]
fn silu_derivative<T: FloatDType, S: Shape, D: Device>(x: &Tensor<T, S, D>) -> Tensor<T, S, D> {
    let s = x.sigmoid();
    let inner = x.zip_same(ops::Mul, &s.affine(-1.0, 1.0)).affine(1.0, 1.0);
    s.zip_same(ops::Mul, &inner)
}

/// `y = x/2 (1 + t)`, `t = tanh(u)`, `u = k (x + c x^3)`: `dy/dx = (1 + t)/2 + x/2 (1 - t^2) k (1 + 3 c x^2)`.
#[cfg(feature = "std")]
fn gelu_tanh_derivative<T: FloatDType, S: Shape, D: Device>(
    x: &Tensor<T, S, D>,
) -> Tensor<T, S, D> {
    let (k, c) = ((2.0 / core::f64::consts::PI).sqrt(), 0.044715);
    let x2 = x.sqr();
    let u = x.zip_same(ops::Mul, &x2.affine(c, 1.0)).affine(k, 0.0);
    let t = u.tanh();
    let left = t.affine(0.5, 0.5);
    let du = x2.affine(3.0 * c * k, k);
    let right = x
        .zip_same(ops::Mul, &t.sqr().affine(-0.5, 0.5))
        .zip_same(ops::Mul, &du);
    left.zip_same(ops::Add, &right)
}

/// `Phi(x) + x phi(x)`, with `Phi(x) = gelu_erf(x) / x` away from 0 and 1/2 at 0.
#[cfg(feature = "std")]
fn gelu_erf_derivative<T: FloatDType, S: Shape, D: Device>(x: &Tensor<T, S, D>) -> Tensor<T, S, D> {
    let at_zero = x.mask_scalar(CmpOp::Eq, T::ZERO);
    let x_safe = x.zip_same(ops::Add, &at_zero);
    let cdf = x
        .gelu_erf()
        .zip_same(ops::Div, &x_safe)
        .zip_same(ops::Mul, &at_zero.affine(-1.0, 1.0))
        .zip_same(ops::Add, &at_zero.affine(0.5, 0.0));
    let pdf = x
        .sqr()
        .affine(-0.5, 0.0)
        .exp()
        .affine(1.0 / (2.0 * core::f64::consts::PI).sqrt(), 0.0);
    cdf.zip_same(ops::Add, &x.zip_same(ops::Mul, &pdf))
}
