//! In-place (`+=`, [`Tensor::unary_assign`]) and `_into` forms of the elementwise ops.
//!
//! Tensors are values: writing into one never changes another that shares its buffer. A write goes into the
//! existing buffer when this tensor is its only holder and views it densely from its start; otherwise the
//! tensor gets a fresh buffer, exactly as the allocating op would give. Reusing a buffer keeps large elementwise
//! work in memory that is already mapped and warm (on the CPU the buffer cache gives fresh outputs mapped memory
//! too, so the allocating forms come close); tiny static tensors write in place through a loop of known length.
//!
//! ```
//! use typed_tensor::prelude::*;
//! let mut acc = Tensor::<f32, Rank2<2, 3>, Cpu>::zeros();
//! let row = Tensor::<f32, _, Cpu>::from_array([1., 2., 3.]);
//! acc += &row;                       // (3,) broadcast onto (2, 3), written in place
//! acc *= 2.0;
//! assert_eq!(acc.to_array(), [[2., 4., 6.], [2., 4., 6.]]);
//!
//! let mut out = Tensor::<f32, Rank2<2, 3>, Cpu>::zeros();
//! acc.add_into(&row, &mut out);      // out = acc + row, reusing out's buffer
//! assert_eq!(out.to_array(), [[3., 6., 9.], [3., 6., 9.]]);
//! ```

use super::calls::{broadcast_layouts, broadcast_pair, Binary, Scalar, Unary};
use crate::device::Operand;
use crate::dtype::WithDType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::Device;
use crate::ops::{self, BinaryOp, UnaryOp};
use crate::shape::{AssignShapes, BroadcastShapes, Shape};
use crate::tensor::tiny::{run, same_static_dims, tiny_numel, Checked, OpCall, Panics};
use crate::tensor::{device_ok, Tensor};

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// `self = op(self)`, in place when this tensor alone holds its dense buffer.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::ops::Exp;
    /// let mut x = Tensor::<f32, _, Cpu>::from_array([0.0, 1.0]);
    /// x.unary_assign(Exp);
    /// assert_eq!(x.to_vec(), [1.0, 1.0f32.exp()]);
    /// ```
    #[inline]
    pub fn unary_assign<Op: UnaryOp<T>>(&mut self, op: Op) {
        run(UnaryAssign { op, x: self })
    }

    /// `self = op(self, rhs)` with `rhs` suffix-broadcast onto `self`'s shape (never the other way round: the
    /// result must keep `self`'s type). Panics if runtime-sized dims disagree; see [`Self::try_binary_assign`].
    #[track_caller]
    pub fn binary_assign<S2: Shape, Op: BinaryOp<T>>(&mut self, op: Op, rhs: &Tensor<T, S2, D>)
    where
        S: AssignShapes<S2>,
    {
        device_ok(self.try_binary_assign(op, rhs))
    }

    /// [`Self::binary_assign`] returning `Error::ShapeMismatch` when runtime-sized dims disagree.
    #[inline]
    pub fn try_binary_assign<S2: Shape, Op: BinaryOp<T>>(
        &mut self,
        op: Op,
        rhs: &Tensor<T, S2, D>,
    ) -> Result<()>
    where
        S: AssignShapes<S2>,
    {
        run(BinaryAssign { op, x: self, rhs })
    }

    /// `op(self, rhs)` taking `self` by value (the operators' owned forms: `a.matmul(&w) + &b`): the result is
    /// written into `self`'s buffer when this tensor alone holds it densely and the result has its dims (`rhs`
    /// broadcast onto it), as `+=` would; otherwise it gets a fresh buffer, as [`Self::binary`] gives. Either way
    /// the values are `binary`'s.
    #[inline]
    #[track_caller]
    pub(crate) fn binary_owned<S2: Shape, Op: BinaryOp<T>>(
        self,
        op: Op,
        rhs: &Tensor<T, S2, D>,
    ) -> Tensor<T, <S as BroadcastShapes<S2>>::Output, D>
    where
        S: BroadcastShapes<S2>,
    {
        run(BinaryOwned {
            op,
            a: self,
            b: rhs,
        })
    }

    /// `self = op(self, value)`.
    #[inline]
    fn scalar_assign<Op: BinaryOp<T>>(&mut self, op: Op, value: T) {
        run(ScalarAssign { op, x: self, value })
    }

    /// Writes `src`'s values into this tensor (PyTorch's `copy_`): into its own buffer when it alone holds it
    /// densely, as the other in-place ops do, so that work recorded on that buffer (a CUDA graph's input) sees
    /// them; otherwise this tensor becomes a fresh copy. Panics if runtime-sized dims disagree; see
    /// [`Self::try_copy_from`].
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let mut batch = Tensor::<f32, Rank2<2, 2>, Cpu>::zeros();
    /// let next = Tensor::<f32, _, Cpu>::from_array([[1., 2.], [3., 4.]]);
    /// batch.copy_from(&next.t().contiguous().t()); // any layout in, the same values out
    /// assert_eq!(batch.to_array(), [[1., 2.], [3., 4.]]);
    /// ```
    #[track_caller]
    pub fn copy_from(&mut self, src: &Self) {
        device_ok(self.try_copy_from(src))
    }

    /// [`Self::copy_from`] returning `Error::ShapeMismatch` when runtime-sized dims disagree.
    pub fn try_copy_from(&mut self, src: &Self) -> Result<()> {
        let (dims, ls) = (self.dims(), src.layout());
        if *ls.dims() != dims {
            return Err(Error::shape_mismatch("copy_from", dims, *ls.dims()));
        }
        if let Some(out) = self.dense_out() {
            return D::copy((src.buffer(), &ls), out);
        }
        *self = src.contiguous();
        Ok(())
    }

    /// `out = op(self)`, reusing `out`'s buffer when `out` alone holds it densely.
    #[inline]
    pub fn unary_into<Op: UnaryOp<T>>(&self, op: Op, out: &mut Self) {
        run(UnaryInto { op, x: self, out })
    }

    /// `out = op(self, rhs)` (suffix broadcasting as in [`Self::binary`]), reusing `out`'s buffer when `out` alone
    /// holds it densely. Panics if runtime-sized dims disagree; see [`Self::try_binary_into`].
    #[track_caller]
    pub fn binary_into<S2: Shape, Op: BinaryOp<T>>(
        &self,
        op: Op,
        rhs: &Tensor<T, S2, D>,
        out: &mut Tensor<T, <S as BroadcastShapes<S2>>::Output, D>,
    ) where
        S: BroadcastShapes<S2>,
    {
        device_ok(self.try_binary_into(op, rhs, out))
    }

    /// [`Self::binary_into`] returning `Error::ShapeMismatch` when runtime-sized dims disagree.
    #[inline]
    pub fn try_binary_into<S2: Shape, Op: BinaryOp<T>>(
        &self,
        op: Op,
        rhs: &Tensor<T, S2, D>,
        out: &mut Tensor<T, <S as BroadcastShapes<S2>>::Output, D>,
    ) -> Result<()>
    where
        S: BroadcastShapes<S2>,
    {
        run(BinaryInto {
            op,
            a: self,
            b: rhs,
            out,
        })
    }
}

// The calls of the in-place and `_into` forms. A tiny result lives inline, so their tiny paths compute it
// afresh, as the allocating forms do: that costs no more than writing into the existing buffer.

/// [`Tensor::unary_assign`]'s call.
struct UnaryAssign<'a, T: WithDType, S: Shape, D: Device, Op> {
    op: Op,
    x: &'a mut Tensor<T, S, D>,
}

impl<T: WithDType, S: Shape, D: Device, Op: UnaryOp<T>> OpCall for UnaryAssign<'_, T, S, D, Op> {
    type T = T;
    type S = S;
    type Output = ();

    #[inline(always)]
    fn tiny(&mut self) -> Option<()> {
        for x in self.x.tiny_elements_mut()? {
            *x = self.op.apply(*x);
        }
        Some(())
    }

    #[inline(never)]
    fn kernel(self) {
        let dims = self.x.dims();
        if let Some(out) = self.x.dense_out() {
            return device_ok(D::unary(self.op, Operand::Out(&dims), out));
        }
        *self.x = Unary {
            op: self.op,
            x: &*self.x,
        }
        .kernel();
    }
}

/// [`Tensor::try_binary_assign`]'s call: `rhs` suffix-broadcast onto `x`.
struct BinaryAssign<'a, T: WithDType, S: Shape, S2: Shape, D: Device, Op> {
    op: Op,
    x: &'a mut Tensor<T, S, D>,
    rhs: &'a Tensor<T, S2, D>,
}

impl<
        T: WithDType,
        S: Shape + BroadcastShapes<S2, Output = S>,
        S2: Shape,
        D: Device,
        Op: BinaryOp<T>,
    > OpCall for BinaryAssign<'_, T, S, S2, D, Op>
{
    type T = T;
    type S = S;
    type Output = Result<()>;
    const MAYBE_TINY: bool = tiny_numel::<T, S>().is_some() && same_static_dims::<S, S2>();

    #[inline(always)]
    fn tiny(&mut self) -> Option<Result<()>> {
        let b = self.rhs.tiny_elements()?;
        for (x, &y) in self.x.tiny_elements_mut()?.iter_mut().zip(b) {
            *x = self.op.apply(*x, y);
        }
        Some(Ok(()))
    }

    #[inline(never)]
    fn kernel(self) -> Result<()> {
        let (la, lb) = (self.x.layout(), self.rhs.layout());
        let rhs_view = (self.rhs.buffer(), &lb);
        if assign_body::<T, D, Op>(self.op, &la, rhs_view, self.x.dense_out())? {
            return Ok(());
        }
        // Shared or strided: a fresh result (the dims are checked).
        let (op, a, b) = (self.op, &*self.x, self.rhs);
        let on_error = Checked;
        *self.x = Binary { op, a, b, on_error }.kernel_result()?;
        Ok(())
    }
}

/// [`Tensor::binary_owned`]'s call: `op(a, b)` into `a`'s buffer where it can.
struct BinaryOwned<'a, T: WithDType, S: Shape, S2: Shape, D: Device, Op> {
    op: Op,
    a: Tensor<T, S, D>,
    b: &'a Tensor<T, S2, D>,
}

impl<T: WithDType, S: Shape + BroadcastShapes<S2>, S2: Shape, D: Device, Op: BinaryOp<T>> OpCall
    for BinaryOwned<'_, T, S, S2, D, Op>
{
    type T = T;
    type S = S;
    type Output = Tensor<T, <S as BroadcastShapes<S2>>::Output, D>;
    const MAYBE_TINY: bool = tiny_numel::<T, S>().is_some() && same_static_dims::<S, S2>();

    #[inline(always)]
    fn tiny(&mut self) -> Option<Self::Output> {
        let (op, a, b, on_error) = (self.op, &self.a, self.b, Panics);
        Binary { op, a, b, on_error }.tiny()
    }

    // Inline, as before the calls existed: its work is `assign_body`'s and `Binary::kernel_result`'s, both out of
    // line, and for most types no tiny path precedes it.
    #[inline]
    #[track_caller]
    fn kernel(mut self) -> Self::Output {
        // The layout work is `assign_body`'s, compiled once per op rather than per shape; an error there (a
        // mismatch, or a result larger than `a`) means nothing was written, and `Binary` then makes the result or
        // reports the mismatch. The result's shape is taken first, since once `assign_body` has written, the
        // result must be returned.
        let (la, lb) = (self.a.layout(), self.b.layout());
        if let Some(shape) = <S as BroadcastShapes<S2>>::Output::from_dims(la.dims())
            && let Ok(true) =
                assign_body::<T, D, Op>(self.op, &la, (self.b.buffer(), &lb), self.a.dense_out())
        {
            // The same buffer under the result's type (shared, then `a` lets go of it).
            return Tensor::from_view(shape, Layout::contiguous(*la.dims()), self.a.storage());
        }
        let (op, a, b, on_error) = (self.op, &self.a, self.b, Panics);
        Binary { op, a, b, on_error }.kernel()
    }
}

/// [`Tensor::scalar_assign`]'s call.
struct ScalarAssign<'a, T: WithDType, S: Shape, D: Device, Op> {
    op: Op,
    x: &'a mut Tensor<T, S, D>,
    value: T,
}

impl<T: WithDType, S: Shape, D: Device, Op: BinaryOp<T>> OpCall for ScalarAssign<'_, T, S, D, Op> {
    type T = T;
    type S = S;
    type Output = ();

    #[inline(always)]
    fn tiny(&mut self) -> Option<()> {
        for x in self.x.tiny_elements_mut()? {
            *x = self.op.apply(*x, self.value);
        }
        Some(())
    }

    #[inline(never)]
    fn kernel(self) {
        let (op, value) = (self.op, self.value);
        // The scalar operand is built only where it can be used in place (on a GPU it is an allocation).
        if self.x.is_dense_from_start() {
            let (scalar, ls) = self.x.scalar_operand(Op::NAME, value);
            let dims = self.x.dims();
            if let Some(out) = self.x.unique_out() {
                let rhs = (D::buffer(&scalar), &ls);
                return device_ok(D::binary(op, Operand::Out(&dims), rhs, out));
            }
        }
        let x = &*self.x;
        *self.x = Scalar {
            op,
            x,
            value,
            scalar_first: false,
        }
        .kernel();
    }
}

/// [`Tensor::unary_into`]'s call.
struct UnaryInto<'a, T: WithDType, S: Shape, D: Device, Op> {
    op: Op,
    x: &'a Tensor<T, S, D>,
    out: &'a mut Tensor<T, S, D>,
}

impl<T: WithDType, S: Shape, D: Device, Op: UnaryOp<T>> OpCall for UnaryInto<'_, T, S, D, Op> {
    type T = T;
    type S = S;
    type Output = ();

    #[inline(always)]
    fn tiny(&mut self) -> Option<()> {
        *self.out = Unary {
            op: self.op,
            x: self.x,
        }
        .tiny()?;
        Some(())
    }

    #[inline(never)]
    fn kernel(self) {
        let (op, x) = (self.op, self.x);
        if self.out.dims() == x.dims()
            && let Some(buf) = self.out.dense_out()
        {
            let layout = x.layout();
            return device_ok(D::unary(op, Operand::View(x.buffer(), &layout), buf));
        }
        *self.out = Unary { op, x }.kernel();
    }
}

/// [`Tensor::try_binary_into`]'s call.
struct BinaryInto<'a, T: WithDType, S: Shape + BroadcastShapes<S2>, S2: Shape, D: Device, Op> {
    op: Op,
    a: &'a Tensor<T, S, D>,
    b: &'a Tensor<T, S2, D>,
    out: &'a mut Tensor<T, <S as BroadcastShapes<S2>>::Output, D>,
}

impl<T: WithDType, S: Shape + BroadcastShapes<S2>, S2: Shape, D: Device, Op: BinaryOp<T>> OpCall
    for BinaryInto<'_, T, S, S2, D, Op>
{
    type T = T;
    type S = S;
    type Output = Result<()>;
    const MAYBE_TINY: bool = tiny_numel::<T, S>().is_some() && same_static_dims::<S, S2>();

    #[inline(always)]
    fn tiny(&mut self) -> Option<Result<()>> {
        let (op, a, b) = (self.op, self.a, self.b);
        let on_error = Panics;
        *self.out = Binary { op, a, b, on_error }.tiny()?;
        Some(Ok(()))
    }

    #[inline(never)]
    fn kernel(self) -> Result<()> {
        let (op, a, b) = (self.op, self.a, self.b);
        let (shape, la, lb): (<S as BroadcastShapes<S2>>::Output, _, _) =
            broadcast_pair(Op::NAME, &a.layout(), &b.layout())?;
        if self.out.dims() == shape.dims()
            && let Some(buf) = self.out.dense_out()
        {
            let lhs = Operand::View(a.buffer(), &la);
            return D::binary(op, lhs, (b.buffer(), &lb), buf);
        }
        let on_error = Checked;
        *self.out = Binary { op, a, b, on_error }.kernel_result()?;
        Ok(())
    }
}

/// `out = op(out, b)` for `out`, the dense buffer of a tensor of layout `a` that it alone holds, with `b`
/// broadcast onto `a`'s dims: the shape-free body of `+=` and the other assignments. `Ok(false)`, with nothing
/// written, when there is no such buffer (the caller computes a fresh result); `Error::ShapeMismatch` when `b`
/// does not broadcast onto `a`.
#[inline(never)]
fn assign_body<T: WithDType, D: Device, Op: BinaryOp<T>>(
    op: Op,
    a: &Layout,
    b: (&D::Buffer<T>, &Layout),
    out: Option<&mut D::Out<T>>,
) -> Result<bool> {
    let (la, lb) = broadcast_layouts(Op::NAME, a, b.1)?;
    if la.dims() != a.dims() {
        // Only runtime dims get here: `b` is the larger operand, which `a` cannot hold.
        return Err(Error::shape_mismatch(Op::NAME, *a.dims(), *b.1.dims()));
    }
    let Some(out) = out else {
        return Ok(false);
    };
    D::binary(op, Operand::Out(a.dims()), (b.0, &lb), out)?;
    Ok(true)
}

// `add_into` and friends: the named `_into` forms of the arithmetic operators.
macro_rules! binary_into_methods {
    ($($(#[$m:meta])* $name:ident $op:ident),*) => {
        impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
            $(
                $(#[$m])*
                #[track_caller]
                pub fn $name<S2: Shape>(
                    &self,
                    rhs: &Tensor<T, S2, D>,
                    out: &mut Tensor<T, <S as BroadcastShapes<S2>>::Output, D>,
                ) where
                    S: BroadcastShapes<S2>,
                {
                    self.binary_into(ops::$op, rhs, out)
                }
            )*
        }
    };
}
binary_into_methods!(
    /// `out = self + rhs`, reusing `out`'s buffer (see [`Self::binary_into`]).
    add_into Add,
    /// `out = self - rhs`, reusing `out`'s buffer (see [`Self::binary_into`]).
    sub_into Sub,
    /// `out = self * rhs`, reusing `out`'s buffer (see [`Self::binary_into`]).
    mul_into Mul,
    /// `out = self / rhs`, reusing `out`'s buffer (see [`Self::binary_into`]).
    div_into Div
);

// `+=` and friends, with a tensor (borrowed or owned, suffix-broadcast onto the left shape) or a scalar.
macro_rules! assign_ops {
    ($($tr:ident $method:ident $op:ident),*) => {$(
        impl<T: WithDType, S: AssignShapes<S2>, S2: Shape, D: Device>
            core::ops::$tr<&Tensor<T, S2, D>> for Tensor<T, S, D>
        {
            #[track_caller]
            fn $method(&mut self, rhs: &Tensor<T, S2, D>) {
                self.binary_assign(ops::$op, rhs)
            }
        }
        impl<T: WithDType, S: AssignShapes<S2>, S2: Shape, D: Device>
            core::ops::$tr<Tensor<T, S2, D>> for Tensor<T, S, D>
        {
            #[track_caller]
            fn $method(&mut self, rhs: Tensor<T, S2, D>) {
                self.binary_assign(ops::$op, &rhs)
            }
        }
        impl<T: WithDType, S: Shape, D: Device> core::ops::$tr<T> for Tensor<T, S, D> {
            fn $method(&mut self, rhs: T) {
                self.scalar_assign(ops::$op, rhs)
            }
        }
    )*};
}
assign_ops!(
    AddAssign add_assign Add,
    SubAssign sub_assign Sub,
    MulAssign mul_assign Mul,
    DivAssign div_assign Div
);
