//! [`Accumulator`]: what reductions, scans and lane ops accumulate in (`f32`, `f64` or wrapping `i64`).

use super::fast_math;
use super::Plain;
use core::fmt::Debug;

/// The arithmetic reductions need, on an accumulator type (`f32`, `f64` or `i64`). The float functions exist
/// for every accumulator so one reduction kernel serves all; the float-only reductions (`mean`, `var`,
/// `logsumexp`, `norm`) are only offered for float element types. Plain bytes ([`Plain`]), so kernels can keep
/// accumulator buffers in the CPU buffer cache and view an f32/f64 output as its own accumulator.
pub trait Accumulator: Copy + Debug + PartialOrd + Send + Sync + Plain + 'static {
    /// 0
    const ZERO: Self;
    /// 1
    const ONE: Self;
    /// The smallest value (-inf for floats), the start of a max.
    const LOWEST: Self;
    /// The largest value (+inf for floats), the start of a min.
    const HIGHEST: Self;
    /// `self + rhs` (wrapping for i64).
    fn add(self, rhs: Self) -> Self;
    /// `self - rhs` (wrapping for i64).
    fn sub(self, rhs: Self) -> Self;
    /// `self * rhs` (wrapping for i64).
    fn mul(self, rhs: Self) -> Self;
    /// `self / rhs` (0 for an integer division by zero).
    fn div(self, rhs: Self) -> Self;
    /// True for a float NaN.
    fn is_nan(self) -> bool;
    /// e^self.
    fn exp(self) -> Self;
    /// ln self.
    fn ln(self) -> Self;
    /// sqrt self.
    fn sqrt(self) -> Self;
    /// From a count.
    fn from_usize(n: usize) -> Self;
    /// From an f64 parameter (an epsilon, say).
    fn from_f64(x: f64) -> Self;
}

macro_rules! float_accumulator {
    ($t:ident) => {
        impl Accumulator for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const LOWEST: Self = $t::NEG_INFINITY;
            const HIGHEST: Self = $t::INFINITY;
            #[inline(always)]
            fn add(self, rhs: Self) -> Self {
                self + rhs
            }
            #[inline(always)]
            fn sub(self, rhs: Self) -> Self {
                self - rhs
            }
            #[inline(always)]
            fn mul(self, rhs: Self) -> Self {
                self * rhs
            }
            #[inline(always)]
            fn div(self, rhs: Self) -> Self {
                self / rhs
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                self != self
            }
            #[inline(always)]
            fn exp(self) -> Self {
                <$t as FastExp>::fast_exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                num_traits::Float::ln(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                num_traits::Float::sqrt(self)
            }
            #[inline(always)]
            fn from_usize(n: usize) -> Self {
                n as $t
            }
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
        }
    };
}
/// The exp accumulators use: the vectorisable polynomial for f32 (softmax lanes, logsumexp), libm for f64.
trait FastExp {
    fn fast_exp(self) -> Self;
}
impl FastExp for f32 {
    #[inline(always)]
    fn fast_exp(self) -> Self {
        fast_math::exp_f32(self)
    }
}
impl FastExp for f64 {
    #[inline(always)]
    fn fast_exp(self) -> Self {
        num_traits::Float::exp(self)
    }
}
float_accumulator!(f32);
float_accumulator!(f64);

impl Accumulator for i64 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
    const LOWEST: Self = i64::MIN;
    const HIGHEST: Self = i64::MAX;
    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        self.wrapping_add(rhs)
    }
    #[inline(always)]
    fn sub(self, rhs: Self) -> Self {
        self.wrapping_sub(rhs)
    }
    #[inline(always)]
    fn mul(self, rhs: Self) -> Self {
        self.wrapping_mul(rhs)
    }
    #[inline(always)]
    fn div(self, rhs: Self) -> Self {
        if rhs == 0 {
            0
        } else {
            self.wrapping_div(rhs)
        }
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        false
    }
    fn exp(self) -> Self {
        num_traits::Float::exp(self as f64) as i64
    }
    fn ln(self) -> Self {
        num_traits::Float::ln(self as f64) as i64
    }
    fn sqrt(self) -> Self {
        num_traits::Float::sqrt(self as f64) as i64
    }
    #[inline(always)]
    fn from_usize(n: usize) -> Self {
        n as i64
    }
    fn from_f64(x: f64) -> Self {
        x as i64
    }
}
