//! The host device: storage is a [`CpuStorage`], inline for small buffers and an `Arc<Vec<T>>` shared by views
//! and clones for larger ones, whose freed buffers the [`pool`] hands to later outputs of the same size.
//!
//! Every kernel walks its operands with [`for_each_row`]: dense operands collapse to one row and run a plain
//! slice loop the compiler vectorises; strided ones (transposed, narrowed, broadcast) walk row by row. Kernels
//! write into a destination slice: a fresh output ([`CpuStorage::for_output`], from the buffer cache when it
//! has one of the size) or a buffer only its tensor holds (`CpuStorage::get_mut`), so nothing that shares a
//! buffer can observe a write.

pub(crate) mod elementwise;
pub(crate) mod pool;
mod storage;

#[cfg(feature = "std")]
pub use pool::MemoryStats as CpuMemoryStats;
pub use storage::CpuStorage;

use elementwise::map_view;

use super::host::elementwise::as_slots;
use super::{Kernels, Write};
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::{Layout, Strided, ViewOf};
use crate::shape::Shape;
use alloc::vec::Vec;
use core::mem::MaybeUninit;

/// The error of an allocation of `n` elements of `T` that the allocator refused.
#[cold]
pub(super) fn out_of_memory<T>(op: &'static str, n: usize) -> crate::error::Error {
    crate::error::Error::OutOfMemory {
        op,
        bytes: n.saturating_mul(core::mem::size_of::<T>()),
    }
}

/// The CPU. Zero-sized; tensors on it keep their elements in shared host memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpu;

// SAFETY: every kernel below initialises its whole output on `Ok` (the host loops write one value per output
// position; the rest start from `zeroed`), and only `Operand::Out` reads the destination.
unsafe impl Kernels for Cpu {
    type Buffer<T: WithDType> = [T];
    type Out<T: WithDType> = [MaybeUninit<T>];
    type Storage<T: WithDType, S: Shape> = CpuStorage<T>;
    type View<S: Shape> = Strided<S>;
    type Loose<T: WithDType> = CpuStorage<T>;
    const SHAPE_FREE: bool = true;
    const NAME: &'static str = "cpu";

    #[inline(always)]
    fn buffer<T: WithDType, S: Shape>(storage: &CpuStorage<T>) -> &[T] {
        storage
    }

    #[inline(always)]
    fn buffer_mut<T: WithDType, S: Shape>(storage: &mut CpuStorage<T>) -> Option<&mut [T]> {
        storage.get_mut()
    }

    #[inline(always)]
    unsafe fn alloc_with<T: WithDType, S: Shape>(
        op: &'static str,
        n: usize,
        write: &mut Write<'_, [MaybeUninit<T>]>,
    ) -> Result<CpuStorage<T>> {
        // SAFETY: `write` initialises all `n` elements when it returns `Ok` (this method's contract).
        unsafe { CpuStorage::try_written(op, n, write) }
    }

    #[inline(never)] // one body per element type: every shape's allocation calls it
    unsafe fn alloc_loose<T: WithDType>(
        op: &'static str,
        n: usize,
        write: &mut Write<'_, [MaybeUninit<T>]>,
    ) -> Result<CpuStorage<T>> {
        // SAFETY: `write` initialises all `n` elements when it returns `Ok` (this method's contract).
        unsafe { CpuStorage::try_written(op, n, write) }
    }

    #[inline(always)]
    fn loose<T: WithDType, S: Shape>(storage: &CpuStorage<T>) -> Option<&CpuStorage<T>> {
        Some(storage)
    }

    #[inline(always)]
    fn tighten<T: WithDType, S: Shape>(storage: CpuStorage<T>) -> CpuStorage<T> {
        storage
    }

    #[inline(always)]
    unsafe fn out_of<T: WithDType>(buffer: &mut [T]) -> &mut [MaybeUninit<T>] {
        // SAFETY: whatever writes through the slots writes only values (this method's contract).
        unsafe { as_slots(buffer) }
    }

    #[inline]
    fn view<T: WithDType, S0: Shape, S: Shape>(
        storage: &CpuStorage<T>,
        layout: &Layout,
    ) -> Result<(CpuStorage<T>, Strided<S>)> {
        Ok((storage.clone(), Strided::from_layout(layout)))
    }

    fn full<T: WithDType, S: Shape>(n: usize, value: T) -> Result<CpuStorage<T>> {
        CpuStorage::try_full(n, value).ok_or_else(|| out_of_memory::<T>("full", n))
    }

    fn from_slice<T: WithDType, S: Shape>(data: &[T]) -> Result<CpuStorage<T>> {
        CpuStorage::try_from_slice(data).ok_or_else(|| out_of_memory::<T>("from_slice", data.len()))
    }

    fn from_vec<T: WithDType, S: Shape>(data: Vec<T>) -> Result<CpuStorage<T>> {
        Ok(CpuStorage::from_vec(data))
    }

    #[inline]
    fn host_slice<T: WithDType>(buffer: &[T]) -> Option<&[T]> {
        Some(buffer)
    }

    #[inline]
    fn host_slice_mut<T: WithDType, S: Shape>(storage: &mut CpuStorage<T>) -> Option<&mut [T]> {
        storage.get_mut()
    }

    #[inline(always)]
    fn host_zeros<T: WithDType, S: Shape>(n: usize) -> Option<CpuStorage<T>> {
        Some(CpuStorage::zeros(n))
    }

    #[inline(always)]
    fn filled<T: WithDType, S: Shape>(
        n: usize,
        fill: &mut dyn FnMut(&mut [T]),
    ) -> Result<CpuStorage<T>> {
        Ok(CpuStorage::filled_dyn(n, fill))
    }

    fn to_vec<T: WithDType>(buffer: &[T], layout: &Layout) -> Result<Vec<T>> {
        Ok(map_view(buffer, layout, |x| x))
    }

    super::host::kernels::host_kernel_methods!(crate::device::host::kernels::cpu_copy);
}
