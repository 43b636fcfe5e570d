//! Element types: the [`WithDType`] trait, its float/signed refinements, and the runtime [`DType`] tag.
//!
//! Nine element types are supported: `u8`, `i8`, `u32`, `i32`, `i64`, `f16`, `bf16`, `f32`, `f64`. Which ops a
//! tensor has depends on the trait its element type implements:
//!
//! | trait          | types                         | adds                                                     |
//! |----------------|-------------------------------|----------------------------------------------------------|
//! | [`WithDType`]  | all nine                      | creation, views, `+ - * /`, `maximum`, comparisons, casts |
//! | [`IntDType`]   | the five integer types        | bitwise ops and shifts                                    |
//! | [`SignedDType`]| `i8`, `i32`, `i64`, the floats | `neg`, `abs`                                             |
//! | [`FloatDType`] | `f16`, `bf16`, `f32`, `f64`   | `exp`, `ln`, `sqrt`, activations, `powf`, `affine`, ...   |
//!
//! An op that makes no sense for a type (say `exp` on `u8`) does not compile for it.
//!
//! # Casts
//!
//! [`cast`] (and `Tensor::to_dtype`) converts between any two types with the same rules on every device:
//! - into `f16` / `bf16` / `f32`: IEEE round-to-nearest-even;
//! - float into integer: truncates toward zero and **saturates** at the integer's range; NaN becomes 0
//!   (Rust's `as`);
//! - integer into integer: keeps the low bits (**wrapping**, Rust's `as`): `300u32 -> 44u8`, `-1i64 -> 255u8`.

use core::fmt::{Debug, Display};
use half::{bf16, f16};

mod accumulator;
pub mod fast_math;
mod plain;
mod types;
pub use accumulator::Accumulator;
pub use plain::Plain;
pub(crate) use plain::{cast_slice, cast_slice_mut, zeroed};

/// The runtime tag of an element type, for printing, IO and kernel names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// `u8`
    U8,
    /// `i8`
    I8,
    /// `u32`
    U32,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// IEEE half precision (`half::f16`)
    F16,
    /// bfloat16 (`half::bf16`)
    BF16,
    /// `f32`
    F32,
    /// `f64`
    F64,
}

impl DType {
    /// The one rule for kernel names, shared with the `.cu` macros: `{stem}_{dtype}`, e.g. `exp_f32`
    /// (`ops::kernel_name` is the same rule).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// assert_eq!(DType::F32.kernel_name("exp"), "exp_f32");
    /// ```
    #[cfg(feature = "alloc")]
    pub fn kernel_name(self, stem: &str) -> alloc::string::String {
        alloc::format!("{stem}_{}", self.as_str())
    }

    /// All dtypes, in the order of this enum.
    pub const ALL: [DType; 9] = [
        DType::U8,
        DType::I8,
        DType::U32,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// The lower-case name used in printing and in CUDA kernel names (`exp_f32`).
    pub const fn as_str(self) -> &'static str {
        match self {
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::U32 => "u32",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// Bytes per element.
    pub const fn size_in_bytes(self) -> usize {
        match self {
            DType::U8 | DType::I8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    /// True for the integer types.
    pub const fn is_int(self) -> bool {
        matches!(
            self,
            DType::U8 | DType::I8 | DType::U32 | DType::I32 | DType::I64
        )
    }

    /// True for the floating-point types.
    pub const fn is_float(self) -> bool {
        !self.is_int()
    }

    /// True for the types with a sign (those implementing [`SignedDType`]): `i8`, `i32`, `i64` and the floats.
    pub const fn is_signed(self) -> bool {
        !matches!(self, DType::U8 | DType::U32)
    }
}

impl Display for DType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// An element type of a tensor. Sealed: the nine types listed in the [module docs](self).
pub trait WithDType:
    sealed::Sealed
    + Copy
    + Clone
    + Default
    + Debug
    + Display
    + PartialEq
    + PartialOrd
    + Send
    + Sync
    + Plain
    + 'static
{
    /// The runtime tag of this type.
    const DTYPE: DType;
    /// Additive identity.
    const ZERO: Self;
    /// Multiplicative identity.
    const ONE: Self;

    /// Converts from `f64` with the [cast rules](self#casts).
    fn from_f64(v: f64) -> Self;
    /// Converts to `f64` (exact for every type but large `i64`).
    fn to_f64(self) -> f64;
    /// Converts from `i64` with the [cast rules](self#casts).
    fn from_i64(v: i64) -> Self;
    /// Converts to `i64` with the [cast rules](self#casts).
    fn to_i64(self) -> i64;

    /// `self + rhs`; integers wrap on overflow.
    fn add(self, rhs: Self) -> Self;
    /// `self - rhs`; integers wrap on overflow.
    fn sub(self, rhs: Self) -> Self;
    /// `self * rhs`; integers wrap on overflow.
    fn mul(self, rhs: Self) -> Self;
    /// `self / rhs`; integer division truncates toward zero, and division by zero gives 0 (no panic, the same
    /// on every device).
    fn div(self, rhs: Self) -> Self;
    /// The larger of the two; a NaN operand gives NaN.
    fn max_of(self, rhs: Self) -> Self;
    /// The smaller of the two; a NaN operand gives NaN.
    fn min_of(self, rhs: Self) -> Self;

    /// What reductions accumulate in: `f32` for `f16`/`bf16`/`f32`, `f64` for `f64`, wrapping `i64` for the
    /// integers (so a `u8` sum wraps exactly as adding in `u8` would, whatever the order).
    type Acc: Accumulator;
    /// Widens to the accumulator (exact).
    fn to_acc(self) -> Self::Acc;
    /// Rounds an accumulator back (round-to-nearest-even for floats, wrapping for integers).
    fn from_acc(acc: Self::Acc) -> Self;
}

/// Converts one element with the [cast rules](self#casts) (what `to_dtype` does per element).
#[inline(always)]
pub fn cast<T: WithDType, U: WithDType>(x: T) -> U {
    if T::DTYPE.is_int() {
        U::from_i64(x.to_i64())
    } else {
        U::from_f64(x.to_f64())
    }
}

/// Element types that can index: `u32`, `i32` and `i64`. A negative or too large index is an error of the op, never a
/// wrap-around.
pub trait IndexDType: WithDType {
    /// The index as a position, `None` if negative.
    fn to_index(self) -> Option<usize>;
    /// The index as the signed number it is, for error messages (`-1`, not 18446744073709551615).
    fn to_signed(self) -> i128;
}
impl IndexDType for u32 {
    #[inline(always)]
    fn to_index(self) -> Option<usize> {
        Some(self as usize)
    }
    fn to_signed(self) -> i128 {
        self.into()
    }
}
impl IndexDType for i32 {
    #[inline(always)]
    fn to_index(self) -> Option<usize> {
        usize::try_from(self).ok()
    }
    fn to_signed(self) -> i128 {
        self.into()
    }
}
impl IndexDType for i64 {
    #[inline(always)]
    fn to_index(self) -> Option<usize> {
        usize::try_from(self).ok()
    }
    fn to_signed(self) -> i128 {
        self.into()
    }
}

/// Integer element types: `u8`, `i8`, `u32`, `i32` and `i64`. Adds the bitwise ops and shifts, with PyTorch's
/// rules for a shift by a negative amount or by the bit width or more: a left shift gives 0, a right shift the
/// sign fill (0, or -1 for a negative signed value), never the C undefined behaviour.
pub trait IntDType: WithDType {
    /// Every bit set (`!0`): `u8::MAX`, `u32::MAX`, `-1` for the signed types.
    const ALL_ONES: Self;
    /// `self & rhs`.
    fn bit_and(self, rhs: Self) -> Self;
    /// `self | rhs`.
    fn bit_or(self, rhs: Self) -> Self;
    /// `self ^ rhs`.
    fn bit_xor(self, rhs: Self) -> Self;
    /// `self << amount`, 0 when `amount` is negative or at least the bit width.
    fn shift_left(self, amount: Self) -> Self;
    /// `self >> amount` (arithmetic for the signed types), the sign fill when `amount` is negative or at least
    /// the width.
    fn shift_right(self, amount: Self) -> Self;
}
macro_rules! int_dtype {
    ($($t:ty),*) => {$(
        impl IntDType for $t {
            const ALL_ONES: Self = !0;
            #[inline(always)]
            fn bit_and(self, rhs: Self) -> Self {
                self & rhs
            }
            #[inline(always)]
            fn bit_or(self, rhs: Self) -> Self {
                self | rhs
            }
            #[inline(always)]
            fn bit_xor(self, rhs: Self) -> Self {
                self ^ rhs
            }
            #[inline(always)]
            fn shift_left(self, amount: Self) -> Self {
                // A negative amount reads as a huge unsigned one (sign-extended): out of range either way.
                u32::try_from(amount as i64 as u64).ok().and_then(|n| self.checked_shl(n)).unwrap_or(0)
            }
            #[inline(always)]
            fn shift_right(self, amount: Self) -> Self {
                let fill = if self < (0 as $t) { !0 } else { 0 };
                u32::try_from(amount as i64 as u64).ok().and_then(|n| self.checked_shr(n)).unwrap_or(fill)
            }
        }
    )*};
}
int_dtype!(u8, i8, u32, i32, i64);

/// Element types with a sign: `i8`, `i32`, `i64` and the floats. Adds `neg` and `abs`.
pub trait SignedDType: WithDType {
    /// `-self`; an integer type's minimum wraps to itself.
    fn neg(self) -> Self;
    /// `|self|`; an integer type's minimum wraps to itself.
    fn abs(self) -> Self;
}

/// Floating-point element types: `f16`, `bf16`, `f32`, `f64`.
///
/// `f16` and `bf16` compute each function in `f32` and round the result back.
pub trait FloatDType: SignedDType {
    /// Applies an `f32` function (used for the half types) or its `f64` twin.
    fn map_f32(self, f: impl Fn(f32) -> f32, g: impl Fn(f64) -> f64) -> Self;
    /// e^x (f32, f16, bf16: the vectorisable polynomial of [`fast_math`], within 2 ulp of f32).
    fn exp(self) -> Self {
        self.map_f32(fast_math::exp_f32, num_traits::Float::exp)
    }
    /// Natural logarithm.
    fn ln(self) -> Self {
        self.map_f32(num_traits::Float::ln, num_traits::Float::ln)
    }
    /// Square root.
    fn sqrt(self) -> Self {
        self.map_f32(num_traits::Float::sqrt, num_traits::Float::sqrt)
    }
    /// Sine.
    fn sin(self) -> Self {
        self.map_f32(num_traits::Float::sin, num_traits::Float::sin)
    }
    /// Cosine.
    fn cos(self) -> Self {
        self.map_f32(num_traits::Float::cos, num_traits::Float::cos)
    }
    /// Hyperbolic tangent (vectorisable in f32).
    fn tanh(self) -> Self {
        self.map_f32(fast_math::tanh_f32, num_traits::Float::tanh)
    }
    /// 1 / (1 + e^-x) (vectorisable in f32).
    fn sigmoid(self) -> Self {
        self.map_f32(fast_math::sigmoid_f32, fast_math::f64_ref::sigmoid)
    }
    /// x / (1 + e^-x) (vectorisable in f32).
    fn silu(self) -> Self {
        self.map_f32(fast_math::silu_f32, fast_math::f64_ref::silu)
    }
    /// GELU, tanh form (vectorisable in f32).
    fn gelu_tanh(self) -> Self {
        self.map_f32(fast_math::gelu_tanh_f32, fast_math::f64_ref::gelu_tanh)
    }
    /// Error function.
    fn erf(self) -> Self {
        self.map_f32(libm::erff, libm::erf)
    }
    /// `self^e`.
    fn powf(self, e: f64) -> Self {
        self.map_f32(
            |x| num_traits::Float::powf(x, e as f32),
            |x| num_traits::Float::powf(x, e),
        )
    }
}

/// Which element types an op is defined for: its bound on `T` (the CUDA catalog instantiates the op's kernel for
/// the dtypes that meet it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
#[allow(clippy::enum_variant_names)] // named after the trait bound each op states, which the macro pastes in
pub(crate) enum Bound {
    /// Every element type.
    WithDType,
    /// The signed types: i64 and the floats.
    SignedDType,
    /// The floats.
    FloatDType,
}

impl Bound {
    /// Whether `dtype` meets the bound.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn admits(self, dtype: DType) -> bool {
        match self {
            Bound::WithDType => true,
            Bound::SignedDType => dtype.is_signed(),
            Bound::FloatDType => dtype.is_float(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cast_rules() {
        assert_eq!(cast::<f32, u8>(300.7), 255);
        assert_eq!(cast::<f32, u8>(-3.0), 0);
        assert_eq!(cast::<f64, u8>(f64::NAN), 0);
        assert_eq!(cast::<f32, i64>(-2.9), -2);
        assert_eq!(cast::<u32, u8>(300), 44);
        assert_eq!(cast::<i64, u8>(-1), 255);
        assert_eq!(cast::<i64, u32>(-1), u32::MAX);
        assert_eq!(cast::<u8, f32>(200), 200.0);
        assert_eq!(cast::<i64, i64>(i64::MIN), i64::MIN);
        // 2049 lies halfway between f16's neighbours 2048 and 2050: ties go to the even mantissa (2048).
        assert_eq!(cast::<f32, f16>(2049.0), f16::from_f32(2048.0));
        assert_eq!(cast::<f32, f16>(2051.0), f16::from_f32(2052.0));
        assert_eq!(cast::<f64, f16>(1e6), f16::INFINITY);
        assert_eq!(cast::<i64, bf16>(257), bf16::from_f32(256.0));
        assert_eq!(cast::<bf16, i64>(bf16::from_f32(-7.5)), -7);
        // i8 and i32: floats saturate, integers wrap.
        assert_eq!(cast::<f32, i8>(300.0), 127);
        assert_eq!(cast::<f64, i8>(-1e9), -128);
        assert_eq!(cast::<f32, i32>(f32::NAN), 0);
        assert_eq!(cast::<f64, i32>(3e9), i32::MAX);
        assert_eq!(cast::<f64, i32>(-2.7), -2);
        assert_eq!(cast::<i64, i8>(200), -56);
        assert_eq!(cast::<u32, i32>(u32::MAX), -1);
        assert_eq!(cast::<i8, u8>(-1), 255);
        assert_eq!(cast::<i8, i64>(-128), -128);
        assert_eq!(cast::<i32, u8>(-1), 255);
        assert_eq!(cast::<i8, f32>(-5), -5.0);
        assert_eq!(cast::<i32, f16>(2049), f16::from_f32(2048.0));
    }

    #[test]
    fn integer_division_by_zero_is_zero() {
        assert_eq!(WithDType::div(7u8, 0), 0);
        assert_eq!(WithDType::div(-7i64, 2), -3);
        assert_eq!(WithDType::div(i64::MIN, -1), i64::MIN);
        assert_eq!(WithDType::div(i8::MIN, -1), i8::MIN);
        assert_eq!(WithDType::div(-7i32, 0), 0);
        assert_eq!(WithDType::div(-7i8, 2), -3);
    }

    #[test]
    fn signed_narrow_integers_wrap_and_shift_like_pytorch() {
        assert_eq!(WithDType::add(127i8, 1), -128);
        assert_eq!(WithDType::mul(i32::MAX, 2), -2);
        assert_eq!(SignedDType::abs(i8::MIN), i8::MIN);
        assert_eq!(SignedDType::neg(-5i32), 5);
        assert_eq!(IntDType::shift_right(-16i8, 2), -4);
        assert_eq!(IntDType::shift_right(-16i8, 8), -1);
        assert_eq!(IntDType::shift_right(-16i32, -1), -1);
        assert_eq!(IntDType::shift_left(1i32, 31), i32::MIN);
        assert_eq!(IntDType::shift_left(1i8, -1), 0);
        assert_eq!(IntDType::shift_left(1i8, 8), 0);
        assert!(DType::I8.is_signed() && DType::I32.is_int() && !DType::U32.is_signed());
    }

    #[test]
    fn max_min_propagate_nan() {
        assert!(WithDType::max_of(f32::NAN, 1.0).is_nan());
        assert!(WithDType::min_of(1.0f64, f64::NAN).is_nan());
        assert!(WithDType::max_of(f16::ONE, f16::NAN).is_nan());
        assert_eq!(WithDType::max_of(3u32, 9), 9);
    }

    #[test]
    fn half_abs_and_float_fns() {
        assert_eq!(SignedDType::abs(f16::from_f32(-2.5)), f16::from_f32(2.5));
        assert_eq!(SignedDType::abs(bf16::from_f32(-2.5)), bf16::from_f32(2.5));
        assert_eq!(FloatDType::exp(0.0f32), 1.0);
        assert!((FloatDType::erf(1.0f64) - 0.842_700_792_949_715).abs() < 1e-15);
    }
}
