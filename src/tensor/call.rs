//! Kernel calls as closures for [`Tensor::written_by`](super::Tensor) and [`fresh`](super::fresh), built here,
//! outside the shape-generic methods that use them.
//!
//! A closure written inside a generic method is a distinct type for every instantiation of that method, shapes
//! included, and so is the trait-object shim `Kernels::alloc_with` calls it through. Built by these functions,
//! which have no shape parameter, each closure type exists once per element type, device and op: on the compile
//! benchmark's 49-layer model, writing them inline cost 1,598 `call_once` bodies and as many shims (57K lines of
//! LLVM IR, 5% of the model's).

use crate::device::{Device, Operand};
use crate::dtype::{FloatDType, IndexDType, WithDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::{
    AlongAxis, BinaryOp, CmpOp, Conv2dParams, Pool, PoolParams, ReduceOp, Resample, Scan, UnaryOp,
};
use crate::shape::MAX_RANK;

/// An operand: a buffer and the layout it is read through.
type View<'a, D, T> = (&'a <D as crate::device::Kernels>::Buffer<T>, &'a Layout);
/// What a kernel writes into.
pub(crate) type Out<D, T> = <D as crate::device::Kernels>::Out<T>;

pub(crate) fn copy<'a, T: WithDType, D: Device>(
    src: View<'a, D, T>,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::copy(src, out)
}

pub(crate) fn cast<'a, T: WithDType, U: WithDType, D: Device>(
    src: View<'a, D, T>,
) -> impl FnMut(&mut Out<D, U>) -> Result<()> + 'a {
    move |out| D::cast::<T, U>(src, out)
}

pub(crate) fn unary<'a, T: WithDType, D: Device, Op: UnaryOp<T>>(
    op: Op,
    src: Operand<'a, D::Buffer<T>>,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::unary(op, src, out)
}

pub(crate) fn binary<'a, T: WithDType, D: Device, Op: BinaryOp<T>>(
    op: Op,
    lhs: Operand<'a, D::Buffer<T>>,
    rhs: View<'a, D, T>,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::binary(op, lhs, rhs, out)
}

pub(crate) fn compare<'a, T: WithDType, D: Device>(
    op: CmpOp,
    lhs: View<'a, D, T>,
    rhs: View<'a, D, T>,
) -> impl FnMut(&mut Out<D, u8>) -> Result<()> + 'a {
    move |out| D::compare(op, lhs, rhs, out)
}

pub(crate) fn where_cond<'a, T: WithDType, D: Device>(
    mask: View<'a, D, u8>,
    on_true: View<'a, D, T>,
    on_false: View<'a, D, T>,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::where_cond(mask, on_true, on_false, out)
}

pub(crate) fn reduce<'a, T: WithDType, D: Device, Op: ReduceOp<T>>(
    op: Op,
    src: View<'a, D, T>,
    reduced: &'a [bool; MAX_RANK],
) -> impl FnMut(&mut Out<D, Op::Out>) -> Result<()> + 'a {
    move |out| D::reduce(op, src, reduced, out)
}

pub(crate) fn concat<'a, T: WithDType, D: Device>(
    parts: &'a [View<'a, D, T>],
    axis: usize,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::concat(parts, axis, out)
}

pub(crate) fn gather<'a, T: WithDType, I: IndexDType, D: Device>(
    op: &'static str,
    src: View<'a, D, T>,
    idx: View<'a, D, I>,
    axis: usize,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::gather(op, src, idx, axis, out)
}

pub(crate) fn scatter_add<'a, T: WithDType, I: IndexDType, D: Device>(
    op: &'static str,
    dst: View<'a, D, T>,
    idx: View<'a, D, I>,
    src: View<'a, D, T>,
    axis: usize,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::scatter_add(op, dst, idx, src, axis, out)
}

#[cfg(feature = "std")] // autograd
pub(crate) fn cross_entropy_backward<'a, T: FloatDType, I: IndexDType, D: Device>(
    log_probs: View<'a, D, T>,
    labels: View<'a, D, I>,
    g: View<'a, D, T>,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::cross_entropy_backward(log_probs, labels, g, out)
}

pub(crate) fn along_axis<'a, T: FloatDType, D: Device>(
    op: AlongAxis,
    src: View<'a, D, T>,
    axis: usize,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::along_axis(op, src, axis, out)
}

pub(crate) fn scan<'a, T: WithDType, D: Device>(
    op: Scan,
    src: View<'a, D, T>,
    axis: usize,
    reverse: bool,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::scan(op, src, axis, reverse, out)
}

pub(crate) fn argsort<'a, T: WithDType, D: Device>(
    src: View<'a, D, T>,
    axis: usize,
    descending: bool,
) -> impl FnMut(&mut Out<D, u32>) -> Result<()> + 'a {
    move |out| D::argsort(src, axis, descending, out)
}

pub(crate) fn scan_index<'a, T: WithDType, D: Device>(
    op: Scan,
    src: View<'a, D, T>,
    axis: usize,
) -> impl FnMut(&mut Out<D, u32>) -> Result<()> + 'a {
    move |out| D::scan_index(op, src, axis, out)
}

#[cfg(feature = "std")] // autograd
pub(crate) fn cumprod_backward<'a, T: WithDType, D: Device>(
    x: View<'a, D, T>,
    g: View<'a, D, T>,
    axis: usize,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::cumprod_backward(x, g, axis, out)
}

#[cfg(feature = "std")] // the gradients' products; the forward builds its own call (ops/matmul)
pub(crate) fn matmul<'a, T: FloatDType, D: Device>(
    lhs: View<'a, D, T>,
    rhs: View<'a, D, T>,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::matmul(lhs, rhs, out)
}

pub(crate) fn conv2d<'a, T: FloatDType, D: Device>(
    input: View<'a, D, T>,
    weight: View<'a, D, T>,
    params: Conv2dParams,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::conv2d(input, weight, params, out)
}

pub(crate) fn conv_transpose2d<'a, T: FloatDType, D: Device>(
    input: View<'a, D, T>,
    weight: View<'a, D, T>,
    params: Conv2dParams,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::conv_transpose2d(input, weight, params, out)
}

pub(crate) fn unfold<'a, T: FloatDType, D: Device>(
    input: View<'a, D, T>,
    kernel: [usize; 2],
    params: Conv2dParams,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::unfold(input, kernel, params, out)
}

pub(crate) fn fold<'a, T: FloatDType, D: Device>(
    columns: View<'a, D, T>,
    kernel: [usize; 2],
    image: [usize; 2],
    params: Conv2dParams,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::fold(columns, kernel, image, params, out)
}

pub(crate) fn resample<'a, T: FloatDType, D: Device>(
    op: Resample,
    src: View<'a, D, T>,
    axis: usize,
    n_out: usize,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::resample(op, src, axis, n_out, out)
}

#[cfg(feature = "std")] // autograd
pub(crate) fn resample_backward<'a, T: FloatDType, D: Device>(
    op: Resample,
    grad: View<'a, D, T>,
    axis: usize,
    n_in: usize,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::resample_backward(op, grad, axis, n_in, out)
}

pub(crate) fn pool2d<'a, T: FloatDType, D: Device>(
    pool: Pool,
    input: View<'a, D, T>,
    params: PoolParams<2>,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::pool2d(pool, input, params, out)
}

pub(crate) fn max_pool2d_indices<'a, T: FloatDType, D: Device>(
    input: View<'a, D, T>,
    params: PoolParams<2>,
) -> impl FnMut(&mut Out<D, u32>) -> Result<()> + 'a {
    move |out| D::max_pool2d_indices(input, params, out)
}

pub(crate) fn max_pool2d_at<'a, T: FloatDType, D: Device>(
    input: View<'a, D, T>,
    indices: View<'a, D, u32>,
    params: PoolParams<2>,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::max_pool2d_at(input, indices, params, out)
}

#[cfg(feature = "std")] // autograd
pub(crate) fn conv2d_weight_grad<'a, T: FloatDType, D: Device>(
    input: View<'a, D, T>,
    grad: View<'a, D, T>,
    kernel: [usize; 2],
    params: Conv2dParams,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::conv2d_weight_grad(input, grad, kernel, params, out)
}

#[cfg(feature = "std")] // autograd
pub(crate) fn max_pool2d_backward<'a, T: FloatDType, D: Device>(
    indices: View<'a, D, u32>,
    grad: View<'a, D, T>,
    input: [usize; 2],
    params: PoolParams<2>,
) -> impl FnMut(&mut Out<D, T>) -> Result<()> + 'a {
    move |out| D::max_pool2d_backward(indices, grad, input, params, out)
}
