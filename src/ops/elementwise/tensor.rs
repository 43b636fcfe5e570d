//! Elementwise ops: unary math, binary arithmetic with suffix broadcasting, scalars, comparisons, `where_cond`.
//!
//! Which methods exist depends on the element type (see [`crate::dtype`]): `exp` on a `u8` tensor does not
//! compile.

use super::calls::{Binary, Compare, Scalar, Select, Unary};
use crate::dtype::{SignedDType, WithDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::Device;
use crate::ops::{self, BinaryOp, CmpOp, UnaryOp};
use crate::shape::{BroadcastShapes, Shape};
use crate::tensor::tiny::{run, Checked, Panics};
use crate::tensor::{call, device_ok, written, Tensor};

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Applies any [`UnaryOp`] (the named methods below are shorthands).
    #[inline]
    pub fn unary<Op: UnaryOp<T>>(&self, op: Op) -> Self {
        run(Unary { op, x: self })
    }

    /// Applies any [`BinaryOp`] with suffix broadcasting; panics if runtime-sized dims disagree.
    #[inline]
    #[track_caller]
    pub fn binary<S2: Shape, Op: BinaryOp<T>>(
        &self,
        op: Op,
        rhs: &Tensor<T, S2, D>,
    ) -> Tensor<T, <S as BroadcastShapes<S2>>::Output, D>
    where
        S: BroadcastShapes<S2>,
    {
        run(Binary {
            op,
            a: self,
            b: rhs,
            on_error: Panics,
        })
    }

    /// [`Self::binary`] returning `Error::ShapeMismatch` when runtime-sized dims disagree (and device errors).
    #[inline]
    pub fn try_binary<S2: Shape, Op: BinaryOp<T>>(
        &self,
        op: Op,
        rhs: &Tensor<T, S2, D>,
    ) -> Result<Tensor<T, <S as BroadcastShapes<S2>>::Output, D>>
    where
        S: BroadcastShapes<S2>,
    {
        run(Binary {
            op,
            a: self,
            b: rhs,
            on_error: Checked,
        })
    }

    #[inline]
    #[track_caller]
    fn compare<S2: Shape>(
        &self,
        op: CmpOp,
        rhs: &Tensor<T, S2, D>,
    ) -> Tensor<u8, <S as BroadcastShapes<S2>>::Output, D>
    where
        S: BroadcastShapes<S2>,
    {
        run(Compare {
            op,
            a: self,
            b: rhs,
        })
    }

    /// `op(self, value)`, or `op(value, self)` when `scalar_first`: the scalar is a one-element buffer read with
    /// stride 0 by the same binary kernels.
    #[inline]
    pub(super) fn scalar_op<Op: BinaryOp<T>>(&self, op: Op, value: T, scalar_first: bool) -> Self {
        run(Scalar {
            op,
            x: self,
            value,
            scalar_first,
        })
    }

    /// `value` as a one-element buffer and a layout that reads it (stride 0) at every position of `self`.
    pub(crate) fn scalar_operand(&self, op: &'static str, value: T) -> (D::Storage<T, ()>, Layout) {
        let scalar = device_ok(D::full(1, value));
        let ls = device_ok(Layout::contiguous(Default::default()).broadcast_as(op, &self.dims()));
        (scalar, ls)
    }

    /// `x * x`.
    pub fn sqr(&self) -> Self {
        self.unary(ops::Sqr)
    }
    /// Every element clamped to `[lo, hi]`; NaN stays NaN.
    pub fn clamp(&self, lo: T, hi: T) -> Self {
        self.unary(ops::Clamp { lo, hi })
    }
    /// The elementwise maximum (NaN-propagating), with suffix broadcasting.
    #[track_caller]
    pub fn maximum<S2: Shape>(
        &self,
        rhs: &Tensor<T, S2, D>,
    ) -> Tensor<T, <S as BroadcastShapes<S2>>::Output, D>
    where
        S: BroadcastShapes<S2>,
    {
        self.binary(ops::Maximum, rhs)
    }
    /// The elementwise minimum (NaN-propagating), with suffix broadcasting.
    #[track_caller]
    pub fn minimum<S2: Shape>(
        &self,
        rhs: &Tensor<T, S2, D>,
    ) -> Tensor<T, <S as BroadcastShapes<S2>>::Output, D>
    where
        S: BroadcastShapes<S2>,
    {
        self.binary(ops::Minimum, rhs)
    }
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Every element clamped between tensors of bounds, each broadcast to this tensor's shape (PyTorch's
    /// `clamp(x, min=lo, max=hi)` with tensor bounds): `minimum(maximum(x, lo), hi)`, so where `lo > hi` the
    /// result is `hi`, as in PyTorch; NaN propagates.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([[-2., 0.5, 3.], [1., 1., 1.]]);
    /// let lo = Tensor::<f32, _, Cpu>::from_array([0., 0., 2.]); // per column, broadcast over the rows
    /// let hi = Tensor::<f32, _, Cpu>::from_array([[1., 1., 1.], [0.5, 2., 3.]]);
    /// assert_eq!(x.clamp_tensor(&lo, &hi).to_array(), [[0., 0.5, 1.], [0.5, 1., 2.]]);
    /// ```
    #[track_caller]
    pub fn clamp_tensor<S2: Shape, S3: Shape>(
        &self,
        lo: &Tensor<T, S2, D>,
        hi: &Tensor<T, S3, D>,
    ) -> Self
    where
        S: BroadcastShapes<S2, Output = S> + BroadcastShapes<S3, Output = S>,
    {
        self.maximum(lo).minimum(hi)
    }
}

/// The binary methods of one element-type bound (`FloatDType`: `atan2`, `pow`, ..; `IntDType`: the bitwise ops),
/// each a broadcasting call of its op.
macro_rules! bound_binary_methods {
    ($bound:path; $($(#[$m:meta])* $name:ident $op:ident),*) => {
        impl<T: $bound, S: Shape, D: Device> Tensor<T, S, D> {
            $(
                $(#[$m])*
                #[track_caller]
                pub fn $name<S2: Shape>(
                    &self,
                    rhs: &Tensor<T, S2, D>,
                ) -> Tensor<T, <S as BroadcastShapes<S2>>::Output, D>
                where
                    S: BroadcastShapes<S2>,
                {
                    self.binary(ops::$op, rhs)
                }
            )*
        }
    };
}
bound_binary_methods!(crate::dtype::IntDType;
    /// `self & rhs` elementwise on integer tensors, with suffix broadcasting (PyTorch's `bitwise_and`).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<u8, _, Cpu>::from_array([0b1100, 0b1010]);
    /// let y = Tensor::<u8, _, Cpu>::from_array([0b1010, 0b1010]);
    /// assert_eq!(x.bitwise_and(&y).to_array(), [0b1000, 0b1010]);
    /// assert_eq!(x.bitwise_xor(&y).to_array(), [0b0110, 0]);
    /// assert_eq!(x.bitwise_not().to_array(), [0b1111_0011, 0b1111_0101]);
    /// let k = Tensor::<i64, _, Cpu>::from_array([-8, 8]);
    /// let by = Tensor::<i64, _, Cpu>::from_array([1, 64]);
    /// assert_eq!(k.bitwise_right_shift(&by).to_array(), [-4, 0]); // arithmetic; 64 places: the sign fill
    /// ```
    bitwise_and BitAnd,
    /// `self | rhs` (PyTorch's `bitwise_or`).
    bitwise_or BitOr,
    /// `self ^ rhs` (PyTorch's `bitwise_xor`).
    bitwise_xor BitXor,
    /// `self << rhs` (PyTorch's `bitwise_left_shift`): 0 where `rhs` is negative or at least the bit width.
    bitwise_left_shift ShiftLeft,
    /// `self >> rhs`, arithmetic for `i64` (PyTorch's `bitwise_right_shift`): the sign fill where `rhs` is negative
    /// or at least the bit width.
    bitwise_right_shift ShiftRight
);

impl<T: crate::dtype::IntDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Every bit flipped (PyTorch's `bitwise_not`): `x ^ !0`, one pass with the all-ones constant read in place.
    pub fn bitwise_not(&self) -> Self {
        let (ones, lo) = self.scalar_operand("bitwise_not", T::ALL_ONES);
        let la = self.layout();
        let (lhs, rhs) = ((self.buffer(), &la), (D::buffer(&ones), &lo));
        written!(
            Self::written_by,
            self.shape(),
            "bitwise_not",
            call::binary::<T, D, _>(ops::BitXor, lhs, rhs)
        )
    }
}

macro_rules! cmp_methods {
    ($($(#[$m:meta])* $name:ident $op:ident),*) => {
        impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
            $(
                $(#[$m])*
                #[track_caller]
                pub fn $name<S2: Shape>(
                    &self,
                    rhs: &Tensor<T, S2, D>,
                ) -> Tensor<u8, <S as BroadcastShapes<S2>>::Output, D>
                where
                    S: BroadcastShapes<S2>,
                {
                    self.compare(CmpOp::$op, rhs)
                }
            )*
        }
    };
}
cmp_methods!(
    /// `1` where `self == rhs`, else `0` (NaN is unequal to everything).
    eq Eq,
    /// `1` where `self != rhs`.
    ne Ne,
    /// `1` where `self < rhs`.
    lt Lt,
    /// `1` where `self <= rhs`.
    le Le,
    /// `1` where `self > rhs`.
    gt Gt,
    /// `1` where `self >= rhs`.
    ge Ge
);

bound_binary_methods!(crate::dtype::FloatDType;
    /// `atan2(self, rhs)`: the angle of the point `(rhs, self)`, in `(-pi, pi]`, with suffix broadcasting.
    atan2 Atan2,
    /// `self ^ rhs` elementwise (C's `pow`: a negative base with a non-integer exponent is NaN).
    ///
    /// ```
    /// # use typed_tensor::prelude::*;
    /// let base = Tensor::<f32, _, Cpu>::from_array([[2.0, 3.0], [4.0, 9.0]]);
    /// let exponent = Tensor::<f32, _, Cpu>::from_array([2.0, 0.5]); // broadcast over the rows
    /// assert_eq!(base.pow(&exponent).to_array(), [[4.0, 3f32.sqrt()], [16.0, 3.0]]);
    /// ```
    pow Pow,
    /// C's remainder, `self - trunc(self / rhs) rhs`: the sign of `self` (PyTorch's `fmod`; `-7 fmod 3 = -1`).
    fmod Fmod,
    /// Python's remainder, `self - floor(self / rhs) rhs`: the sign of `rhs` (PyTorch's `remainder` and Python's
    /// `%`; `-7 remainder 3 = 2`).
    remainder Remainder
);

/// Logical ops on masks (any non-zero byte is true, as in PyTorch's `logical_*`), composed from the comparisons
/// and `maximum`/`mul`; the results are 0/1 masks.
impl<S: Shape, D: Device> Tensor<u8, S, D> {
    /// `1` where the mask is zero.
    ///
    /// ```
    /// # use typed_tensor::prelude::*;
    /// let a = Tensor::<u8, _, Cpu>::from_array([[0, 1], [7, 0]]);
    /// let b = Tensor::<u8, _, Cpu>::from_array([1, 0]); // broadcast over the rows
    /// assert_eq!(a.logical_not().to_array(), [[1, 0], [0, 1]]);
    /// assert_eq!(a.logical_and(&b).to_array(), [[0, 0], [1, 0]]);
    /// assert_eq!(a.logical_or(&b).to_array(), [[1, 1], [1, 0]]);
    /// assert_eq!(a.logical_xor(&b).to_array(), [[1, 1], [0, 0]]);
    /// ```
    pub fn logical_not(&self) -> Self {
        // Compared with `self - self`, the zeros of this shape (u8 arithmetic wraps, so it is exact).
        let zeros = self.zip_same(ops::Sub, self);
        self.compare_same(CmpOp::Eq, &zeros)
    }

    /// `1` where both are non-zero, with suffix broadcasting.
    #[track_caller]
    pub fn logical_and<S2: Shape>(
        &self,
        rhs: &Tensor<u8, S2, D>,
    ) -> Tensor<u8, <S as BroadcastShapes<S2>>::Output, D>
    where
        S: BroadcastShapes<S2>,
    {
        self.truth().binary(ops::Mul, &rhs.truth())
    }

    /// `1` where either is non-zero, with suffix broadcasting.
    #[track_caller]
    pub fn logical_or<S2: Shape>(
        &self,
        rhs: &Tensor<u8, S2, D>,
    ) -> Tensor<u8, <S as BroadcastShapes<S2>>::Output, D>
    where
        S: BroadcastShapes<S2>,
    {
        self.truth().binary(ops::Maximum, &rhs.truth())
    }

    /// `1` where exactly one is non-zero, with suffix broadcasting.
    #[track_caller]
    pub fn logical_xor<S2: Shape>(
        &self,
        rhs: &Tensor<u8, S2, D>,
    ) -> Tensor<u8, <S as BroadcastShapes<S2>>::Output, D>
    where
        S: BroadcastShapes<S2>,
    {
        self.truth().ne(&rhs.truth())
    }

    /// The mask as 0/1: clamped to [0, 1].
    fn truth(&self) -> Self {
        self.unary(ops::Clamp { lo: 0, hi: 1 })
    }
}

/// Masks of special float values, composed from the comparisons (one pass for `isnan`, two for the others).
impl<T: crate::dtype::FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// `1` where the element is NaN (the one value unequal to itself), else `0`.
    ///
    /// ```
    /// # use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([1.0, f32::NAN, f32::INFINITY]);
    /// assert_eq!(x.isnan().to_vec(), [0, 1, 0]);
    /// assert_eq!(x.isinf().to_vec(), [0, 0, 1]);
    /// assert_eq!(x.isfinite().to_vec(), [1, 0, 0]);
    /// ```
    pub fn isnan(&self) -> Tensor<u8, S, D> {
        self.compare_same(CmpOp::Ne, self)
    }

    /// `1` where the element is finite (neither infinite nor NaN): `x - x` is 0 exactly there, NaN elsewhere.
    pub fn isfinite(&self) -> Tensor<u8, S, D> {
        let d = self.zip_same(ops::Sub, self);
        d.compare_same(CmpOp::Eq, &d)
    }

    /// `1` where the element is `+inf` or `-inf`: neither finite nor NaN (the two masks are never both 1, so
    /// they are equal exactly there).
    pub fn isinf(&self) -> Tensor<u8, S, D> {
        self.isfinite().compare_same(CmpOp::Eq, &self.isnan())
    }
}

/// Same-shape forms of a binary op and of a comparison: one kernel call, no broadcasting relation to name (every
/// shape has them). The backward rules (`zip_same`), the masks above and the float masks of `mask_scalar` use them.
impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// `op(self, rhs)` for two tensors of one shape.
    pub(crate) fn zip_same<Op: BinaryOp<T>>(&self, op: Op, rhs: &Self) -> Self {
        debug_assert_eq!(self.dims(), rhs.dims());
        let (la, lb) = (self.layout(), rhs.layout());
        let (lhs, rhs) = ((self.buffer(), &la), (rhs.buffer(), &lb));
        written!(
            Self::written_by,
            self.shape(),
            Op::NAME,
            call::binary::<T, D, _>(op, lhs, rhs)
        )
    }

    /// A `u8` mask, 1 where `op(self, rhs)` holds, `rhs` read through a layout of this tensor's dims.
    pub(crate) fn compare_view(
        &self,
        op: CmpOp,
        rhs: (&D::Buffer<T>, &Layout),
    ) -> Tensor<u8, S, D> {
        let la = self.layout();
        let lhs = (self.buffer(), &la);
        written!(
            Tensor::<u8, S, D>::written_by,
            self.shape(),
            op.name(),
            call::compare::<T, D>(op, lhs, rhs),
        )
    }

    /// [`Self::compare_view`] against `value` at every position.
    pub(crate) fn compare_scalar(&self, op: CmpOp, value: T) -> Tensor<u8, S, D> {
        let (scalar, ls) = self.scalar_operand(op.name(), value);
        self.compare_view(op, (D::buffer(&scalar), &ls))
    }

    /// `where(mask, on_true, on_false)` over views with this tensor's dims, into a fresh tensor of its shape: the
    /// one kernel call of `where_cond` and the masking ops (`masked_fill`, `where_scalar`, `tril`).
    pub(crate) fn select(
        &self,
        mask: (&D::Buffer<u8>, &Layout),
        on_true: (&D::Buffer<T>, &Layout),
        on_false: (&D::Buffer<T>, &Layout),
    ) -> Self {
        written!(
            Self::written_by,
            self.shape(),
            "where_cond",
            call::where_cond::<T, D>(mask, on_true, on_false),
        )
    }

    /// [`Self::compare_view`] against a tensor of the same shape.
    fn compare_same(&self, op: CmpOp, rhs: &Self) -> Tensor<u8, S, D> {
        self.compare_view(op, (rhs.buffer(), &rhs.layout()))
    }
}

impl<S: Shape, D: Device> Tensor<u8, S, D> {
    /// Picks `on_true` where the mask is non-zero and `on_false` elsewhere.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([-1., 2., -3.]);
    /// let zero = Tensor::<f32, Rank1<3>, Cpu>::zeros();
    /// let relu = x.gt(&zero).where_cond(&x, &zero);
    /// assert_eq!(relu.to_vec(), [0., 2., 0.]);
    /// ```
    #[inline]
    #[track_caller]
    pub fn where_cond<T: WithDType>(
        &self,
        on_true: &Tensor<T, S, D>,
        on_false: &Tensor<T, S, D>,
    ) -> Tensor<T, S, D> {
        run(Select {
            mask: self,
            on_true,
            on_false,
        })
    }
}

impl<T: SignedDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// `|x|`.
    pub fn abs(&self) -> Self {
        self.unary(ops::Abs)
    }
}
