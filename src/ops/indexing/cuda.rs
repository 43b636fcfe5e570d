//! The family's CUDA kernels (`ptx/indexing.cu`): a thread per index, bad indices recorded in one device word and
//! reported as the CPU reports them.

use super::IndexingKernels;
use crate::device::cuda::kernels::{KernelLayout, KernelSig};
use crate::device::cuda::{
    capturing, check, defer_index_check, dest, launch, read_back, read_pinned, Arg, CudaStorage,
    IndexCheck,
};
use crate::device::{Cuda, Kernels};
use crate::dtype::{IndexDType, WithDType};
use crate::error::{Error, Result};
use crate::layout::Layout;
use cust::sys as cu;

/// The device word where gather/scatter kernels record the first position holding an out-of-range index.
struct IndexError(CudaStorage<i64>);

impl IndexError {
    fn new(op: &'static str) -> Result<Self> {
        let flag = CudaStorage::<i64>::alloc(op, 1)?;
        if capturing() {
            // Set outside the graph, when the capture ends (a memset here would be a host call, not recorded).
            return Ok(IndexError(flag));
        }
        // All bits set (u64::MAX to the kernels, which take an unsigned atomic minimum): no bad index.
        // SAFETY: `flag` is a fresh allocation of one i64, that is two 32-bit words.
        check(op, unsafe {
            cu::cuMemsetD32_v2(flag.ptr_at(0), u32::MAX, 2)
        })?;
        Ok(IndexError(flag))
    }
    fn ptr(&self) -> u64 {
        self.0.ptr_at(0)
    }
    /// Reads the flag back (this waits for the kernel: the one host synchronisation of these ops) and turns a
    /// recorded position into the error the CPU gives, naming the index found there.
    fn check<I: IndexDType>(
        self,
        op: &'static str,
        (idx, li): (&CudaStorage<I>, &Layout),
        axis: usize,
        size: usize,
    ) -> Result<()> {
        if capturing() {
            // Checked after each replay instead: the bad index is read from the index tensor's buffer, which
            // the graph keeps allocated (it addresses it).
            // (Not a clone of the storage: the index tensor must stay its buffer's only holder, so that
            // writing the next batch's indices into it goes in place.)
            let (base, layout) = (idx.ptr_at(0), *li);
            let report = move |pos: usize| {
                let at = base + (linear_offset(&layout, pos) * size_of::<I>()) as u64;
                // SAFETY: `at` is an element of the index tensor's buffer, which every graph holding this check
                // pins (the kernel addressed it during the capture), so it stays allocated while the check lives.
                match unsafe { read_pinned::<I>(op, at) } {
                    Ok(bad) => Error::IndexOutOfRange {
                        op,
                        axis,
                        index: bad.to_signed(),
                        size,
                    },
                    Err(e) => e,
                }
            };
            return defer_index_check(op, IndexCheck::new(self.0, alloc::boxed::Box::new(report)));
        }
        let mut pos = [0];
        read_back(op, &self.0, 0, &mut pos)?;
        if pos[0] == -1 {
            return Ok(());
        }
        let mut bad = [I::ZERO];
        read_back(op, idx, linear_offset(li, pos[0] as usize), &mut bad)?;
        Err(Error::IndexOutOfRange {
            op,
            axis,
            index: bad[0].to_signed(),
            size,
        })
    }
}

/// Storage offset of the `i`-th element (row-major) of a view.
fn linear_offset(l: &Layout, mut i: usize) -> usize {
    let mut off = l.offset();
    for (&d, &s) in l.dims().iter().zip(l.strides()).rev() {
        off += (i % d) * s;
        i /= d;
    }
    off
}

// SAFETY: every output element is written (gather: one per index; scatter_add: the copy of the destination
// first), and device memory is never read as host values without a copy.
unsafe impl IndexingKernels for Cuda {
    fn gather<T: WithDType, I: IndexDType>(
        op: &'static str,
        (src, ls): (&CudaStorage<T>, &Layout),
        (idx, li): (&CudaStorage<I>, &Layout),
        axis: usize,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        let (size, step) = (ls.dims()[axis], ls.strides()[axis]);
        let walk = ls.along_index(li, axis);
        let n = li.numel();
        let out_ptr = dest(op, out, n)?;
        let err = IndexError::new(op)?;
        let args = alloc::vec![
            Arg::U64(n as u64),
            Arg::Layout(KernelLayout::new(li)),
            Arg::Layout(KernelLayout::new(&walk)),
            Arg::U64(size as u64),
            Arg::U64(step as u64),
            Arg::U64(idx.ptr_at(li.offset())),
            Arg::U64(src.ptr_at(walk.offset())),
            Arg::U64(out_ptr),
            Arg::U64(err.ptr()),
        ];
        launch(op, KernelSig::gather(I::DTYPE, T::DTYPE), n, args)?;
        err.check(op, (idx, li), axis, size)
    }

    fn scatter_add<T: WithDType, I: IndexDType>(
        op: &'static str,
        (dst, ld): (&CudaStorage<T>, &Layout),
        (idx, li): (&CudaStorage<I>, &Layout),
        (src, ls): (&CudaStorage<T>, &Layout),
        axis: usize,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        // The output is a dense copy of the destination view, with the source added through atomics.
        Self::copy((dst, ld), out)?;
        let dense = Layout::contiguous(*ld.dims());
        let (size, step) = (dense.dims()[axis], dense.strides()[axis]);
        let walk = dense.along_index(li, axis);
        let n = li.numel();
        let err = IndexError::new(op)?;
        let args = alloc::vec![
            Arg::U64(n as u64),
            Arg::Layout(KernelLayout::new(li)),
            Arg::Layout(KernelLayout::new(&walk)),
            Arg::Layout(KernelLayout::new(ls)),
            Arg::U64(size as u64),
            Arg::U64(step as u64),
            Arg::U64(idx.ptr_at(li.offset())),
            Arg::U64(src.ptr_at(ls.offset())),
            Arg::U64(out.ptr_at(0)),
            Arg::U64(err.ptr()),
        ];
        launch(op, KernelSig::scatter_add(I::DTYPE, T::DTYPE), n, args)?;
        err.check(op, (idx, li), axis, size)
    }
}
