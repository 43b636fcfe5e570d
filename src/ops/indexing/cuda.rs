//! The family's CUDA kernels (`src/ops/indexing/indexing.cu`): a thread per index, bad indices recorded in one device word and
//! reported as the CPU reports them.

use super::IndexingKernels;
use crate::device::cuda::kernels::sizes::*;
use crate::device::cuda::kernels::{KernelLayout, KernelSig};
use crate::device::cuda::{
    capture_record, capturing, check, defer_index_check, dest, launch, read_back, read_pinned, Arg,
    CudaStorage, IndexCheck,
};
use crate::device::{Cuda, Kernels};
use crate::dtype::{DType, FloatDType, IndexDType, WithDType};
use crate::error::{Error, Result};
use crate::layout::Layout;
use alloc::vec::Vec;
use cust::sys as cu;

/// The device word where gather/scatter kernels record the first bad index: its position and value (the record
/// `record_bad` in src/ops/indexing/indexing.cu writes), or all bits set when there is none. Eagerly a word of its own; during
/// a capture one of the graph's record words, which each replay copies out.
enum IndexError {
    Eager(CudaStorage<i64>),
    Captured { slot: usize, at: u64 },
}

impl IndexError {
    fn new(op: &'static str) -> Result<Self> {
        if capturing() {
            // Set when the capture ends (a memset here would be a host call, not recorded).
            let (slot, at) = capture_record(op)?;
            return Ok(IndexError::Captured { slot, at });
        }
        let flag = CudaStorage::<i64>::alloc(op, 1)?;
        // All bits set (u64::MAX to the kernels, which take an unsigned atomic minimum): no bad index.
        // SAFETY: `flag` is a fresh allocation of one i64, that is two 32-bit words.
        check(op, unsafe {
            cu::cuMemsetD32_v2(flag.ptr_at(0), u32::MAX, 2)
        })?;
        Ok(IndexError::Eager(flag))
    }
    fn ptr(&self) -> u64 {
        match self {
            IndexError::Eager(flag) => flag.ptr_at(0),
            IndexError::Captured { at, .. } => *at,
        }
    }
    /// Reads the record back (this waits for the kernel: the one host synchronisation of these ops) and turns a
    /// bad index into the error the CPU gives. During a capture the check is handed to the graph instead, which
    /// reads the record after its replays.
    fn check<I: IndexDType>(
        self,
        op: &'static str,
        (idx, li): (&CudaStorage<I>, &Layout),
        axis: usize,
        size: usize,
    ) -> Result<()> {
        // (The index tensor's address, not a clone of its storage: it must stay its buffer's only holder, so
        // that writing the next batch's indices into it goes in place. A graph pins the buffer it addressed.)
        let report = reporter::<I>(op, idx.ptr_at(0), *li, axis, size);
        let flag = match self {
            IndexError::Captured { slot, .. } => {
                return defer_index_check(
                    op,
                    IndexCheck::new(slot, alloc::boxed::Box::new(report)),
                );
            }
            IndexError::Eager(flag) => flag,
        };
        let mut record = [0i64];
        read_back(op, &flag, 0, &mut record)?;
        match record[0] as u64 {
            u64::MAX => Ok(()),
            bad => Err(report(bad)),
        }
    }
}

/// A kernel's record of a bad index, as `record_bad` in src/ops/indexing/indexing.cu writes it: the position in the high word
/// (saturated at 2^32 - 2), the value in the low word (u32 as it is; i32, and i64 saturated to the i32 range, as an
/// i32).
#[derive(Debug, PartialEq)]
struct BadIndex {
    /// The first bad position, unless it was too large to record.
    position: Option<usize>,
    /// The index found there, as recorded.
    index: i128,
    /// False when the value may have been saturated (an i64 at an i32 bound): read it from the tensor instead.
    exact: bool,
}

impl BadIndex {
    fn decode(record: u64, index_dtype: DType) -> Self {
        let (pos, bits) = ((record >> 32) as usize, record as u32);
        let index = match index_dtype {
            DType::U32 => i128::from(bits),
            _ => i128::from(bits as i32),
        };
        BadIndex {
            position: (pos < 0xffff_fffe).then_some(pos),
            index,
            exact: index_dtype != DType::I64
                || (index != i32::MIN.into() && index != i32::MAX.into()),
        }
    }
}

/// Turns a kernel's record of a bad index (`record_bad` in src/ops/indexing/indexing.cu: the position in the high word, the
/// value in the low word) into the error the CPU gives. The value is exact for u32 and i32 indices and for i64
/// ones within the i32 range; a larger i64 one is read from the index tensor's buffer (at `base`, viewed by
/// `layout`), exact eagerly and, for a graph, as the buffer holds it when the check is read.
fn reporter<I: IndexDType>(
    op: &'static str,
    base: u64,
    layout: Layout,
    axis: usize,
    size: usize,
) -> impl Fn(u64) -> Error + Send + Sync + 'static {
    move |record: u64| {
        let BadIndex {
            position,
            mut index,
            exact,
        } = BadIndex::decode(record, I::DTYPE);
        if let (false, Some(pos)) = (exact, position) {
            let at = base + (layout.offset_of(pos) * size_of::<I>()) as u64;
            // SAFETY: `at` is an element of the index tensor's buffer: alive while the eager op borrows it, and
            // pinned by every graph holding this check (the kernel addressed it during the capture).
            match unsafe { read_pinned::<I>(op, at) } {
                Ok(bad) => index = bad.to_signed(),
                Err(e) => return e,
            }
        }
        Error::IndexOutOfRange {
            op,
            axis,
            index,
            size,
        }
    }
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

    fn cross_entropy_backward<T: FloatDType, I: IndexDType>(
        (log_probs, llp): (&CudaStorage<T>, &Layout),
        (labels, llab): (&CudaStorage<I>, &Layout),
        (g, lg): (&CudaStorage<T>, &Layout),
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        const OP: &str = "cross_entropy";
        let n = llp.numel();
        let out_ptr = dest(OP, out, n)?;
        let classes = llp.dims().last().copied().unwrap_or(1).max(1);
        let args = alloc::vec![
            Arg::U64(n as u64),
            Arg::U64(classes as u64),
            Arg::Layout(KernelLayout::new(llp)),
            Arg::Layout(KernelLayout::new(llab)),
            Arg::Layout(KernelLayout::new(lg)),
            Arg::U64(log_probs.ptr_at(llp.offset())),
            Arg::U64(labels.ptr_at(llab.offset())),
            Arg::U64(g.ptr_at(lg.offset())),
            Arg::U64(out_ptr),
        ];
        launch(
            OP,
            KernelSig::cross_entropy_backward(I::DTYPE, T::DTYPE),
            n,
            args,
        )
    }
}

/// The family's kernel signatures, which launches are checked against (and `tests/cuda_ptx.rs` checks against the
/// compiled PTX).
impl KernelSig {
    /// `gather_{I}_{T}(n, li, walk, size, step, idx, src, out, err)`.
    pub fn gather(index: DType, t: DType) -> Self {
        let stem = crate::ops::kernel_name("gather", index);
        Self::new(
            "indexing",
            &stem,
            t,
            &[
                COUNT,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                COUNT,
                COUNT,
                PTR,
                PTR,
                PTR,
                PTR,
            ],
        )
    }
    /// `scatter_add_{I}_{T}(n, li, walk, ls, size, step, idx, src, out, err)`.
    pub fn scatter_add(index: DType, t: DType) -> Self {
        let stem = crate::ops::kernel_name("scatter_add", index);
        Self::new(
            "indexing",
            &stem,
            t,
            &[
                COUNT,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                COUNT,
                COUNT,
                PTR,
                PTR,
                PTR,
                PTR,
            ],
        )
    }
    /// `cross_entropy_backward_{I}_{T}(n, classes, llp, llab, lg, log_probs, labels, g, out)`.
    pub fn cross_entropy_backward(index: DType, t: DType) -> Self {
        let stem = crate::ops::kernel_name("cross_entropy_backward", index);
        Self::new(
            "indexing",
            &stem,
            t,
            &[
                COUNT,
                COUNT,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                PTR,
                PTR,
                PTR,
                PTR,
            ],
        )
    }
}

/// The family's kernels of element type `t`, for the catalog (`ops::cuda_catalog`).
pub(crate) fn signatures(t: DType, all: &mut Vec<KernelSig>) {
    for index in [DType::U32, DType::I32, DType::I64] {
        all.push(KernelSig::gather(index, t));
        all.push(KernelSig::scatter_add(index, t));
        if t.is_float() {
            all.push(KernelSig::cross_entropy_backward(index, t));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's reading of the kernels' record (`record_bad` in src/ops/indexing/indexing.cu writes it; the GPU tests check
    /// the two together): position high, value low, signed for i32/i64, saturated i64 values marked inexact.
    #[test]
    fn bad_index_records_decode() {
        let record = |pos: u64, bits: u32| (pos << 32) | u64::from(bits);
        let d = |r, t| BadIndex::decode(r, t);
        let bad = |position, index, exact| BadIndex {
            position,
            index,
            exact,
        };
        assert_eq!(d(record(5, 7), DType::U32), bad(Some(5), 7, true));
        assert_eq!(
            d(record(0, 3_000_000_000), DType::U32),
            bad(Some(0), 3_000_000_000, true)
        );
        assert_eq!(
            d(record(2, -3i32 as u32), DType::I32),
            bad(Some(2), -3, true)
        );
        assert_eq!(
            d(record(9, -3i32 as u32), DType::I64),
            bad(Some(9), -3, true)
        );
        assert_eq!(
            d(record(1, i32::MIN as u32), DType::I64),
            bad(Some(1), i32::MIN.into(), false)
        );
        assert_eq!(
            d(record(1, i32::MAX as u32), DType::I32),
            bad(Some(1), i32::MAX.into(), true)
        );
        // The largest position recorded means "at or past 2^32 - 2": unknown.
        assert_eq!(d(record(0xffff_fffe, 4), DType::U32), bad(None, 4, true));
    }
}
