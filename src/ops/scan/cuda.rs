//! The family's CUDA kernels (`ptx/scan.cu`): a thread per lane, walking it in order.

use super::{Scan, ScanKernels};
use crate::device::cuda::kernels::{KernelLayout, KernelSig};
use crate::device::cuda::{dest, launch, Arg, CudaStorage};
use crate::device::Cuda;
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::Layout;
use crate::shape::MAX_RANK;
use alloc::vec::Vec;

/// The lane walk of views over the same dims: the number of lanes and the length of each, then per operand (the
/// inputs, then the dense output) the layout of the lanes' first elements and the step along a lane.
fn lanes(views: &[&Layout], axis: usize) -> (usize, usize, Vec<Arg>, Vec<Arg>) {
    let dims = *views[0].dims();
    let mut on_axis = [false; MAX_RANK];
    on_axis[axis] = true;
    let dense = Layout::contiguous(dims);
    let (mut outer, mut steps) = (Vec::new(), Vec::new());
    let mut count = 0;
    for layout in views.iter().copied().chain([&dense]) {
        let (o, along) = layout.split_reduced(&on_axis);
        count = o.numel();
        outer.push(Arg::Layout(KernelLayout::new(&o)));
        steps.push(Arg::U64(along.strides()[0] as u64));
    }
    (count, dims[axis], outer, steps)
}

// SAFETY: every kernel writes each element of its output (a thread per lane, each lane's every element), and
// device memory is never read as host values without a copy.
unsafe impl ScanKernels for Cuda {
    fn scan<T: WithDType>(
        op: Scan,
        (storage, layout): (&CudaStorage<T>, &Layout),
        axis: usize,
        reverse: bool,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        let out_ptr = dest(op.name(), out, layout.numel())?;
        let (count, len, outer, steps) = lanes(&[layout], axis);
        let mut args = alloc::vec![Arg::U64(count as u64), Arg::U64(len as u64)];
        args.extend(outer);
        args.extend(steps);
        args.extend([
            Arg::U64(storage.ptr_at(layout.offset())),
            Arg::U64(out_ptr),
            Arg::U64(reverse as u64),
        ]);
        launch(op.name(), KernelSig::scan(op.name(), T::DTYPE), count, args)
    }

    fn scan_index<T: WithDType>(
        op: Scan,
        (storage, layout): (&CudaStorage<T>, &Layout),
        axis: usize,
        out: &mut CudaStorage<u32>,
    ) -> Result<()> {
        let out_ptr = dest(op.name(), out, layout.numel())?;
        let (count, len, outer, steps) = lanes(&[layout], axis);
        let mut args = alloc::vec![Arg::U64(count as u64), Arg::U64(len as u64)];
        args.extend(outer);
        args.extend(steps);
        args.extend([Arg::U64(storage.ptr_at(layout.offset())), Arg::U64(out_ptr)]);
        launch(
            op.name(),
            KernelSig::scan_index(op.name(), T::DTYPE),
            count,
            args,
        )
    }

    fn cumprod_backward<T: WithDType>(
        (x, lx): (&CudaStorage<T>, &Layout),
        (g, lg): (&CudaStorage<T>, &Layout),
        axis: usize,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        let out_ptr = dest("cumprod", out, lx.numel())?;
        let (count, len, outer, steps) = lanes(&[lx, lg], axis);
        let mut args = alloc::vec![Arg::U64(count as u64), Arg::U64(len as u64)];
        args.extend(outer);
        args.extend(steps);
        args.extend([
            Arg::U64(x.ptr_at(lx.offset())),
            Arg::U64(g.ptr_at(lg.offset())),
            Arg::U64(out_ptr),
        ]);
        launch(
            "cumprod",
            KernelSig::cumprod_backward(T::DTYPE),
            count,
            args,
        )
    }
}
