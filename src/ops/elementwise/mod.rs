//! Elementwise ops: the descriptors ([`UnaryOp`], [`BinaryOp`], [`CmpOp`] and the ops themselves), the `Tensor`
//! methods with suffix broadcasting, scalars and operators (`tensor.rs`), the differentiable float functions with
//! their `Tensor` and `Traced` methods generated from one row each (`float_fns.rs`), their in-place and `_into` forms
//! (`in_place.rs`), the traced forms and their gradients (`traced.rs`), and the device side,
//! [`ElementwiseKernels`]: the host loops `Cpu` and `Embedded` share (`host.rs`) and the CUDA launchers
//! (`cuda.rs`, sources in `src/ops/elementwise/unary.cu` and `src/ops/elementwise/binary.cu`).

mod activations;
mod calls;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
mod float_fns;
pub(crate) mod host;
mod in_place;
mod masks;
mod operators;
mod prelu;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;

use crate::device::{Kernels, Operand};
use crate::dtype::fast_math;
use crate::dtype::Bound;
use crate::dtype::{FloatDType, SignedDType, WithDType};
use crate::error::Result;
use crate::layout::Layout;

/// A unary elementwise op on `T`, with up to two scalar parameters (already rounded to `T`).
pub trait UnaryOp<T: WithDType>: Copy + Send + Sync + 'static {
    /// Kernel name stem: CUDA launches `{NAME}_{dtype}`.
    const NAME: &'static str;
    /// The op on one element.
    fn apply(&self, x: T) -> T;
    /// The scalar parameters the kernel receives (`affine`'s mul and add, `clamp`'s bounds, ...).
    fn params(&self) -> [T; 2] {
        [T::ZERO; 2]
    }
    /// Where the library's compiled host kernels of this op sit in an element type's table (`None`, the
    /// default: the op's loops are compiled where it is used; see `ops::compiled`).
    #[doc(hidden)]
    #[cfg(feature = "alloc")]
    const COMPILED: Option<usize> = None;
}

/// A binary elementwise op on `T`.
pub trait BinaryOp<T: WithDType>: Copy + Send + Sync + 'static {
    /// Kernel name stem: CUDA launches `{NAME}_{dtype}`.
    const NAME: &'static str;
    /// The op on one pair of elements.
    fn apply(&self, a: T, b: T) -> T;
    /// As [`UnaryOp::COMPILED`].
    #[doc(hidden)]
    #[cfg(feature = "alloc")]
    const COMPILED: Option<usize> = None;
}

/// Elementwise comparisons; the result is a `u8` mask (1 where true).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// All comparisons.
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];
    /// Kernel name stem.
    pub const fn name(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
        }
    }
    /// The comparison on one pair (IEEE semantics: NaN compares unequal to everything).
    #[inline(always)]
    pub fn apply<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }
}

/// The family's kernels, which every device implements; [`crate::ops::Device`] requires them beside
/// [`Kernels`]. Binary, compare and where kernels receive operand layouts already broadcast to the output dims.
///
/// # Safety
///
/// As for [`Kernels`]: each kernel initialises its whole output whenever it returns `Ok`, and reads `out` only
/// when given [`Operand::Out`].
pub unsafe trait ElementwiseKernels: Kernels {
    /// `op` on every element (of `out` itself for [`Operand::Out`]).
    fn unary<T: WithDType, Op: UnaryOp<T>>(
        op: Op,
        src: Operand<'_, Self::Buffer<T>>,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
    /// `op` on every pair (`lhs` may be `out` itself: [`Operand::Out`] with `rhs`'s dims).
    fn binary<T: WithDType, Op: BinaryOp<T>>(
        op: Op,
        lhs: Operand<'_, Self::Buffer<T>>,
        rhs: (&Self::Buffer<T>, &Layout),
        out: &mut Self::Out<T>,
    ) -> Result<()>;
    /// A `u8` mask, 1 where `op` holds.
    fn compare<T: WithDType>(
        op: CmpOp,
        lhs: (&Self::Buffer<T>, &Layout),
        rhs: (&Self::Buffer<T>, &Layout),
        out: &mut Self::Out<u8>,
    ) -> Result<()>;
    /// `on_true` where the mask is non-zero, `on_false` elsewhere.
    fn where_cond<T: WithDType>(
        mask: (&Self::Buffer<u8>, &Layout),
        on_true: (&Self::Buffer<T>, &Layout),
        on_false: (&Self::Buffer<T>, &Layout),
        out: &mut Self::Out<T>,
    ) -> Result<()>;
}
/// Defines the plain binary ops (every element type) and [`BINARY_STEMS`], their kernel names, from one list.
macro_rules! binary_ops {
    ($($(#[$m:meta])* $name:ident, $stem:literal, |$a:ident, $b:ident| $body:expr;)*) => {
        $(
            $(#[$m])*
            #[derive(Clone, Copy, Debug, Default)]
            pub struct $name;
            impl<T: WithDType> BinaryOp<T> for $name {
                const NAME: &'static str = $stem;
                #[cfg(feature = "alloc")]
                const COMPILED: Option<usize> = crate::ops::compiled::binary_index($stem);
                #[inline(always)]
                fn apply(&self, $a: T, $b: T) -> T {
                    $body
                }
            }
        )*
        /// The kernel name stem of every binary op: CUDA instantiates `{stem}_{dtype}` for every dtype.
        #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
        pub(crate) const BINARY_STEMS: &[&str] = &[$($stem),*];
    };
}
binary_ops! {
    /// `a + b`
    Add, "add", |a, b| a.add(b);
    /// `a - b`
    Sub, "sub", |a, b| a.sub(b);
    /// `a * b`
    Mul, "mul", |a, b| a.mul(b);
    /// `a / b`
    Div, "div", |a, b| a.div(b);
    /// The larger element.
    Maximum, "maximum", |a, b| a.max_of(b);
    /// The smaller element.
    Minimum, "minimum", |a, b| a.min_of(b);
}

/// Defines the float-only binary ops and [`FLOAT_BINARY_STEMS`], their kernel names: evaluated in f64 and rounded
/// once on the host devices, in the accumulator type on CUDA.
macro_rules! float_binary_ops {
    ($($(#[$m:meta])* $name:ident, $stem:literal, |$a:ident, $b:ident| $body:expr;)*) => {
        $(
            $(#[$m])*
            #[derive(Clone, Copy, Debug, Default)]
            pub struct $name;
            impl<T: crate::dtype::FloatDType> BinaryOp<T> for $name {
                const NAME: &'static str = $stem;
                #[cfg(feature = "alloc")]
                const COMPILED: Option<usize> = crate::ops::compiled::binary_index($stem);
                #[inline(always)]
                fn apply(&self, a: T, b: T) -> T {
                    let ($a, $b) = (a.to_f64(), b.to_f64());
                    T::from_f64($body)
                }
            }
        )*
        /// The kernel name stems of the float-only binary ops (CUDA instantiates them for the float dtypes).
        #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
        pub(crate) const FLOAT_BINARY_STEMS: &[&str] = &[$($stem),*];
    };
}
float_binary_ops! {
    /// The angle of the point `(b, a)`: `atan2(a, b)` in `(-pi, pi]`.
    Atan2, "atan2", |a, b| libm::atan2(a, b);
    /// `a ^ b`, with C's `pow` conventions (`pow(x, 0) = 1` even for NaN `x`; a negative base with a non-integer
    /// exponent is NaN).
    Pow, "pow", |a, b| libm::pow(a, b);
    /// C's remainder: `a - trunc(a / b) b`, with the sign of `a` (PyTorch's `fmod`).
    Fmod, "fmod", |a, b| libm::fmod(a, b);
    /// Python's remainder: `a - floor(a / b) b`, with the sign of `b` (PyTorch's `remainder`, Python's `%`).
    Remainder, "remainder", |a, b| python_remainder(a, b);
    /// `b` where `a > 0`, else 0: ReLU's gradient `g` passed through where the input `a` was positive, in one pass
    /// (PyTorch's `threshold_backward`; composed from a mask it took four launches on CUDA).
    ReluBackward, "relu_backward", |a, b| if a > 0.0 { b } else { 0.0 };
}

/// Defines the integer-only binary ops and [`INT_BINARY_STEMS`], their kernel names (PyTorch's op names).
macro_rules! int_binary_ops {
    ($($(#[$m:meta])* $name:ident, $stem:literal, $method:ident;)*) => {
        $(
            $(#[$m])*
            #[derive(Clone, Copy, Debug, Default)]
            pub struct $name;
            impl<T: crate::dtype::IntDType> BinaryOp<T> for $name {
                const NAME: &'static str = $stem;
                #[inline(always)]
                fn apply(&self, a: T, b: T) -> T {
                    a.$method(b)
                }
            }
        )*
        /// The kernel name stems of the integer-only binary ops (CUDA instantiates them for the five integer types).
        #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
        pub(crate) const INT_BINARY_STEMS: &[&str] = &[$($stem),*];
    };
}
int_binary_ops! {
    /// `a & b`.
    BitAnd, "bitwise_and", bit_and;
    /// `a | b`.
    BitOr, "bitwise_or", bit_or;
    /// `a ^ b`.
    BitXor, "bitwise_xor", bit_xor;
    /// `a << b` (0 for a negative or too large `b`, see [`crate::dtype::IntDType`]).
    ShiftLeft, "bitwise_left_shift", shift_left;
    /// `a >> b`, arithmetic for `i64` (the sign fill for a negative or too large `b`).
    ShiftRight, "bitwise_right_shift", shift_right;
}

/// `a mod b` with the sign of `b`: C's `fmod` moved by one `b` when the signs differ.
fn python_remainder(a: f64, b: f64) -> f64 {
    let r = libm::fmod(a, b);
    if r != 0.0 && (r < 0.0) != (b < 0.0) {
        r + b
    } else {
        r
    }
}

/// Defines the parameterless unary ops and [`UNARY_STEMS`], their kernel names with their bounds, from one list.
macro_rules! unary_ops {
    ($($(#[$m:meta])* $name:ident, $stem:literal, $bound:ident, |$x:ident| $body:expr;)*) => {
        $(
            $(#[$m])*
            #[derive(Clone, Copy, Debug, Default)]
            pub struct $name;
            impl<T: $bound> UnaryOp<T> for $name {
                const NAME: &'static str = $stem;
                #[cfg(feature = "alloc")]
                const COMPILED: Option<usize> = crate::ops::compiled::unary_index($stem);
                #[inline(always)]
                fn apply(&self, $x: T) -> T {
                    $body
                }
            }
        )*
        /// The kernel name stem and bound of every unary op: the ops above and the three with scalar parameters
        /// ([`Powf`], [`Affine`], [`Clamp`]); the activations with parameters are in [`PARAM_STEMS`].
        #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
        pub(crate) const UNARY_STEMS: &[(&str, Bound)] = &[
            $(($stem, Bound::$bound),)*
            (<Powf<f32> as UnaryOp<f32>>::NAME, Bound::FloatDType),
            (<Affine<f32> as UnaryOp<f32>>::NAME, Bound::FloatDType),
            (<Clamp<u8> as UnaryOp<u8>>::NAME, Bound::WithDType),
        ];
    };
}
unary_ops! {
    /// `-x`
    Neg, "neg", SignedDType, |x| x.neg();
    /// `|x|`
    Abs, "abs", SignedDType, |x| x.abs();
    /// `x * x`
    Sqr, "sqr", WithDType, |x| x.mul(x);
    /// e^x
    Exp, "exp", FloatDType, |x| x.exp();
    /// ln x
    Ln, "ln", FloatDType, |x| x.ln();
    /// sqrt x
    Sqrt, "sqrt", FloatDType, |x| x.sqrt();
    /// 1 / x
    Recip, "recip", FloatDType, |x| T::ONE.div(x);
    /// sin x
    Sin, "sin", FloatDType, |x| x.sin();
    /// cos x
    Cos, "cos", FloatDType, |x| x.cos();
    /// tanh x
    Tanh, "tanh", FloatDType, |x| x.tanh();
    /// 1 / (1 + e^-x).
    Sigmoid, "sigmoid", FloatDType, |x| x.sigmoid();
    /// max(x, 0); NaN stays NaN.
    Relu, "relu", FloatDType, |x| if x < T::ZERO { T::ZERO } else { x };
    /// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
    GeluTanh, "gelu_tanh", FloatDType, |x| x.gelu_tanh();
    /// GELU, exact: 0.5 x (1 + erf(x / sqrt 2)), evaluated in f64 and rounded once.
    GeluErf, "gelu_erf", FloatDType, |x| T::from_f64(fast_math::f64_ref::gelu_erf(x.to_f64()));
    /// SiLU (swish): x / (1 + e^-x).
    Silu, "silu", FloatDType, |x| x.silu();
    /// The error function, erf x = 2/sqrt(pi) * integral of e^(-t^2) from 0 to x.
    Erf, "erf", FloatDType, |x| T::from_f64(activations::erf(x.to_f64()));
    /// The complementary error function, 1 - erf x (accurate where erf x is near 1).
    Erfc, "erfc", FloatDType, |x| T::from_f64(activations::erfc(x.to_f64()));
    /// x / (1 + |x|).
    Softsign, "softsign", FloatDType, |x| T::from_f64(activations::softsign(x.to_f64()));
    /// min(max(x, 0), 6); NaN stays NaN.
    Relu6, "relu6", FloatDType, |x| T::from_f64(activations::relu6(x.to_f64()));
    /// 0 for x <= -3, 1 for x >= 3, x / 6 + 1/2 between.
    Hardsigmoid, "hardsigmoid", FloatDType, |x| T::from_f64(activations::hardsigmoid(x.to_f64()));
    /// 0 for x <= -3, x for x >= 3, x (x + 3) / 6 between.
    Hardswish, "hardswish", FloatDType, |x| T::from_f64(activations::hardswish(x.to_f64()));
    /// x tanh(softplus(x)).
    Mish, "mish", FloatDType, |x| T::from_f64(activations::mish(x.to_f64()));
    /// ln(sigmoid(x)) = -softplus(-x).
    LogSigmoid, "log_sigmoid", FloatDType, |x| T::from_f64(activations::log_sigmoid(x.to_f64()));
    /// SELU: scale * x for x > 0, scale * alpha * (e^x - 1) otherwise ([`SELU_SCALE`], [`SELU_ALPHA`]).
    Selu, "selu", FloatDType, |x| T::from_f64(activations::selu(x.to_f64()));
    /// The largest integer <= x.
    Floor, "floor", FloatDType, |x| T::from_f64(libm::floor(x.to_f64()));
    /// The smallest integer >= x.
    Ceil, "ceil", FloatDType, |x| T::from_f64(libm::ceil(x.to_f64()));
    /// The nearest integer, halves to even (PyTorch's and NumPy's `round`: 0.5 -> 0, 1.5 -> 2, -2.5 -> -2).
    Round, "round", FloatDType, |x| T::from_f64(libm::rint(x.to_f64()));
    /// x with its fraction dropped (towards zero).
    Trunc, "trunc", FloatDType, |x| T::from_f64(libm::trunc(x.to_f64()));
    /// 1 for x > 0, -1 for x < 0, x itself for zeros (keeping their sign) and NaN.
    Sign, "sign", FloatDType, |x| if x > T::ZERO { T::ONE } else if x < T::ZERO { T::ONE.neg() } else { x };
    /// ln(1 + x), accurate for small x.
    Log1p, "log1p", FloatDType, |x| T::from_f64(libm::log1p(x.to_f64()));
    /// e^x - 1, accurate for small x.
    Expm1, "expm1", FloatDType, |x| T::from_f64(libm::expm1(x.to_f64()));
    /// log2 x.
    Log2, "log2", FloatDType, |x| T::from_f64(libm::log2(x.to_f64()));
    /// log10 x.
    Log10, "log10", FloatDType, |x| T::from_f64(libm::log10(x.to_f64()));
    /// 2^x.
    Exp2, "exp2", FloatDType, |x| T::from_f64(libm::exp2(x.to_f64()));
    /// 1 / sqrt x.
    Rsqrt, "rsqrt", FloatDType, |x| T::from_f64(1.0 / libm::sqrt(x.to_f64()));
    /// tan x.
    Tan, "tan", FloatDType, |x| T::from_f64(libm::tan(x.to_f64()));
    /// arcsin x (NaN outside [-1, 1]).
    Asin, "asin", FloatDType, |x| T::from_f64(libm::asin(x.to_f64()));
    /// arccos x (NaN outside [-1, 1]).
    Acos, "acos", FloatDType, |x| T::from_f64(libm::acos(x.to_f64()));
    /// arctan x.
    Atan, "atan", FloatDType, |x| T::from_f64(libm::atan(x.to_f64()));
    /// sinh x.
    Sinh, "sinh", FloatDType, |x| T::from_f64(libm::sinh(x.to_f64()));
    /// cosh x.
    Cosh, "cosh", FloatDType, |x| T::from_f64(libm::cosh(x.to_f64()));
    /// arsinh x.
    Asinh, "asinh", FloatDType, |x| T::from_f64(libm::asinh(x.to_f64()));
    /// arcosh x (NaN below 1).
    Acosh, "acosh", FloatDType, |x| T::from_f64(libm::acosh(x.to_f64()));
    /// artanh x (NaN outside [-1, 1], infinite at +-1).
    Atanh, "atanh", FloatDType, |x| T::from_f64(libm::atanh(x.to_f64()));
}

#[cfg(feature = "cuda")]
pub(crate) use activations::PARAM_STEMS;
pub use activations::{Celu, Elu, LeakyRelu, Softplus, SELU_ALPHA, SELU_SCALE};

/// `x ^ e` (e rounded to `T`).
#[derive(Clone, Copy, Debug)]
pub struct Powf<T>(pub T);
impl<T: FloatDType> UnaryOp<T> for Powf<T> {
    const NAME: &'static str = "powf";
    #[inline(always)]
    fn apply(&self, x: T) -> T {
        x.powf(self.0.to_f64())
    }
    fn params(&self) -> [T; 2] {
        [self.0, T::ZERO]
    }
}

/// `x * mul + add` (both rounded to `T`), computed in f64 and rounded once.
#[derive(Clone, Copy, Debug)]
pub struct Affine<T> {
    /// Factor.
    pub mul: T,
    /// Offset.
    pub add: T,
}
impl<T: FloatDType> UnaryOp<T> for Affine<T> {
    const NAME: &'static str = "affine";
    #[cfg(feature = "alloc")]
    const COMPILED: Option<usize> = crate::ops::compiled::unary_index(Self::NAME);
    #[inline(always)]
    fn apply(&self, x: T) -> T {
        T::from_f64(x.to_f64() * self.mul.to_f64() + self.add.to_f64())
    }
    fn params(&self) -> [T; 2] {
        [self.mul, self.add]
    }
}

/// `min(max(x, lo), hi)`; NaN stays NaN.
#[derive(Clone, Copy, Debug)]
pub struct Clamp<T> {
    /// Lower bound.
    pub lo: T,
    /// Upper bound.
    pub hi: T,
}
impl<T: WithDType> UnaryOp<T> for Clamp<T> {
    const NAME: &'static str = "clamp";
    #[cfg(feature = "alloc")]
    const COMPILED: Option<usize> = crate::ops::compiled::unary_index(Self::NAME);
    #[inline(always)]
    fn apply(&self, x: T) -> T {
        x.max_of(self.lo).min_of(self.hi)
    }
    fn params(&self) -> [T; 2] {
        [self.lo, self.hi]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activations_known_values() {
        // Reference values from Python's math module in f64 (the formulas PyTorch documents for gelu/silu).
        assert!((GeluErf.apply(1.0f64) - 0.841_344_746_068_542_9).abs() < 1e-15);
        assert!((GeluTanh.apply(1.0f64) - 0.841_191_990_608_276_8).abs() < 1e-15);
        assert!((Silu.apply(1.0f64) - 0.731_058_578_630_004_9).abs() < 1e-15);
        assert!((Sigmoid.apply(0.0f32) - 0.5).abs() < 1e-7);
        assert_eq!(Relu.apply(-2.0f32), 0.0);
        assert!(Relu.apply(f32::NAN).is_nan());
        assert_eq!(Clamp { lo: 2u8, hi: 5 }.apply(9), 5);
        assert_eq!(
            Affine {
                mul: 2.0f32,
                add: 1.0
            }
            .apply(3.0),
            7.0
        );
        assert!(CmpOp::Lt.apply(1, 2));
        assert!(!CmpOp::Eq.apply(f32::NAN, f32::NAN));
    }
}
