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

use super::tensor::{broadcast_layouts, broadcast_pair};
use crate::device::{Device, Operand};
use crate::dtype::WithDType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::{self, BinaryOp, UnaryOp};
use crate::shape::{BroadcastShapes, Shape};
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
    pub fn unary_assign<Op: UnaryOp<T>>(&mut self, op: Op) {
        if Self::MAYBE_TINY && self.unary_assign_tiny(op) {
            return;
        }
        let dims = self.dims();
        if let Some(out) = self.dense_out() {
            return device_ok(D::unary(op, Operand::Out(&dims), out));
        }
        *self = self.unary(op);
    }

    /// `self = op(self, rhs)` with `rhs` suffix-broadcast onto `self`'s shape (never the other way round: the
    /// result must keep `self`'s type). Panics if runtime-sized dims disagree; see [`Self::try_binary_assign`].
    #[track_caller]
    pub fn binary_assign<S2: Shape, Op: BinaryOp<T>>(&mut self, op: Op, rhs: &Tensor<T, S2, D>)
    where
        S: BroadcastShapes<S2, Output = S>,
    {
        device_ok(self.try_binary_assign(op, rhs))
    }

    /// [`Self::binary_assign`] returning `Error::ShapeMismatch` when runtime-sized dims disagree.
    pub fn try_binary_assign<S2: Shape, Op: BinaryOp<T>>(
        &mut self,
        op: Op,
        rhs: &Tensor<T, S2, D>,
    ) -> Result<()>
    where
        S: BroadcastShapes<S2, Output = S>,
    {
        if Self::MAYBE_TINY && self.binary_assign_tiny(op, rhs) {
            return Ok(());
        }
        let (la, lb) = (self.layout(), rhs.layout());
        let rhs_view = (rhs.buffer(), &lb);
        if assign_body::<T, D, Op>(op, &la, rhs_view, self.dense_out())? {
            return Ok(());
        }
        // Shared or strided: a fresh result (the dims are checked), through the out-of-line kernel path.
        *self = self.binary_kernel(op, rhs);
        Ok(())
    }

    /// `op(self, rhs)` taking `self` by value (the operators' owned forms: `a.matmul(&w) + &b`): the result is
    /// written into `self`'s buffer when this tensor alone holds it densely and the result has its dims (`rhs`
    /// broadcast onto it), as `+=` would; otherwise it gets a fresh buffer, as [`Self::binary`] gives. Either way
    /// the values are `binary`'s.
    #[track_caller]
    pub(crate) fn binary_owned<S2: Shape, Op: BinaryOp<T>>(
        mut self,
        op: Op,
        rhs: &Tensor<T, S2, D>,
    ) -> Tensor<T, <S as BroadcastShapes<S2>>::Output, D>
    where
        S: BroadcastShapes<S2>,
    {
        if !Self::MAYBE_TINY {
            // A tiny result lives inline: a fresh one costs no more. The layout work is `assign_body`'s, compiled
            // once per op rather than per shape; an error there (a mismatch, or a result larger than `self`) means
            // nothing was written, and `binary` then makes the result or reports the mismatch. The result's shape
            // is taken first, since once `assign_body` has written, the result must be returned.
            let (la, lb) = (self.layout(), rhs.layout());
            if let Some(shape) = <S as BroadcastShapes<S2>>::Output::from_dims(la.dims())
                && let Ok(true) =
                    assign_body::<T, D, Op>(op, &la, (rhs.buffer(), &lb), self.dense_out())
            {
                // The same buffer under the result's type (shared, then `self` lets go of it).
                return Tensor::from_view(shape, Layout::contiguous(*la.dims()), self.storage());
            }
        }
        self.binary(op, rhs)
    }

    /// `self = op(self, value)`.
    fn scalar_assign<Op: BinaryOp<T>>(&mut self, op: Op, value: T) {
        if Self::MAYBE_TINY && self.scalar_assign_tiny(op, value) {
            return;
        }
        // The scalar operand is built only where it can be used in place (on a GPU it is an allocation).
        if self.is_dense_from_start() {
            let (scalar, ls) = self.scalar_operand(Op::NAME, value);
            let dims = self.dims();
            if let Some(out) = self.unique_out() {
                let rhs = (D::buffer(&scalar), &ls);
                return device_ok(D::binary(op, Operand::Out(&dims), rhs, out));
            }
        }
        *self = self.scalar_op(op, value, false);
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
    pub fn unary_into<Op: UnaryOp<T>>(&self, op: Op, out: &mut Self) {
        // A tiny result lives inline: building a fresh one costs no more than writing `out`'s.
        if Self::MAYBE_TINY
            && let Some(fresh) = self.unary_tiny(op)
        {
            *out = fresh;
            return;
        }
        if out.dims() == self.dims()
            && let Some(buf) = out.dense_out()
        {
            let layout = self.layout();
            return device_ok(D::unary(op, Operand::View(self.buffer(), &layout), buf));
        }
        *out = self.unary(op);
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
    pub fn try_binary_into<S2: Shape, Op: BinaryOp<T>>(
        &self,
        op: Op,
        rhs: &Tensor<T, S2, D>,
        out: &mut Tensor<T, <S as BroadcastShapes<S2>>::Output, D>,
    ) -> Result<()>
    where
        S: BroadcastShapes<S2>,
    {
        if Self::MAYBE_TINY
            && let Some(fresh) = self.binary_tiny(op, rhs)
        {
            *out = fresh;
            return Ok(());
        }
        let (shape, la, lb): (<S as BroadcastShapes<S2>>::Output, _, _) =
            broadcast_pair(Op::NAME, &self.layout(), &rhs.layout())?;
        if out.dims() == shape.dims()
            && let Some(buf) = out.dense_out()
        {
            let lhs = Operand::View(self.buffer(), &la);
            return D::binary(op, lhs, (rhs.buffer(), &lb), buf);
        }
        *out = self.try_binary(op, rhs)?;
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
        impl<T: WithDType, S: Shape + BroadcastShapes<S2, Output = S>, S2: Shape, D: Device>
            core::ops::$tr<&Tensor<T, S2, D>> for Tensor<T, S, D>
        {
            #[track_caller]
            fn $method(&mut self, rhs: &Tensor<T, S2, D>) {
                self.binary_assign(ops::$op, rhs)
            }
        }
        impl<T: WithDType, S: Shape + BroadcastShapes<S2, Output = S>, S2: Shape, D: Device>
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
