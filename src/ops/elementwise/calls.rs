//! The elementwise ops' calls: each entry form described as an [`OpCall`] (a tiny path over dense host
//! elements, and the kernel path), and the shape-free bodies of the broadcasting binary ops and comparisons.

use crate::dtype::WithDType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::Device;
use crate::ops::{BinaryOp, CmpOp, UnaryOp};
use crate::shape::{BroadcastShapes, Shape};
use crate::tensor::tiny::{same_static_dims, tiny_numel, OnError, OpCall};
use crate::tensor::{call, written, Sink, Tensor};

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
pub(super) struct Compare<'a, T: WithDType, S: Shape, S2: Shape, D: Device> {
    pub(super) op: CmpOp,
    pub(super) a: &'a Tensor<T, S, D>,
    pub(super) b: &'a Tensor<T, S2, D>,
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
pub(super) struct Select<'a, T: WithDType, S: Shape, D: Device> {
    pub(super) mask: &'a Tensor<u8, S, D>,
    pub(super) on_true: &'a Tensor<T, S, D>,
    pub(super) on_false: &'a Tensor<T, S, D>,
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
