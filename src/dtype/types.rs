//! The nine element types' [`WithDType`] impls and their refinements ([`IntDType`], [`SignedDType`],
//! [`FloatDType`]): casts, wrapping integer arithmetic, NaN-propagating max/min, the float functions (the
//! vectorisable [`fast_math`] polynomials for `f32`, `f16` and `bf16`).

use super::*;

macro_rules! int_dtype {
    ($t:ty, $dt:ident) => {
        impl sealed::Sealed for $t {}
        impl WithDType for $t {
            const DTYPE: DType = DType::$dt;
            const ZERO: Self = 0;
            const ONE: Self = 1;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
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
            fn max_of(self, rhs: Self) -> Self {
                Ord::max(self, rhs)
            }
            type Acc = i64;
            #[inline(always)]
            fn to_acc(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_acc(acc: i64) -> Self {
                acc as $t
            }
            #[inline(always)]
            fn min_of(self, rhs: Self) -> Self {
                Ord::min(self, rhs)
            }
        }
    };
}
int_dtype!(u8, U8);
int_dtype!(i8, I8);
int_dtype!(u32, U32);
int_dtype!(i32, I32);
int_dtype!(i64, I64);

macro_rules! signed_int_dtype {
    ($($t:ty),*) => {$(
        impl SignedDType for $t {
            #[inline(always)]
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
            #[inline(always)]
            fn abs(self) -> Self {
                self.wrapping_abs()
            }
        }
    )*};
}
signed_int_dtype!(i8, i32, i64);

/// NaN-propagating max/min shared by the float types (`f32::max` would drop the NaN).
macro_rules! nan_max_min {
    () => {
        #[inline(always)]
        fn max_of(self, rhs: Self) -> Self {
            if self.is_nan() || rhs.is_nan() {
                Self::NAN
            } else if self >= rhs {
                self
            } else {
                rhs
            }
        }
        #[inline(always)]
        fn min_of(self, rhs: Self) -> Self {
            if self.is_nan() || rhs.is_nan() {
                Self::NAN
            } else if self <= rhs {
                self
            } else {
                rhs
            }
        }
    };
}

macro_rules! native_float_dtype {
    ($t:ident, $dt:ident) => {
        impl sealed::Sealed for $t {}
        impl WithDType for $t {
            const DTYPE: DType = DType::$dt;
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
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
            nan_max_min!();
            type Acc = $t;
            #[inline(always)]
            fn to_acc(self) -> $t {
                self
            }
            #[inline(always)]
            fn from_acc(acc: $t) -> Self {
                acc
            }
        }
        impl SignedDType for $t {
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn abs(self) -> Self {
                num_traits::Float::abs(self)
            }
        }
    };
}
native_float_dtype!(f32, F32);
native_float_dtype!(f64, F64);

impl FloatDType for f32 {
    #[inline(always)]
    fn map_f32(self, f: impl Fn(f32) -> f32, _g: impl Fn(f64) -> f64) -> Self {
        f(self)
    }
}
impl FloatDType for f64 {
    #[inline(always)]
    fn map_f32(self, _f: impl Fn(f32) -> f32, g: impl Fn(f64) -> f64) -> Self {
        g(self)
    }
}

macro_rules! half_float_dtype {
    ($t:ident, $dt:ident) => {
        impl sealed::Sealed for $t {}
        impl WithDType for $t {
            const DTYPE: DType = DType::$dt;
            const ZERO: Self = $t::ZERO;
            const ONE: Self = $t::ONE;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                $t::from_f64(v)
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                $t::to_f64(self)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                // i64 -> f64 rounds only above 2^53, far past the half types' range (they saturate to inf
                // long before), so the second rounding cannot change the result.
                $t::from_f64(v as f64)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                $t::to_f32(self) as i64
            }
            #[inline(always)]
            fn add(self, rhs: Self) -> Self {
                $t::from_f32(self.to_f32() + rhs.to_f32())
            }
            #[inline(always)]
            fn sub(self, rhs: Self) -> Self {
                $t::from_f32(self.to_f32() - rhs.to_f32())
            }
            #[inline(always)]
            fn mul(self, rhs: Self) -> Self {
                $t::from_f32(self.to_f32() * rhs.to_f32())
            }
            #[inline(always)]
            fn div(self, rhs: Self) -> Self {
                $t::from_f32(self.to_f32() / rhs.to_f32())
            }
            nan_max_min!();
            type Acc = f32;
            #[inline(always)]
            fn to_acc(self) -> f32 {
                self.to_f32()
            }
            #[inline(always)]
            fn from_acc(acc: f32) -> Self {
                $t::from_f32(acc)
            }
        }
        impl SignedDType for $t {
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn abs(self) -> Self {
                $t::from_bits(self.to_bits() & 0x7fff)
            }
        }
        impl FloatDType for $t {
            #[inline(always)]
            fn map_f32(self, f: impl Fn(f32) -> f32, _g: impl Fn(f64) -> f64) -> Self {
                $t::from_f32(f(self.to_f32()))
            }
        }
    };
}
half_float_dtype!(f16, F16);
half_float_dtype!(bf16, BF16);
