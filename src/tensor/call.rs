//! Kernel calls as closures for [`Tensor::written_by`](super::Tensor) and [`fresh`](super::fresh), built here,
//! outside the shape-generic methods that use them.
//!
//! A closure written inside a generic method is a distinct type for every instantiation of that method, shapes
//! included, and so is the trait-object shim `Kernels::alloc_with` calls it through. Built by these functions,
//! which have no shape parameter, each closure type exists once per element type, device and op: on the compile
//! benchmark's 49-layer model, writing them inline cost 1,598 `call_once` bodies and as many shims (57K lines of
//! LLVM IR, 5% of the model's).
//!
//! Each builder returns a [`KernelCall`]: one call of a family kernel, which by its trait's contract (the family
//! traits are `unsafe trait`s) writes its whole destination whenever it returns `Ok` and never reads it. Only
//! this module builds one, so holding one is the promise [`super::fresh`] needs to hand a kernel uninitialised
//! memory: the ops make their outputs (`Tensor::written_by`, `Sink::fill`) without `unsafe`.

use crate::device::Operand;
use crate::dtype::{FloatDType, IndexDType, WithDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::{
    AlongAxis, BinaryOp, CmpOp, Conv2dParams, Pool, PoolParams, ReduceOp, Resample, Scan, UnaryOp,
};
use crate::ops::{Cumulative, Device};
use crate::shape::MAX_RANK;

/// An operand: a buffer and the layout it is read through.
type View<'a, D, T> = (&'a <D as crate::device::Kernels>::Buffer<T>, &'a Layout);
/// What a kernel writes into.
pub(crate) type Out<D, T> = <D as crate::device::Kernels>::Out<T>;

/// One kernel call that writes the whole of its destination whenever it returns `Ok` and reads none of it (see
/// the module docs). Built only here; code elsewhere holds it, moves it and coerces it to a [`Writer`].
pub(crate) struct KernelCall<F: ?Sized>(F);

/// Wraps one kernel call (this module's builders only).
fn one_call<O: ?Sized, F: FnMut(&mut O) -> Result<()>>(call: F) -> KernelCall<F> {
    KernelCall(call)
}

/// A [`KernelCall`] of any closure type writing into `Out`: what the output makers take.
pub(crate) type Writer<'a, Out> = KernelCall<dyn FnMut(&mut Out) -> Result<()> + 'a>;

impl<'a, Out: ?Sized> Writer<'a, Out> {
    /// The call, for the allocation that runs it on fresh memory ([`super::fresh`]), whose `unsafe` block
    /// rests on this type's promise.
    pub(super) fn run_on(&mut self) -> &mut (dyn FnMut(&mut Out) -> Result<()> + 'a) {
        &mut self.0
    }
}

pub(crate) fn copy<'a, T: WithDType, D: Device>(
    src: View<'a, D, T>,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::copy(src, out))
}

pub(crate) fn cast<'a, T: WithDType, U: WithDType, D: Device>(
    src: View<'a, D, T>,
) -> KernelCall<impl FnMut(&mut Out<D, U>) -> Result<()> + 'a> {
    one_call(move |out| D::cast::<T, U>(src, out))
}

/// A unary op of a view (never `Operand::Out`: a fresh output is not read).
pub(crate) fn unary<'a, T: WithDType, D: Device, Op: UnaryOp<T>>(
    op: Op,
    src: View<'a, D, T>,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::unary(op, Operand::View(src.0, src.1), out))
}

/// A binary op of two views (never `Operand::Out`, as for [`unary`]).
pub(crate) fn binary<'a, T: WithDType, D: Device, Op: BinaryOp<T>>(
    op: Op,
    lhs: View<'a, D, T>,
    rhs: View<'a, D, T>,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::binary(op, Operand::View(lhs.0, lhs.1), rhs, out))
}

pub(crate) fn compare<'a, T: WithDType, D: Device>(
    op: CmpOp,
    lhs: View<'a, D, T>,
    rhs: View<'a, D, T>,
) -> KernelCall<impl FnMut(&mut Out<D, u8>) -> Result<()> + 'a> {
    one_call(move |out| D::compare(op, lhs, rhs, out))
}

pub(crate) fn where_cond<'a, T: WithDType, D: Device>(
    mask: View<'a, D, u8>,
    on_true: View<'a, D, T>,
    on_false: View<'a, D, T>,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::where_cond(mask, on_true, on_false, out))
}

pub(crate) fn reduce<'a, T: WithDType, D: Device, Op: ReduceOp<T>>(
    op: Op,
    src: View<'a, D, T>,
    reduced: &'a [bool; MAX_RANK],
) -> KernelCall<impl FnMut(&mut Out<D, Op::Out>) -> Result<()> + 'a> {
    one_call(move |out| D::reduce(op, src, reduced, out))
}

pub(crate) fn concat<'a, T: WithDType, D: Device>(
    parts: &'a [View<'a, D, T>],
    axis: usize,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::concat(parts, axis, out))
}

pub(crate) fn gather<'a, T: WithDType, I: IndexDType, D: Device>(
    op: &'static str,
    src: View<'a, D, T>,
    idx: View<'a, D, I>,
    axis: usize,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::gather(op, src, idx, axis, out))
}

pub(crate) fn scatter_add<'a, T: WithDType, I: IndexDType, D: Device>(
    op: &'static str,
    dst: View<'a, D, T>,
    idx: View<'a, D, I>,
    src: View<'a, D, T>,
    axis: usize,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::scatter_add(op, dst, idx, src, axis, out))
}

#[cfg(feature = "std")] // autograd
pub(crate) fn cross_entropy_backward<'a, T: FloatDType, I: IndexDType, D: Device>(
    log_probs: View<'a, D, T>,
    labels: View<'a, D, I>,
    g: View<'a, D, T>,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::cross_entropy_backward(log_probs, labels, g, out))
}

pub(crate) fn along_axis<'a, T: FloatDType, D: Device>(
    op: AlongAxis,
    src: View<'a, D, T>,
    axis: usize,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::along_axis(op, src, axis, out))
}

pub(crate) fn scan<'a, T: WithDType, D: Device>(
    op: Scan,
    src: View<'a, D, T>,
    axis: usize,
    order: Cumulative,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::scan(op, src, axis, order, out))
}

pub(crate) fn argsort<'a, T: WithDType, D: Device>(
    src: View<'a, D, T>,
    axis: usize,
    descending: bool,
) -> KernelCall<impl FnMut(&mut Out<D, u32>) -> Result<()> + 'a> {
    one_call(move |out| D::argsort(src, axis, descending, out))
}

pub(crate) fn scan_index<'a, T: WithDType, D: Device>(
    op: Scan,
    src: View<'a, D, T>,
    axis: usize,
) -> KernelCall<impl FnMut(&mut Out<D, u32>) -> Result<()> + 'a> {
    one_call(move |out| D::scan_index(op, src, axis, out))
}

#[cfg(feature = "std")] // autograd
pub(crate) fn cumprod_backward<'a, T: WithDType, D: Device>(
    x: View<'a, D, T>,
    g: View<'a, D, T>,
    axis: usize,
    exclusive: bool,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::cumprod_backward(x, g, axis, exclusive, out))
}

/// The product of operand views of any shapes that chain and whose batch axes merge: the `[B, M, K]` and `[B, K,
/// N]` layouts are prepared when it runs (`Err` if they cannot be), then one matmul kernel call.
pub(crate) fn matmul_views<'a, T: FloatDType, D: Device>(
    lhs: View<'a, D, T>,
    rhs: View<'a, D, T>,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| crate::ops::matmul::matmul_views::<T, D>(lhs, rhs, out))
}

#[cfg(feature = "std")] // the gradients' products of `[B, M, K]` and `[B, K, N]` layouts
pub(crate) fn matmul<'a, T: FloatDType, D: Device>(
    lhs: View<'a, D, T>,
    rhs: View<'a, D, T>,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::matmul(lhs, rhs, out))
}

pub(crate) fn conv2d<'a, T: FloatDType, D: Device>(
    input: View<'a, D, T>,
    weight: View<'a, D, T>,
    params: Conv2dParams,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::conv2d(input, weight, params, out))
}

pub(crate) fn conv_transpose2d<'a, T: FloatDType, D: Device>(
    input: View<'a, D, T>,
    weight: View<'a, D, T>,
    params: Conv2dParams,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::conv_transpose2d(input, weight, params, out))
}

pub(crate) fn unfold<'a, T: FloatDType, D: Device>(
    input: View<'a, D, T>,
    kernel: [usize; 2],
    params: Conv2dParams,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::unfold(input, kernel, params, out))
}

pub(crate) fn fold<'a, T: FloatDType, D: Device>(
    columns: View<'a, D, T>,
    kernel: [usize; 2],
    image: [usize; 2],
    params: Conv2dParams,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::fold(columns, kernel, image, params, out))
}

pub(crate) fn resample<'a, T: FloatDType, D: Device>(
    op: Resample,
    src: View<'a, D, T>,
    axis: usize,
    n_out: usize,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::resample(op, src, axis, n_out, out))
}

#[cfg(feature = "std")] // autograd
pub(crate) fn resample_backward<'a, T: FloatDType, D: Device>(
    op: Resample,
    grad: View<'a, D, T>,
    axis: usize,
    n_in: usize,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::resample_backward(op, grad, axis, n_in, out))
}

pub(crate) fn pool2d<'a, T: FloatDType, D: Device>(
    pool: Pool,
    input: View<'a, D, T>,
    params: PoolParams<2>,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::pool2d(pool, input, params, out))
}

pub(crate) fn max_pool2d_indices<'a, T: FloatDType, D: Device>(
    input: View<'a, D, T>,
    params: PoolParams<2>,
) -> KernelCall<impl FnMut(&mut Out<D, u32>) -> Result<()> + 'a> {
    one_call(move |out| D::max_pool2d_indices(input, params, out))
}

pub(crate) fn max_pool2d_at<'a, T: FloatDType, D: Device>(
    input: View<'a, D, T>,
    indices: View<'a, D, u32>,
    params: PoolParams<2>,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::max_pool2d_at(input, indices, params, out))
}

#[cfg(feature = "std")] // autograd
pub(crate) fn conv2d_weight_grad<'a, T: FloatDType, D: Device>(
    input: View<'a, D, T>,
    grad: View<'a, D, T>,
    kernel: [usize; 2],
    params: Conv2dParams,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::conv2d_weight_grad(input, grad, kernel, params, out))
}

#[cfg(feature = "std")] // autograd
pub(crate) fn max_pool2d_backward<'a, T: FloatDType, D: Device>(
    indices: View<'a, D, u32>,
    grad: View<'a, D, T>,
    input: [usize; 2],
    params: PoolParams<2>,
) -> KernelCall<impl FnMut(&mut Out<D, T>) -> Result<()> + 'a> {
    one_call(move |out| D::max_pool2d_backward(indices, grad, input, params, out))
}
