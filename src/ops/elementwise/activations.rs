//! The activation functions beyond ReLU, sigmoid, tanh, GELU and SiLU, with PyTorch's definitions: their f64
//! formulas (every host device evaluates them in f64 and rounds once; `src/ops/elementwise/unary.cu` evaluates the same formulas in
//! the accumulator type) and the ops that take parameters (rounded to the element type, as `powf`'s exponent is).

use super::UnaryOp;
use crate::dtype::FloatDType;

/// SELU's `alpha` (PyTorch's `torch.nn.SELU`, from Klambauer et al. 2017).
pub const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
/// SELU's `scale`.
pub const SELU_SCALE: f64 = 1.050_700_987_355_480_5;

pub(crate) fn erf(x: f64) -> f64 {
    libm::erf(x)
}
pub(crate) fn erfc(x: f64) -> f64 {
    libm::erfc(x)
}
pub(crate) fn softsign(x: f64) -> f64 {
    x / (1.0 + x.abs())
}
pub(crate) fn relu6(x: f64) -> f64 {
    x.clamp(0.0, 6.0) // NaN stays NaN
}
pub(crate) fn hardsigmoid(x: f64) -> f64 {
    if x <= -3.0 {
        0.0
    } else if x >= 3.0 {
        1.0
    } else {
        // (x + 3) / 6, not x / 6 + 1/2: near -3 the latter cancels (4e-6 relative error in f32 on the GPU).
        (x + 3.0) / 6.0
    }
}
pub(crate) fn hardswish(x: f64) -> f64 {
    if x <= -3.0 {
        0.0
    } else if x >= 3.0 {
        x
    } else {
        x * (x + 3.0) / 6.0
    }
}
pub(crate) fn softplus(x: f64, beta: f64, threshold: f64) -> f64 {
    // Above the threshold the result is x to working precision (PyTorch's reverting to the identity).
    if x * beta > threshold {
        x
    } else {
        libm::log1p(libm::exp(beta * x)) / beta
    }
}
pub(crate) fn mish(x: f64) -> f64 {
    x * libm::tanh(softplus(x, 1.0, 20.0))
}
pub(crate) fn log_sigmoid(x: f64) -> f64 {
    // -softplus(-x), written so that neither branch overflows.
    x.min(0.0) - libm::log1p(libm::exp(-x.abs()))
}
pub(crate) fn selu(x: f64) -> f64 {
    SELU_SCALE
        * if x > 0.0 {
            x
        } else {
            SELU_ALPHA * libm::expm1(x)
        }
}
pub(crate) fn leaky_relu(x: f64, slope: f64) -> f64 {
    if x > 0.0 {
        x
    } else {
        x * slope
    }
}
pub(crate) fn elu(x: f64, alpha: f64) -> f64 {
    if x > 0.0 {
        x
    } else {
        alpha * libm::expm1(x)
    }
}
pub(crate) fn celu(x: f64, alpha: f64) -> f64 {
    if x > 0.0 {
        x
    } else {
        alpha * libm::expm1(x / alpha)
    }
}

/// Defines ops with up to two scalar parameters, evaluated in f64 and rounded once.
macro_rules! param_ops {
    ($($(#[$m:meta])* $name:ident { $p0:ident $(, $p1:ident)? }, $stem:literal, |$x:ident| $body:expr;)*) => {
        $(
            $(#[$m])*
            #[derive(Clone, Copy, Debug)]
            pub struct $name<T> {
                #[allow(missing_docs)]
                pub $p0: T,
                $(
                    #[allow(missing_docs)]
                    pub $p1: T,
                )?
            }
            impl<T: FloatDType> UnaryOp<T> for $name<T> {
                const NAME: &'static str = $stem;
                #[inline(always)]
                fn apply(&self, x: T) -> T {
                    let $x = x.to_f64();
                    let $p0 = self.$p0.to_f64();
                    $(let $p1 = self.$p1.to_f64();)?
                    T::from_f64($body)
                }
                fn params(&self) -> [T; 2] {
                    [self.$p0, param_ops!(@second self $(, $p1)?)]
                }
            }
        )*
        /// The kernel names of the ops above (all float-only).
        #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
        pub(crate) const PARAM_STEMS: &[&str] = &[$($stem),*];
    };
    (@second $self:ident, $p1:ident) => { $self.$p1 };
    (@second $self:ident) => { T::ZERO };
}

param_ops! {
    /// `x` for `x > 0`, `slope * x` otherwise (PyTorch's `leaky_relu`, default slope 0.01).
    LeakyRelu { slope }, "leaky_relu", |x| leaky_relu(x, slope);
    /// `x` for `x > 0`, `alpha * (e^x - 1)` otherwise (PyTorch's `elu`, default alpha 1).
    Elu { alpha }, "elu", |x| elu(x, alpha);
    /// `x` for `x > 0`, `alpha * (e^(x / alpha) - 1)` otherwise (PyTorch's `celu`, default alpha 1).
    Celu { alpha }, "celu", |x| celu(x, alpha);
    /// `ln(1 + e^(beta x)) / beta`, and `x` where `beta x > threshold` (PyTorch's `softplus`, defaults 1 and 20).
    Softplus { beta, threshold }, "softplus", |x| softplus(x, beta, threshold);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values from Python's `math` module (the C library's erf, log1p, expm1, tanh: another implementation than
    /// the `libm` crate's), written out with PyTorch's formulas.
    #[test]
    fn known_values() {
        let close = |got: f64, want: f64| assert!((got - want).abs() < 1e-15, "{got} vs {want}");
        close(erf(0.5), 0.520_499_877_813_046_5);
        close(erfc(0.5), 0.479_500_122_186_953_5);
        close(softsign(-3.0), -0.75);
        close(mish(1.0), 0.865_098_388_267_310_3);
        close(log_sigmoid(-2.0), -2.126_928_011_042_972_7);
        close(selu(-1.0), -1.111_330_737_812_562_5);
        close(selu(2.0), 2.101_401_974_710_961);
        close(hardswish(1.0), 0.666_666_666_666_666_6);
        close(hardsigmoid(1.0), 0.666_666_666_666_666_6);
        close(relu6(7.0), 6.0);
        close(softplus(1.0, 1.0, 20.0), 1.313_261_687_518_222_8);
        close(softplus(30.0, 1.0, 20.0), 30.0);
        close(elu(-1.0, 1.0), -0.632_120_558_828_557_7);
        close(celu(-1.0, 2.0), -0.786_938_680_574_733_2);
        close(leaky_relu(-2.0, 0.01), -0.02);
        assert!(relu6(f64::NAN).is_nan() && hardswish(f64::NAN).is_nan());
    }
}
