//! The family on `Cuda`: the op's own CUDA kernels on device addresses (a zeroed output, so a kernel that skips
//! an element leaves a zero, never stale memory).

use super::{
    CudaView, CustomKernels, CustomOp1, CustomOp1Backward, CustomOp2, CustomOp2Backward, Dense,
};
use crate::device::cuda::CudaStorage;
use crate::device::{Cuda, Kernels};
use crate::dtype::{FloatDType, WithDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::shape::{Dims, Shape};
use core::marker::PhantomData;

/// A contiguous operand's device view.
fn view<'a, T: WithDType>((buffer, layout): Dense<'a, CudaStorage<T>>) -> CudaView<'a, T> {
    debug_assert!(layout.is_contiguous());
    CudaView {
        ptr: buffer.ptr_at(layout.offset()),
        dims: layout.dims(),
        _elements: PhantomData,
    }
}

/// A zeroed output of `dims` and its device view.
fn output<T: WithDType, S: Shape>(dims: &Dims) -> Result<(CudaStorage<T>, Layout)> {
    let out = Cuda::full::<T, S>(dims.numel(), T::ZERO)?;
    Ok((out, Layout::contiguous(*dims)))
}

impl CustomKernels for Cuda {
    fn custom_forward<T: WithDType, S: Shape, Op: CustomOp1<T>>(
        op: &Op,
        input: Dense<'_, CudaStorage<T>>,
        out_dims: &Dims,
    ) -> Result<CudaStorage<T>> {
        let (out, layout) = output::<T, S>(out_dims)?;
        if out_dims.numel() > 0 {
            op.cuda_forward(view(input), view((&out, &layout)))?;
        }
        Ok(out)
    }

    fn custom_backward<T: FloatDType, S: Shape, Op: CustomOp1Backward<T>>(
        op: &Op,
        input: Dense<'_, CudaStorage<T>>,
        output_: Dense<'_, CudaStorage<T>>,
        grad_output: Dense<'_, CudaStorage<T>>,
    ) -> Result<CudaStorage<T>> {
        let dims = *input.1.dims();
        let (dx, layout) = output::<T, S>(&dims)?;
        if dims.numel() > 0 {
            op.cuda_backward(
                view(input),
                view(output_),
                view(grad_output),
                view((&dx, &layout)),
            )?;
        }
        Ok(dx)
    }

    fn custom_forward2<T: WithDType, S: Shape, Op: CustomOp2<T>>(
        op: &Op,
        lhs: Dense<'_, CudaStorage<T>>,
        rhs: Dense<'_, CudaStorage<T>>,
        out_dims: &Dims,
    ) -> Result<CudaStorage<T>> {
        let (out, layout) = output::<T, S>(out_dims)?;
        if out_dims.numel() > 0 {
            op.cuda_forward(view(lhs), view(rhs), view((&out, &layout)))?;
        }
        Ok(out)
    }

    fn custom_backward2<T: FloatDType, SA: Shape, SB: Shape, Op: CustomOp2Backward<T>>(
        op: &Op,
        views: [Dense<'_, CudaStorage<T>>; 4],
    ) -> Result<(CudaStorage<T>, CudaStorage<T>)> {
        let (dims_a, dims_b) = (*views[0].1.dims(), *views[1].1.dims());
        let (da, la) = output::<T, SA>(&dims_a)?;
        let (db, lb) = output::<T, SB>(&dims_b)?;
        if dims_a.numel() + dims_b.numel() > 0 {
            let [a, b, y, g] = views.map(view);
            op.cuda_backward([a, b, y, g, view((&da, &la)), view((&db, &lb))])?;
        }
        Ok((da, db))
    }
}
