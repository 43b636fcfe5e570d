//! `Traced::custom_op(_to)` and `Traced::custom_op2(_to)`: a user's op recorded with its backward kernels
//! ([`CustomOp1Backward`], [`CustomOp2Backward`]).

use super::{CustomOp1Backward, CustomOp2Backward};
use crate::autograd::{record_with, Gradients, Slot, Traceable, Traced};
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::ops::Device;
use crate::shape::Shape;
use crate::tensor::{device_ok, or_panic, Grad, Tensor};
use alloc::sync::Arc;

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// [`Tensor::custom_op`] recorded for `backward()`: the input's gradient is the op's
    /// [`CustomOp1Backward`] kernel of the input, the output and the output's gradient.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::autograd::Var;
    /// use typed_tensor::ops::custom::{CustomOp1, CustomOp1Backward, HostView};
    ///
    /// /// `|x|`, whose gradient is `sign(x)`.
    /// struct Abs;
    /// impl CustomOp1<f32> for Abs {
    ///     fn name(&self) -> &'static str {
    ///         "abs"
    ///     }
    ///     fn cpu_forward(&self, x: HostView<'_, f32>, y: &mut [f32]) -> Result<()> {
    ///         y.iter_mut().zip(x.data).for_each(|(y, x)| *y = x.abs());
    ///         Ok(())
    ///     }
    /// }
    /// impl CustomOp1Backward<f32> for Abs {
    ///     fn cpu_backward(
    ///         &self,
    ///         x: HostView<'_, f32>,
    ///         _: HostView<'_, f32>,
    ///         dy: HostView<'_, f32>,
    ///         dx: &mut [f32],
    ///     ) -> Result<()> {
    ///         for ((dx, x), dy) in dx.iter_mut().zip(x.data).zip(dy.data) {
    ///             *dx = x.signum() * dy;
    ///         }
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let w = Var::new(Tensor::<f32, _, Cpu>::from_array([-2.0, 3.0]));
    /// let grads = w.trace().custom_op(Abs).sum_all().backward();
    /// assert_eq!(grads.get(&w).to_vec(), [-1.0, 1.0]);
    /// ```
    #[track_caller]
    pub fn custom_op<Op: CustomOp1Backward<T>>(&self, op: Op) -> Self {
        or_panic(self.try_custom_op(op))
    }

    /// [`Self::custom_op`], returning the forward's error (see [`Tensor::try_custom_op`]). An error of the
    /// backward kernel panics in `backward()`, with the op's message.
    pub fn try_custom_op<Op: CustomOp1Backward<T>>(&self, op: Op) -> Result<Self> {
        self.try_custom_op_to(op)
    }

    /// [`Tensor::custom_op_to`] recorded for `backward()` (see [`Self::custom_op`]).
    #[track_caller]
    pub fn custom_op_to<S2: Shape, Op: CustomOp1Backward<T>>(&self, op: Op) -> Traced<T, S2, D> {
        or_panic(self.try_custom_op_to(op))
    }

    /// [`Self::custom_op_to`], returning the forward's error (see [`Tensor::try_custom_op_to`]).
    pub fn try_custom_op_to<S2: Shape, Op: CustomOp1Backward<T>>(
        &self,
        op: Op,
    ) -> Result<Traced<T, S2, D>> {
        let x = self.value.try_contiguous()?;
        let op = Arc::new(op);
        let y: Tensor<T, S2, D> = x.custom_forward(&*op)?;
        let captured = (self.slot(), op, x, y.clone());
        Ok(record_with(
            y,
            &[&self.node],
            captured,
            custom_rule::<T, S, S2, D, Op>,
        ))
    }
}

/// What a custom op's node keeps: the input's slot, the op, the input and the output.
type Saved<T, S, S2, D, Op> = (Slot, Arc<Op>, Tensor<T, S, D>, Tensor<T, S2, D>);

/// The input's gradient: the op's backward kernel of the input, the output and the output's gradient.
fn custom_rule<T: FloatDType, S: Shape, S2: Shape, D: Device, Op: CustomOp1Backward<T>>(
    g: Grad<T, D>,
    (slot, op, x, y): Saved<T, S, S2, D, Op>,
    grads: &mut Gradients,
) {
    slot.give(grads, || {
        let g = g.unpadded(y.shape()).contiguous();
        let (lx, ly, lg) = (x.layout(), y.layout(), g.layout());
        let (bx, by, bg) = (x.buffer(), y.buffer(), g.buffer());
        let storage = device_ok(D::custom_backward::<T, S, Op>(
            &op,
            (bx, &lx),
            (by, &ly),
            (bg, &lg),
        ));
        Tensor::<T, S, D>::from_storage(x.shape(), storage)
    })
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// [`Tensor::custom_op2`] recorded for `backward()`: both inputs' gradients come from the op's
    /// [`CustomOp2Backward`] kernel. `rhs` is a traced value, a parameter or a plain tensor (a constant).
    #[track_caller]
    pub fn custom_op2<R, Op>(&self, rhs: &R, op: Op) -> Self
    where
        R: Traceable<Elem = T, Device = D>,
        Op: CustomOp2Backward<T>,
    {
        or_panic(self.try_custom_op2(rhs, op))
    }

    /// [`Self::custom_op2`], returning the forward's error (see [`Tensor::try_custom_op2`]).
    pub fn try_custom_op2<R, Op>(&self, rhs: &R, op: Op) -> Result<Self>
    where
        R: Traceable<Elem = T, Device = D>,
        Op: CustomOp2Backward<T>,
    {
        self.try_custom_op2_to(rhs, op)
    }

    /// [`Tensor::custom_op2_to`] recorded for `backward()` (see [`Self::custom_op2`]).
    #[track_caller]
    pub fn custom_op2_to<S3: Shape, R, Op>(&self, rhs: &R, op: Op) -> Traced<T, S3, D>
    where
        R: Traceable<Elem = T, Device = D>,
        Op: CustomOp2Backward<T>,
    {
        or_panic(self.try_custom_op2_to(rhs, op))
    }

    /// [`Self::custom_op2_to`], returning the forward's error (see [`Tensor::try_custom_op2_to`]).
    pub fn try_custom_op2_to<S3: Shape, R, Op>(&self, rhs: &R, op: Op) -> Result<Traced<T, S3, D>>
    where
        R: Traceable<Elem = T, Device = D>,
        Op: CustomOp2Backward<T>,
    {
        let rhs = rhs.traced();
        let (a, b) = (self.value.try_contiguous()?, rhs.value.try_contiguous()?);
        let op = Arc::new(op);
        let y: Tensor<T, S3, D> = a.custom_forward2(&b, &*op)?;
        let captured = ([self.slot(), rhs.slot()], op, a, b, y.clone());
        let rule = custom_rule2::<T, S, R::Shape, S3, D, Op>;
        Ok(record_with(y, &[&self.node, &rhs.node], captured, rule))
    }
}

/// What a two-input custom op's node keeps: the inputs' slots, the op, the inputs and the output.
type Saved2<T, SA, SB, S3, D, Op> = (
    [Slot; 2],
    Arc<Op>,
    Tensor<T, SA, D>,
    Tensor<T, SB, D>,
    Tensor<T, S3, D>,
);

/// Both inputs' gradients from one call of the op's backward kernel (the node exists only when either is
/// wanted).
fn custom_rule2<T, SA, SB, S3, D, Op>(
    g: Grad<T, D>,
    ([sa, sb], op, a, b, y): Saved2<T, SA, SB, S3, D, Op>,
    grads: &mut Gradients,
) where
    T: FloatDType,
    SA: Shape,
    SB: Shape,
    S3: Shape,
    D: Device,
    Op: CustomOp2Backward<T>,
{
    let g = g.unpadded(y.shape()).contiguous();
    let layouts = [a.layout(), b.layout(), y.layout(), g.layout()];
    let buffers = [a.buffer(), b.buffer(), y.buffer(), g.buffer()];
    let views = core::array::from_fn(|i| (buffers[i], &layouts[i]));
    let (da, db) = device_ok(D::custom_backward2::<T, SA, SB, Op>(&op, views));
    sa.give(grads, || Tensor::<T, SA, D>::from_storage(a.shape(), da));
    sb.give(grads, || Tensor::<T, SB, D>::from_storage(b.shape(), db));
}
