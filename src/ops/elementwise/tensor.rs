//! Elementwise ops: unary math, binary arithmetic with suffix broadcasting, scalars, comparisons, `where_cond`.
//!
//! Which methods exist depends on the element type (see [`crate::dtype`]): `exp` on a `u8` tensor does not
//! compile.

use crate::device::Device;
use crate::dtype::{SignedDType, WithDType};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::{self, BinaryOp, CmpOp, UnaryOp};
use crate::shape::{BroadcastShapes, Shape};
use crate::tensor::tiny::{run, same_static_dims, tiny_numel, Checked, OnError, OpCall, Panics};
use crate::tensor::{call, device_ok, written, Sink, Tensor};

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

/// [`Tensor::unary`]'s call.
pub(super) struct Unary<'a, T: WithDType, S: Shape, D: Device, Op> {
    pub(super) op: Op,
    pub(super) x: &'a Tensor<T, S, D>,
}

impl<T: WithDType, S: Shape, D: Device, Op: UnaryOp<T>> OpCall for Unary<'_, T, S, D, Op> {
    type T = T;
    type S = S;
    type Output = Tensor<T, S, D>;

    #[inline(always)]
    fn tiny(&mut self) -> Option<Self::Output> {
        let a = self.x.tiny_elements()?;
        let mut out = Tensor::host_output(self.x.shape(), a.len())?;
        for (o, &x) in out.host_elements_mut()?[..a.len()].iter_mut().zip(a) {
            *o = self.op.apply(x);
        }
        Some(out)
    }

    #[inline(never)]
    fn kernel(self) -> Self::Output {
        let layout = self.x.layout();
        let src = (self.x.buffer(), &layout);
        written!(
            Tensor::written_by,
            self.x.shape(),
            Op::NAME,
            call::unary::<T, D, _>(self.op, src)
        )
    }
}

/// [`Tensor::binary`]'s and [`Tensor::try_binary`]'s call.
pub(super) struct Binary<'a, T: WithDType, S: Shape, S2: Shape, D: Device, Op, E> {
    pub(super) op: Op,
    pub(super) a: &'a Tensor<T, S, D>,
    pub(super) b: &'a Tensor<T, S2, D>,
    /// [`Panics`] or [`Checked`].
    pub(super) on_error: E,
}

impl<T, S, S2, D, Op, E> OpCall for Binary<'_, T, S, S2, D, Op, E>
where
    T: WithDType,
    S: Shape + BroadcastShapes<S2>,
    S2: Shape,
    D: Device,
    Op: BinaryOp<T>,
    E: OnError,
{
    type T = T;
    type S = S;
    type Output = E::Out<Tensor<T, <S as BroadcastShapes<S2>>::Output, D>>;
    // Operands of one static shape: a broadcast takes the kernels.
    const MAYBE_TINY: bool = tiny_numel::<T, S>().is_some() && same_static_dims::<S, S2>();

    #[inline(always)]
    fn tiny(&mut self) -> Option<Self::Output> {
        let (a, b, shape) = self.a.tiny_pair(self.b)?;
        let mut out = Tensor::host_output(shape, a.len())?;
        for ((o, &x), &y) in out.host_elements_mut()?[..a.len()].iter_mut().zip(a).zip(b) {
            *o = self.op.apply(x, y);
        }
        Some(self.on_error.ok(out))
    }

    #[inline(always)]
    #[track_caller]
    fn kernel(self) -> Self::Output {
        let on_error = self.on_error;
        on_error.report(self.kernel_result())
    }
}

impl<T: WithDType, S: Shape + BroadcastShapes<S2>, S2: Shape, D: Device, Op: BinaryOp<T>, E>
    Binary<'_, T, S, S2, D, Op, E>
{
    /// The kernel path's work, out of line.
    #[inline(never)]
    pub(super) fn kernel_result(self) -> Result<Tensor<T, <S as BroadcastShapes<S2>>::Output, D>> {
        let (la, lb) = (self.a.layout(), self.b.layout());
        let (a, b) = ((self.a.buffer(), &la), (self.b.buffer(), &lb));
        Tensor::try_built_by(|out| binary_body(self.op, a, b, out))
    }
}

/// The comparisons' call.
struct Compare<'a, T: WithDType, S: Shape, S2: Shape, D: Device> {
    op: CmpOp,
    a: &'a Tensor<T, S, D>,
    b: &'a Tensor<T, S2, D>,
}

impl<T: WithDType, S: Shape + BroadcastShapes<S2>, S2: Shape, D: Device> OpCall
    for Compare<'_, T, S, S2, D>
{
    type T = T;
    type S = S;
    type Output = Tensor<u8, <S as BroadcastShapes<S2>>::Output, D>;
    const MAYBE_TINY: bool = tiny_numel::<T, S>().is_some() && same_static_dims::<S, S2>();

    #[inline(always)]
    fn tiny(&mut self) -> Option<Self::Output> {
        let (a, b, shape) = self.a.tiny_pair(self.b)?;
        let mut out = Tensor::<u8, _, D>::host_output(shape, a.len())?;
        for ((o, &x), &y) in out.host_elements_mut()?[..a.len()].iter_mut().zip(a).zip(b) {
            *o = self.op.apply(x, y) as u8;
        }
        Some(out)
    }

    #[inline]
    #[track_caller]
    fn kernel(self) -> Self::Output {
        let (la, lb) = (self.a.layout(), self.b.layout());
        let (a, b) = ((self.a.buffer(), &la), (self.b.buffer(), &lb));
        Tensor::built_by(|out| compare_body(self.op, a, b, out))
    }
}

/// [`Tensor::scalar_op`]'s call: `op(x, value)`, or `op(value, x)` when `scalar_first`.
pub(super) struct Scalar<'a, T: WithDType, S: Shape, D: Device, Op> {
    pub(super) op: Op,
    pub(super) x: &'a Tensor<T, S, D>,
    pub(super) value: T,
    pub(super) scalar_first: bool,
}

impl<T: WithDType, S: Shape, D: Device, Op: BinaryOp<T>> OpCall for Scalar<'_, T, S, D, Op> {
    type T = T;
    type S = S;
    type Output = Tensor<T, S, D>;

    #[inline(always)]
    fn tiny(&mut self) -> Option<Self::Output> {
        let (op, value) = (self.op, self.value);
        let a = self.x.tiny_elements()?;
        let mut out = Tensor::host_output(self.x.shape(), a.len())?;
        for (o, &x) in out.host_elements_mut()?[..a.len()].iter_mut().zip(a) {
            *o = if self.scalar_first {
                op.apply(value, x)
            } else {
                op.apply(x, value)
            };
        }
        Some(out)
    }

    #[inline(never)]
    fn kernel(self) -> Self::Output {
        let (scalar, ls) = self.x.scalar_operand(Op::NAME, self.value);
        let layout = self.x.layout();
        let (x, s) = ((self.x.buffer(), &layout), (D::buffer(&scalar), &ls));
        let (a, b) = if self.scalar_first { (s, x) } else { (x, s) };
        written!(
            Tensor::written_by,
            self.x.shape(),
            Op::NAME,
            call::binary::<T, D, _>(self.op, a, b),
        )
    }
}

/// [`Tensor::where_cond`]'s call, sized by the larger element type, `T`.
struct Select<'a, T: WithDType, S: Shape, D: Device> {
    mask: &'a Tensor<u8, S, D>,
    on_true: &'a Tensor<T, S, D>,
    on_false: &'a Tensor<T, S, D>,
}

impl<T: WithDType, S: Shape, D: Device> OpCall for Select<'_, T, S, D> {
    type T = T;
    type S = S;
    type Output = Tensor<T, S, D>;

    #[inline(always)]
    fn tiny(&mut self) -> Option<Self::Output> {
        let (t, f) = (
            self.on_true.tiny_elements()?,
            self.on_false.tiny_elements()?,
        );
        let mask = self.mask.host_dense()?.get(..t.len())?;
        let mut out = Tensor::host_output(self.on_true.shape(), t.len())?;
        let o = &mut out.host_elements_mut()?[..t.len()];
        for (((o, &m), &t), &f) in o.iter_mut().zip(mask).zip(t).zip(f) {
            *o = if m != 0 { t } else { f };
        }
        Some(out)
    }

    #[inline(never)]
    #[track_caller]
    fn kernel(self) -> Self::Output {
        let dims = self.mask.dims();
        for other in [self.on_true.dims(), self.on_false.dims()] {
            if other != dims {
                panic!(
                    "typed-tensor: {}",
                    Error::shape_mismatch("where_cond", dims, other)
                );
            }
        }
        let (lm, lt, lf) = (
            self.mask.layout(),
            self.on_true.layout(),
            self.on_false.layout(),
        );
        self.on_true.select(
            (self.mask.buffer(), &lm),
            (self.on_true.buffer(), &lt),
            (self.on_false.buffer(), &lf),
        )
    }
}

/// An output shape with a kernel's result.
/// An elementwise operand: a buffer and the layout it is read through.
type View<'a, T, D> = (&'a <D as crate::device::Kernels>::Buffer<T>, &'a Layout);

/// `op(a, b)` with suffix broadcasting, into `out`: [`Tensor::binary`]'s shape-free body.
#[inline(never)]
fn binary_body<T: WithDType, D: Device, Op: BinaryOp<T>>(
    op: Op,
    a: View<'_, T, D>,
    b: View<'_, T, D>,
    out: &mut dyn Sink<T, D>,
) -> Result<()> {
    // Operands of equal dims (the common case) go to the kernel with their own layouts, nothing copied.
    let broadcast;
    let (la, lb) = if a.1.dims() == b.1.dims() {
        (a.1, b.1)
    } else {
        broadcast = broadcast_layouts(Op::NAME, a.1, b.1)?;
        (&broadcast.0, &broadcast.1)
    };
    let mut kernel = call::binary::<T, D, _>(op, (a.0, la), (b.0, lb));
    out.fill(Op::NAME, la.dims(), &mut kernel)
}

/// `a op b` as a `u8` mask with suffix broadcasting, into `out`: the comparisons' shape-free body.
#[inline(never)]
fn compare_body<T: WithDType, D: Device>(
    op: CmpOp,
    a: View<'_, T, D>,
    b: View<'_, T, D>,
    out: &mut dyn Sink<u8, D>,
) -> Result<()> {
    // Operands of equal dims (the common case) go to the kernel with their own layouts, nothing copied.
    let broadcast;
    let (la, lb) = if a.1.dims() == b.1.dims() {
        (a.1, b.1)
    } else {
        broadcast = broadcast_layouts(op.name(), a.1, b.1)?;
        (&broadcast.0, &broadcast.1)
    };
    let mut kernel = call::compare::<T, D>(op, (a.0, la), (b.0, lb));
    out.fill(op.name(), la.dims(), &mut kernel)
}

/// Checks that one operand's dims end the other's (runtime-sized dims included) and returns the output shape
/// with both layouts broadcast to it. [`broadcast_layouts`] does the layout work, compiled once for every shape.
#[inline]
pub(super) fn broadcast_pair<Out: Shape>(
    op: &'static str,
    a: &Layout,
    b: &Layout,
) -> Result<(Out, Layout, Layout)> {
    let (la, lb) = broadcast_layouts(op, a, b)?;
    let shape =
        Out::from_dims(la.dims()).ok_or_else(|| Error::shape_mismatch(op, *a.dims(), *b.dims()))?;
    Ok((shape, la, lb))
}

/// [`broadcast_pair`]'s shape-free part: both layouts broadcast to the longer operand's dims, which the shorter
/// one's must end. Out of line: its callers are compiled once per shape.
#[inline(never)]
pub(super) fn broadcast_layouts(
    op: &'static str,
    a: &Layout,
    b: &Layout,
) -> Result<(Layout, Layout)> {
    let (da, db) = (a.dims(), b.dims());
    let (big, small) = if da.len() >= db.len() {
        (da, db)
    } else {
        (db, da)
    };
    if big[big.len() - small.len()..] != small[..] {
        return Err(Error::shape_mismatch(op, *da, *db));
    }
    let out = *big;
    Ok((a.broadcast_as(op, &out)?, b.broadcast_as(op, &out)?))
}

// `std::ops` for tensors: all four owned/borrowed combinations, same shape or suffix broadcast.
macro_rules! tensor_binop {
    ($tr:ident, $method:ident, $op:ident) => {
        impl<T: WithDType, S: Shape + BroadcastShapes<S2>, S2: Shape, D: Device>
            core::ops::$tr<&Tensor<T, S2, D>> for &Tensor<T, S, D>
        {
            type Output = Tensor<T, <S as BroadcastShapes<S2>>::Output, D>;
            #[track_caller]
            fn $method(self, rhs: &Tensor<T, S2, D>) -> Self::Output {
                self.binary(ops::$op, rhs)
            }
        }
        // An owned left operand lends its buffer to the result where it can (`binary_owned`).
        impl<T: WithDType, S: Shape + BroadcastShapes<S2>, S2: Shape, D: Device>
            core::ops::$tr<Tensor<T, S2, D>> for Tensor<T, S, D>
        {
            type Output = Tensor<T, <S as BroadcastShapes<S2>>::Output, D>;
            #[track_caller]
            fn $method(self, rhs: Tensor<T, S2, D>) -> Self::Output {
                self.binary_owned(ops::$op, &rhs)
            }
        }
        impl<T: WithDType, S: Shape + BroadcastShapes<S2>, S2: Shape, D: Device>
            core::ops::$tr<&Tensor<T, S2, D>> for Tensor<T, S, D>
        {
            type Output = Tensor<T, <S as BroadcastShapes<S2>>::Output, D>;
            #[track_caller]
            fn $method(self, rhs: &Tensor<T, S2, D>) -> Self::Output {
                self.binary_owned(ops::$op, rhs)
            }
        }
        impl<T: WithDType, S: Shape + BroadcastShapes<S2>, S2: Shape, D: Device>
            core::ops::$tr<Tensor<T, S2, D>> for &Tensor<T, S, D>
        {
            type Output = Tensor<T, <S as BroadcastShapes<S2>>::Output, D>;
            #[track_caller]
            fn $method(self, rhs: Tensor<T, S2, D>) -> Self::Output {
                self.binary(ops::$op, &rhs)
            }
        }
    };
}
tensor_binop!(Add, add, Add);
tensor_binop!(Sub, sub, Sub);
tensor_binop!(Mul, mul, Mul);
tensor_binop!(Div, div, Div);

// A scalar of the element type on the right works in generic code: `&t * T::from_f64(2.0)`.
macro_rules! scalar_rhs_binop {
    ($($tr:ident $method:ident $op:ident),*) => {$(
        impl<T: WithDType, S: Shape, D: Device> core::ops::$tr<T> for &Tensor<T, S, D> {
            type Output = Tensor<T, S, D>;
            fn $method(self, rhs: T) -> Self::Output {
                self.scalar_op(ops::$op, rhs, false)
            }
        }
        impl<T: WithDType, S: Shape, D: Device> core::ops::$tr<T> for Tensor<T, S, D> {
            type Output = Tensor<T, S, D>;
            fn $method(self, rhs: T) -> Self::Output {
                self.scalar_op(ops::$op, rhs, false)
            }
        }
    )*};
}
scalar_rhs_binop!(Add add Add, Sub sub Sub, Mul mul Mul, Div div Div);

// A scalar on the left (`1.0 - &t`) needs one impl per concrete dtype: the orphan rule forbids `impl Sub<..> for T`.
macro_rules! scalar_lhs_binop {
    ($t:ty; $($tr:ident $method:ident $op:ident),*) => {$(
        impl<S: Shape, D: Device> core::ops::$tr<&Tensor<$t, S, D>> for $t {
            type Output = Tensor<$t, S, D>;
            fn $method(self, rhs: &Tensor<$t, S, D>) -> Self::Output {
                rhs.scalar_op(ops::$op, self, true)
            }
        }
        impl<S: Shape, D: Device> core::ops::$tr<Tensor<$t, S, D>> for $t {
            type Output = Tensor<$t, S, D>;
            fn $method(self, rhs: Tensor<$t, S, D>) -> Self::Output {
                rhs.scalar_op(ops::$op, self, true)
            }
        }
    )*};
}
macro_rules! scalar_lhs_ops_for {
    ($($t:ty),*) => {$(
        scalar_lhs_binop!($t; Add add Add, Sub sub Sub, Mul mul Mul, Div div Div);
    )*};
}
scalar_lhs_ops_for!(u8, i8, u32, i32, i64, half::f16, half::bf16, f32, f64);

impl<T: SignedDType, S: Shape, D: Device> core::ops::Neg for &Tensor<T, S, D> {
    type Output = Tensor<T, S, D>;
    fn neg(self) -> Self::Output {
        self.unary(ops::Neg)
    }
}
impl<T: SignedDType, S: Shape, D: Device> core::ops::Neg for Tensor<T, S, D> {
    type Output = Tensor<T, S, D>;
    fn neg(self) -> Self::Output {
        self.unary(ops::Neg)
    }
}
