//! Reuse of large freed CPU buffers, so that an op returning a fresh tensor does not pay a page fault per 4 KiB.
//!
//! The system allocator hands a large request fresh pages from the kernel (glibc maps anything from 128 KiB up to
//! 32 MiB of its own and always above that) and returns them on free, so every fresh 64 MB output faults 16K
//! times: on the bench machine that costs more than the op itself (`&a + &b` on 16M f32 ran at 5.6 GiB/s into a
//! fresh buffer and 18 GiB/s into a reused one). Here a freed buffer of at least 128 KiB is kept, and the
//! next request of the same byte size and alignment, the common case in a loop that runs the same shapes every
//! step, takes it back with its pages already mapped. Only buffers this crate allocated are kept: a vector the
//! user hands to `from_vec` has whatever capacity the user's code gave it, so it goes back to the allocator,
//! which can reuse it for the user's next one. Without `std` (no lock) nothing is kept.
//!
//! The cache holds at most 512 MiB unless [`Cpu::set_cache_limit`] says otherwise, dropping the least recently
//! freed buffers first; [`Cpu::memory_stats`] reports it and [`Cpu::empty_cache`] gives everything back.

use crate::dtype::Plain;
use alloc::vec::Vec;

#[cfg(feature = "std")]
pub use cached::MemoryStats;

/// An empty vector with room for exactly `n` elements: a cached buffer of that size when there is one.
#[inline]
pub(crate) fn with_capacity<T: Plain>(n: usize) -> Vec<T> {
    #[cfg(feature = "std")]
    if let Some(v) = cached::take(n) {
        return v;
    }
    Vec::with_capacity(n)
}

/// `n` copies of `value`, in a cached buffer when there is one.
#[inline]
pub(crate) fn filled<T: Plain>(n: usize, value: T) -> Vec<T> {
    #[cfg(feature = "std")]
    if let Some(mut v) = cached::take(n) {
        v.resize(n, value);
        return v;
    }
    // `vec!` asks the allocator for zeroed pages when `value` is zero, which costs nothing until first touch.
    alloc::vec![value; n]
}

/// [`with_capacity`] that returns `None` instead of aborting when the allocator refuses (the `try_`
/// constructors' path: a request larger than memory is an error, not the end of the process).
pub(crate) fn try_with_capacity<T: Plain>(n: usize) -> Option<Vec<T>> {
    #[cfg(feature = "std")]
    if let Some(v) = cached::take(n) {
        return Some(v);
    }
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    Some(v)
}

/// [`filled`] that returns `None` instead of aborting when the allocator refuses.
pub(crate) fn try_filled<T: Plain>(n: usize, value: T) -> Option<Vec<T>> {
    #[cfg(feature = "std")]
    if let Some(mut v) = cached::take(n) {
        v.resize(n, value);
        return Some(v);
    }
    if zerocopy::IntoBytes::as_bytes(&value)
        .iter()
        .all(|&b| b == 0)
    {
        // Zeroed pages from the allocator, as `vec![0; n]` asks for: nothing is written until first touch.
        return try_zeroed(n);
    }
    let mut v = try_with_capacity(n)?;
    v.resize(n, value);
    Some(v)
}

/// `n` zeros straight from the allocator's zeroed memory, or `None` when it refuses.
fn try_zeroed<T: Plain>(n: usize) -> Option<Vec<T>> {
    let layout = alloc::alloc::Layout::array::<T>(n).ok()?;
    if layout.size() == 0 {
        return Some(alloc::vec![crate::dtype::zeroed::<T>(); n]); // no allocation (n is 0, or `T` has no bytes)
    }
    // SAFETY: `layout` has a non-zero size, as `alloc_zeroed` requires.
    let ptr = unsafe { alloc::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `ptr` comes from the global allocator with the layout of `n` elements of `T` (what a vector of
    // capacity `n` uses), and all `n` elements are initialised: zero bytes are a valid `T` (`Pod`).
    Some(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// Hands a buffer that is no longer needed to the cache (or to the allocator).
#[inline]
pub(crate) fn recycle<T: Plain>(v: Vec<T>) {
    #[cfg(feature = "std")]
    cached::keep(v);
    #[cfg(not(feature = "std"))]
    drop(v);
}

#[cfg(feature = "std")]
mod cached {
    use crate::device::Cpu;
    use crate::dtype::Plain;
    use alloc::alloc::{dealloc, Layout};
    use alloc::vec::Vec;
    use core::mem::{align_of, size_of};
    use std::sync::{Mutex, MutexGuard};

    /// Buffers smaller than this go straight back to the allocator: below its mmap threshold it reuses them
    /// itself, and a cache hit would save less than the lock costs.
    const MIN_BYTES: usize = 128 << 10;

    /// A freed allocation: its address and the layout it was allocated with.
    struct Block {
        ptr: *mut u8,
        layout: Layout,
    }

    // SAFETY: a block is an allocation nothing else refers to; any thread may reuse or free it.
    unsafe impl Send for Block {}

    impl Block {
        fn free(self) {
            // SAFETY: `ptr` was allocated by the global allocator with `layout` (a vector's buffer) and is
            // owned by this block alone.
            unsafe { dealloc(self.ptr, self.layout) }
        }
    }

    struct Cache {
        /// Oldest first: eviction takes from the front, reuse searches from the back (most recently freed).
        blocks: Vec<Block>,
        bytes: usize,
        limit: usize,
    }

    impl Cache {
        const fn new(limit: usize) -> Self {
            Cache {
                blocks: Vec::new(),
                bytes: 0,
                limit,
            }
        }

        /// The most recently freed block of `layout`, if any.
        fn take(&mut self, layout: Layout) -> Option<Block> {
            let i = self.blocks.iter().rposition(|b| b.layout == layout)?;
            self.bytes -= layout.size();
            Some(self.blocks.remove(i))
        }

        /// Keeps `block` if it fits the limit; returns what must be freed (it, or the oldest blocks it evicts).
        /// The caller frees them after releasing the lock: unmapping takes a while.
        fn keep(&mut self, block: Block) -> Vec<Block> {
            if block.layout.size() > self.limit {
                return alloc::vec![block];
            }
            self.bytes += block.layout.size();
            self.blocks.push(block);
            self.evict()
        }

        /// Sets the limit; returns the blocks beyond it.
        fn set_limit(&mut self, limit: usize) -> Vec<Block> {
            self.limit = limit;
            self.evict()
        }

        /// Takes the oldest blocks out until the rest fit the limit.
        fn evict(&mut self) -> Vec<Block> {
            let mut n = 0;
            while self.bytes > self.limit {
                self.bytes -= self.blocks[n].layout.size();
                n += 1;
            }
            self.blocks.drain(..n).collect()
        }
    }

    static CACHE: Mutex<Cache> = Mutex::new(Cache::new(512 << 20));

    fn lock() -> MutexGuard<'static, Cache> {
        // Every update leaves the books consistent, so a panic elsewhere while holding the lock changes nothing.
        CACHE.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn take<T: Plain>(n: usize) -> Option<Vec<T>> {
        let bytes = n.checked_mul(size_of::<T>())?;
        if bytes < MIN_BYTES {
            return None;
        }
        let layout = Layout::from_size_align(bytes, align_of::<T>()).ok()?;
        let block = lock().take(layout)?;
        // SAFETY: the block was a `Vec` buffer allocated with `layout`, `n` elements of `T`'s size and alignment
        // (whatever its earlier element type, the bytes and the alignment are the same). Length 0: nothing is
        // read before it is written.
        Some(unsafe { Vec::from_raw_parts(block.ptr.cast::<T>(), 0, n) })
    }

    pub(super) fn keep<T: Plain>(v: Vec<T>) {
        let bytes = v.capacity() * size_of::<T>();
        if bytes < MIN_BYTES {
            return;
        }
        let mut v = core::mem::ManuallyDrop::new(v);
        let block = Block {
            ptr: v.as_mut_ptr().cast::<u8>(),
            // A vector's buffer layout: `capacity` elements of `T` (valid, since it was allocated).
            layout: Layout::from_size_align(bytes, align_of::<T>()).expect("a vector's layout"),
        };
        let evicted = lock().keep(block);
        evicted.into_iter().for_each(Block::free);
    }

    /// CPU memory held by the buffer cache; see [`Cpu::memory_stats`].
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct MemoryStats {
        /// Bytes in freed buffers kept for reuse.
        pub cached: usize,
        /// How many such buffers.
        pub cached_buffers: usize,
        /// The most bytes the cache keeps ([`Cpu::set_cache_limit`]).
        pub limit: usize,
    }

    impl Cpu {
        /// The buffer cache's holdings: freed buffers of at least 128 KiB are kept for reuse by the next request
        /// of the same size, so that a fresh output does not fault in new pages.
        ///
        /// ```
        /// use typed_tensor::prelude::*;
        /// let a = Tensor::<f32, Rank1<65536>, Cpu>::ones(); // 256 KiB
        /// drop(a);
        /// assert!(Cpu::memory_stats().cached >= 256 << 10);
        /// let b = Tensor::<f32, Rank1<65536>, Cpu>::zeros(); // takes that buffer back
        /// assert_eq!(b.sum_all().to_scalar(), 0.0);
        /// ```
        pub fn memory_stats() -> MemoryStats {
            let cache = lock();
            MemoryStats {
                cached: cache.bytes,
                cached_buffers: cache.blocks.len(),
                limit: cache.limit,
            }
        }

        /// Sets the most bytes the buffer cache keeps (512 MiB to start with), freeing the oldest buffers beyond
        /// it; 0 turns caching off.
        pub fn set_cache_limit(bytes: usize) {
            let evicted = lock().set_limit(bytes);
            evicted.into_iter().for_each(Block::free);
        }

        /// Gives every cached buffer back to the allocator (the limit stays).
        pub fn empty_cache() {
            let blocks = {
                let mut cache = lock();
                cache.bytes = 0;
                core::mem::take(&mut cache.blocks)
            };
            blocks.into_iter().for_each(Block::free);
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// A real allocation of `bytes` (f32 alignment), as the cache would receive it.
        fn block(bytes: usize) -> Block {
            let mut v = core::mem::ManuallyDrop::new(Vec::<f32>::with_capacity(bytes / 4));
            Block {
                ptr: v.as_mut_ptr().cast(),
                layout: Layout::from_size_align(bytes, 4).unwrap(),
            }
        }

        fn free_all(blocks: Vec<Block>) -> usize {
            let n = blocks.len();
            blocks.into_iter().for_each(Block::free);
            n
        }

        #[test]
        fn the_cache_reuses_by_layout_newest_first_and_evicts_oldest_first() {
            let mut cache = Cache::new(2500);
            let (a, b) = (block(1000), block(1000));
            assert_eq!(free_all(cache.keep(a)) + free_all(cache.keep(b)), 0);
            assert_eq!(
                free_all(cache.keep(block(2000))),
                2,
                "the two oldest evicted"
            );
            assert_eq!((cache.bytes, cache.blocks.len()), (2000, 1));
            assert_eq!(free_all(cache.set_limit(0)), 1);
            assert_eq!((cache.bytes, cache.blocks.len()), (0, 0));
            cache.set_limit(2500);
            assert_eq!(
                free_all(cache.keep(block(4000))),
                1,
                "larger than the limit: freed at once"
            );
            let (c, d) = (block(1000), block(1000));
            let (pc, pd) = (c.ptr, d.ptr);
            assert_eq!(free_all(cache.keep(c)) + free_all(cache.keep(d)), 0);
            assert!(
                cache
                    .take(Layout::from_size_align(1000, 8).unwrap())
                    .is_none(),
                "alignment"
            );
            assert!(
                cache
                    .take(Layout::from_size_align(1004, 4).unwrap())
                    .is_none(),
                "size"
            );
            let layout = Layout::from_size_align(1000, 4).unwrap();
            let newest = cache.take(layout).unwrap();
            let oldest = cache.take(layout).unwrap();
            assert!(
                newest.ptr == pd && oldest.ptr == pc,
                "the most recently freed first"
            );
            assert!(cache.take(layout).is_none());
            assert_eq!(cache.bytes, 0);
            free_all(alloc::vec![newest, oldest]);
        }
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use crate::device::Cpu;

    // The books are global and tests run side by side: every check of them is in this one test, with a size no
    // other test allocates.
    #[test]
    fn freed_buffers_come_back_by_size_and_alignment() {
        const N: usize = (128 << 10) / 4 + 4099; // f32 elements: above the 128 KiB floor
        let v: Vec<f32> = filled(N, 1.5);
        let ptr = v.as_ptr() as usize;
        recycle(v);
        assert!(Cpu::memory_stats().cached >= N * 4);
        // The same bytes and alignment as another element type: the same buffer, empty, then refilled.
        let u: Vec<u32> = with_capacity(N);
        assert_eq!((u.as_ptr() as usize, u.len(), u.capacity()), (ptr, 0, N));
        recycle(u);
        let z: Vec<u32> = filled(N, 0);
        assert_eq!(z.as_ptr() as usize, ptr);
        assert!(z.iter().all(|&x| x == 0), "refilled, not stale");
        recycle(z);
        // Another alignment or another byte size never takes it (a vector is freed with its own layout).
        let wide: Vec<f64> = with_capacity(N / 2);
        let bytes: Vec<u8> = with_capacity(4 * N);
        let bigger: Vec<f32> = with_capacity(N + 1);
        for other in [
            wide.as_ptr() as usize,
            bytes.as_ptr() as usize,
            bigger.as_ptr() as usize,
        ] {
            assert_ne!(other, ptr);
        }
        let again: Vec<f32> = with_capacity(N);
        assert_eq!(again.as_ptr() as usize, ptr);
        // Buffers under 128 KiB are never kept.
        recycle(alloc::vec![0f32; 1000]);
        assert!(cached::take::<f32>(1000).is_none());

        // A tensor's buffer that this crate allocated comes back; a vector the user handed over does not (its
        // capacity is the user's, which no request of ours matches).
        const M: usize = N + 2;
        let ours = super::super::CpuStorage::<f32>::full(M, 1.0);
        let ours_ptr = ours.as_ptr() as usize;
        drop(ours);
        assert_eq!(
            cached::take::<f32>(M).map(|v| v.as_ptr() as usize),
            Some(ours_ptr)
        );
        let users = alloc::vec![0f32; M + 1];
        drop(super::super::CpuStorage::from_vec(users));
        assert!(cached::take::<f32>(M + 1).is_none());

        // Limit 0 keeps nothing; `empty_cache` frees everything.
        let limit = Cpu::memory_stats().limit;
        assert_eq!(limit, 512 << 20);
        Cpu::set_cache_limit(0);
        recycle(again);
        assert_eq!(Cpu::memory_stats().cached, 0);
        Cpu::set_cache_limit(limit);
        recycle(bigger);
        assert!(Cpu::memory_stats().cached_buffers >= 1);
        Cpu::empty_cache();
        assert_eq!(Cpu::memory_stats().cached, 0);
        drop((wide, bytes));
    }

    #[test]
    fn fallible_forms_fill_like_the_others() {
        // Zeros come from zeroed memory, other values are written; sizes under the cache's floor take the
        // allocator's path, the one Miri checks (`from_raw_parts` over `alloc_zeroed`).
        for n in [0, 1, 1000] {
            let z: Vec<u16> = try_filled(n, 0).unwrap();
            assert_eq!((z.len(), z.capacity()), (n, n));
            assert!(z.iter().all(|&x| x == 0));
            let f: Vec<f32> = try_filled(n, -2.5).unwrap();
            assert!(f.len() == n && f.iter().all(|&x| x == -2.5));
            let e: Vec<i64> = try_with_capacity(n).unwrap();
            assert!(e.is_empty() && e.capacity() >= n);
            recycle(z);
        }
    }

    #[test]
    #[cfg_attr(miri, ignore)] // Miri reports a request this large as resource exhaustion, not as a null pointer
    fn fallible_forms_return_none_when_the_allocator_refuses() {
        // 2^46 f32: 256 TiB, past any user address space, whatever the overcommit policy.
        assert!(try_with_capacity::<f32>(1 << 46).is_none());
        assert!(try_filled::<f32>(1 << 46, 0.0).is_none());
        assert!(try_filled::<f32>(1 << 46, 1.0).is_none());
        // Past isize::MAX bytes: the layout itself is refused.
        assert!(try_filled::<u64>(usize::MAX / 4, 0).is_none());
    }
}
