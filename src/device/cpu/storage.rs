//! [`CpuStorage`]: a CPU buffer that keeps small tensors inline and shares large ones.
//!
//! A heap buffer costs two allocations (`Arc` and `Vec`) and their frees, about 100 ns on the bench machine:
//! more than a 4x4 matmul or a scalar loss takes to compute. Buffers of at most [`INLINE_BYTES`] (16 f32, a
//! 4x4 matrix, any scalar) therefore live inside the tensor, and cloning one copies its 64 bytes, which is no
//! dearer than an `Arc`'s atomic increment. Larger buffers sit behind an `Arc`, so views and clones share them.
//! Either way a tensor's elements never change under another tensor's feet: an inline buffer belongs to its
//! tensor alone, and a shared one is written only when nothing else holds it ([`CpuStorage::get_mut`]). A shared
//! buffer goes back to the [`pool`] when its last tensor drops.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::marker::PhantomData;

use super::pool;
use crate::device::host::elementwise::as_slots;
use crate::device::Write;
use crate::dtype::WithDType;
use core::mem::MaybeUninit;

use crate::device::INLINE_BYTES;
const INLINE_WORDS: usize = INLINE_BYTES / 8;

/// The buffer of a [`Cpu`](super::Cpu) tensor: its elements, inline when they fit in [`INLINE_BYTES`], else in a
/// shared heap vector. It dereferences to `&[T]`.
///
/// ```
/// use typed_tensor::prelude::*;
/// let small = Tensor::<f32, Rank2<4, 4>, Cpu>::ones();
/// assert!(small.storage().is_inline()); // no heap allocation
/// let big = Tensor::<f32, Rank1<17>, Cpu>::ones();
/// assert!(!big.storage().is_inline());
/// assert_eq!(big.storage().len(), 17);
/// ```
#[derive(Clone)]
pub struct CpuStorage<T: WithDType>(Repr<T>);

#[derive(Clone)]
enum Repr<T: WithDType> {
    /// `len` elements at the start of `words` (16-byte aligned, so any dtype can be viewed there). `len` is a
    /// whole word so that moving the buffer copies aligned words (a `u8` beside the tag made rustc copy the
    /// payload from an odd offset, which stalled store forwarding).
    Inline {
        words: Words,
        len: usize,
        _elem: PhantomData<T>,
    },
    Shared(Arc<HeapBuffer<T>>),
}

/// A heap buffer; one this crate allocated returns to the [`pool`] when dropped.
struct HeapBuffer<T: WithDType> {
    elements: Vec<T>,
    /// False for a vector the user handed over ([`CpuStorage::from_vec`]): its capacity is whatever the user's
    /// code left it, which no request of ours asks for again, so keeping it would only park memory the allocator
    /// could have reused (the digits example's input batches, built by `collect`, did exactly that).
    recycle: bool,
}

impl<T: WithDType> HeapBuffer<T> {
    /// A buffer this crate allocated (through the [`pool`]).
    fn shared(elements: Vec<T>) -> Repr<T> {
        Self::adopt(elements, true)
    }

    /// A buffer holding `elements`, returned to the [`pool`] when dropped if `recycle`.
    fn adopt(elements: Vec<T>, recycle: bool) -> Repr<T> {
        Repr::Shared(Arc::new(HeapBuffer { elements, recycle }))
    }
}

impl<T: WithDType> Drop for HeapBuffer<T> {
    fn drop(&mut self) {
        if self.recycle {
            pool::recycle(core::mem::take(&mut self.elements));
        }
    }
}

/// The inline elements. 16-byte alignment puts them at a 16-byte boundary of the tensor too, so a move (copied
/// 16 bytes at a time) reads each 16-byte piece a kernel just stored whole: a copy straddling two such stores
/// cannot be forwarded from them and waits for both to reach the cache (measured: 40% of a 4x4 matmul).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Words([u64; INLINE_WORDS]);

impl<T: WithDType> CpuStorage<T> {
    /// Whether `n` elements of `T` fit inline.
    #[inline]
    const fn fits_inline(n: usize) -> bool {
        n <= INLINE_BYTES / core::mem::size_of::<T>()
    }

    /// A fresh buffer of `n` elements (zeros until `fill` writes them), built once in its final form.
    #[inline(always)]
    pub(crate) fn filled_by(n: usize, fill: impl FnOnce(&mut [T])) -> Self {
        if Self::fits_inline(n) {
            let mut words = Words([0; INLINE_WORDS]);
            fill(&mut crate::dtype::cast_slice_mut::<u64, T>(&mut words.0)[..n]);
            CpuStorage(Repr::Inline {
                words,
                len: n,
                _elem: PhantomData,
            })
        } else {
            let mut v = pool::filled(n, T::ZERO);
            fill(&mut v);
            CpuStorage(HeapBuffer::shared(v))
        }
    }

    /// A fresh buffer of `n` zeros. Generic over the element type alone, so a model's many shapes share one copy.
    #[inline(always)]
    pub(crate) fn zeros(n: usize) -> Self {
        Self::filled_by(n, |_| {})
    }

    /// [`Self::filled_by`] with the fill as a trait object, kept out of line: the constructors of every shape
    /// (`rand`, `arange`, ...) call this one copy instead of each carrying the buffer's construction.
    #[inline(never)]
    pub(crate) fn filled_dyn(n: usize, fill: &mut dyn FnMut(&mut [T])) -> Self {
        Self::filled_by(n, fill)
    }

    /// A fresh buffer of `n` elements that `write` fills: a kernel's output (inline when small, so a small result
    /// never touches the heap; else a vector from the [`pool`] whose spare capacity `write` initialises, with no
    /// pass over it first).
    ///
    /// # Safety
    ///
    /// Whenever `write` returns `Ok`, it has written an initialised value to every one of the `n` slots.
    pub(crate) unsafe fn try_written(
        op: &'static str,
        n: usize,
        write: &mut Write<'_, [MaybeUninit<T>]>,
    ) -> crate::error::Result<Self> {
        if Self::fits_inline(n) {
            let mut result = Ok(());
            // SAFETY: `write` writes only initialised values (the contract); the slots start as zeros.
            let storage = Self::filled_by(n, |out| result = write(unsafe { as_slots(out) }));
            return result.map(|()| storage);
        }
        // A request the allocator refuses is `op`'s error, not the end of the process.
        let mut v = pool::try_with_capacity(n).ok_or_else(|| super::out_of_memory::<T>(op, n))?;
        write(&mut v.spare_capacity_mut()[..n])?;
        // SAFETY: `write` returned `Ok`, so it initialised all `n` elements (the contract).
        unsafe { v.set_len(n) };
        Ok(CpuStorage(HeapBuffer::shared(v)))
    }

    /// A buffer holding a copy of `data`.
    #[inline]
    pub fn from_slice(data: &[T]) -> Self {
        if Self::fits_inline(data.len()) {
            Self::filled_by(data.len(), |s| s.copy_from_slice(data))
        } else {
            let mut v = pool::with_capacity(data.len());
            v.extend_from_slice(data); // one pass, no zeroing first
            CpuStorage(HeapBuffer::shared(v))
        }
    }

    /// A buffer holding `data` (kept as it is when too large to go inline; freed, not cached, when dropped).
    #[inline]
    pub fn from_vec(data: Vec<T>) -> Self {
        Self::holding(data, false)
    }

    /// `data` inline when small, else kept as it is (back to the [`pool`] when dropped if `recycle`).
    #[inline]
    fn holding(data: Vec<T>, recycle: bool) -> Self {
        if Self::fits_inline(data.len()) {
            Self::from_slice(&data)
        } else {
            CpuStorage(HeapBuffer::adopt(data, recycle))
        }
    }

    /// `n` copies of `value`.
    #[inline]
    pub fn full(n: usize, value: T) -> Self {
        if Self::fits_inline(n) {
            Self::filled_by(n, |s| s.fill(value))
        } else {
            CpuStorage(HeapBuffer::shared(pool::filled(n, value)))
        }
    }

    /// [`Self::full`], or `None` when the allocator refuses the buffer (no abort).
    pub(crate) fn try_full(n: usize, value: T) -> Option<Self> {
        if Self::fits_inline(n) {
            return Some(Self::full(n, value));
        }
        Some(CpuStorage(HeapBuffer::shared(pool::try_filled(n, value)?)))
    }

    /// [`Self::from_slice`], or `None` when the allocator refuses the buffer (no abort).
    pub(crate) fn try_from_slice(data: &[T]) -> Option<Self> {
        if Self::fits_inline(data.len()) {
            return Some(Self::from_slice(data));
        }
        let mut v = pool::try_with_capacity(data.len())?;
        v.extend_from_slice(data);
        Some(CpuStorage(HeapBuffer::shared(v)))
    }

    /// True when the elements live inside the tensor (no heap allocation).
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
    }

    /// The elements, mutably, when no other tensor shares them (an inline buffer never is shared).
    #[inline]
    pub fn get_mut(&mut self) -> Option<&mut [T]> {
        match &mut self.0 {
            Repr::Inline { len, words, .. } => {
                Some(&mut crate::dtype::cast_slice_mut::<u64, T>(&mut words.0)[..*len])
            }
            Repr::Shared(v) => Arc::get_mut(v).map(|v| v.elements.as_mut_slice()),
        }
    }
}

impl<T: WithDType> core::ops::Deref for CpuStorage<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        match &self.0 {
            Repr::Inline { len, words, .. } => {
                &crate::dtype::cast_slice::<u64, T>(&words.0)[..*len]
            }
            Repr::Shared(v) => &v.elements,
        }
    }
}

impl<T: WithDType> fmt::Debug for CpuStorage<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    fn round_trip<T: WithDType>(make: impl Fn(usize) -> T) {
        let per = INLINE_BYTES / core::mem::size_of::<T>();
        for n in [0, 1, per - 1, per, per + 1, 3 * per] {
            let data: Vec<T> = (0..n).map(&make).collect();
            let s = CpuStorage::from_slice(&data);
            assert_eq!(s.is_inline(), n <= per, "{n} elements of {:?}", T::DTYPE);
            assert_eq!(&s[..], &data[..]);
            assert_eq!(&CpuStorage::from_vec(data.clone())[..], &data[..]);
            if n > 0 {
                let f = CpuStorage::full(n, make(1));
                assert!(f.iter().all(|&x| x == make(1)));
                assert_eq!(f.len(), n);
            }
        }
    }

    #[test]
    fn every_dtype_round_trips_inline_and_shared() {
        round_trip(|i| i as u8);
        round_trip(|i| i as u32);
        round_trip(|i| -(i as i64));
        round_trip(|i| f16::from_f32(i as f32));
        round_trip(|i| bf16::from_f32(i as f32));
        round_trip(|i| i as f32 * 0.5);
        round_trip(|i| i as f64 * 0.25);
    }

    /// A kernel's output: written in place into fresh slots (inline or the spare capacity of a cached vector),
    /// adopted on success, dropped unread on failure.
    #[test]
    fn written_outputs_are_adopted_on_success_and_dropped_on_failure() {
        for n in [3, 16, 17, 1000] {
            // SAFETY: the closure writes all `n` slots before returning `Ok`.
            let s = unsafe {
                CpuStorage::<f32>::try_written("test", n, &mut |out| {
                    out.iter_mut().enumerate().for_each(|(i, o)| {
                        o.write(i as f32);
                    });
                    Ok(())
                })
            };
            let s = s.unwrap();
            assert_eq!(s.is_inline(), n <= 16);
            assert!(s.iter().enumerate().all(|(i, &x)| x == i as f32));
            // SAFETY: the closure returns `Err` after writing only part of the slots: nothing is adopted.
            let failed = unsafe {
                CpuStorage::<f32>::try_written("test", n, &mut |out| {
                    out[0].write(1.0);
                    Err(crate::error::Error::EmptyAxis {
                        op: "test",
                        axis: 0,
                    })
                })
            };
            assert!(failed.is_err());
        }
    }

    #[test]
    fn inline_is_never_shared_and_shared_writes_only_when_unique() {
        let mut a = CpuStorage::from_slice(&[1f32, 2.0]);
        let b = a.clone();
        a.get_mut().unwrap()[0] = 9.0; // the clone copied the elements
        assert_eq!((&a[..], &b[..]), (&[9.0, 2.0][..], &[1.0, 2.0][..]));

        let mut big = CpuStorage::full(100, 1f32);
        let keep = big.clone();
        assert!(big.get_mut().is_none(), "shared with `keep`");
        drop(keep);
        big.get_mut().unwrap()[0] = 5.0;
        assert_eq!(big[0], 5.0);
    }
}
