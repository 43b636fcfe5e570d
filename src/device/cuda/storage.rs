//! GPU buffers: [`CudaStorage`], a typed handle that clones share, over device memory from the caching allocator
//! (returned to it when the last handle drops).

use super::*;

/// A device allocation from the caching allocator; dropping it returns it to the cache.
///
/// Reuse is safe without events because every kernel runs on the one stream, in order, and host copies go
/// through the legacy default stream, which waits for it: a buffer freed while a queued kernel still reads it is
/// only rewritten by work queued after that kernel.
pub(super) struct DeviceBytes {
    pub(super) ptr: cu::CUdeviceptr,
    pub(super) size: usize,
}

impl DeviceBytes {
    fn alloc(op: &'static str, bytes: usize) -> Result<Self> {
        let st = state(op)?;
        let size = size_class(bytes);
        let mut cache = lock(st);
        if let Some(ptr) = cache.free.get_mut(&size).and_then(Vec::pop) {
            cache.cached -= size;
            cache.in_use += size;
            cache.note_alloc(ptr);
            return Ok(DeviceBytes { ptr, size });
        }
        let mut ptr: cu::CUdeviceptr = 0;
        // SAFETY: the driver writes one device address to `ptr`, a valid `CUdeviceptr` on our stack; the
        // context is current (`state` made it so).
        let mut code = unsafe { cu::cuMemAlloc_v2(&mut ptr, size) };
        if code == cu::CUresult::CUDA_ERROR_OUT_OF_MEMORY && cache.cached > 0 && !graph::capturing()
        {
            // Out of memory with buffers cached: give them back and try once more (not in a capture, where
            // neither the wait nor the frees may run).
            let _ = st.stream.synchronize();
            cache.release();
            // SAFETY: as for the first attempt.
            code = unsafe { cu::cuMemAlloc_v2(&mut ptr, size) };
        }
        check(op, code)?;
        cache.in_use += size;
        cache.note_alloc(ptr);
        Ok(DeviceBytes { ptr, size })
    }
}

impl Drop for DeviceBytes {
    fn drop(&mut self) {
        if let Ok(st) = state("free") {
            let mut cache = lock(st);
            if cache.hold_if_pinned(self.ptr, self.size) {
                return;
            }
            cache.in_use -= self.size;
            cache.cached += self.size;
            cache.free.entry(self.size).or_default().push(self.ptr);
        }
    }
}

/// A buffer of `T` in GPU memory; clones share it.
pub struct CudaStorage<T> {
    pub(super) bytes: Arc<DeviceBytes>,
    pub(super) len: usize,
    _t: PhantomData<T>,
}

impl<T> Clone for CudaStorage<T> {
    fn clone(&self) -> Self {
        CudaStorage {
            bytes: self.bytes.clone(),
            len: self.len,
            _t: PhantomData,
        }
    }
}

impl<T: WithDType> CudaStorage<T> {
    pub(crate) fn alloc(op: &'static str, len: usize) -> Result<Self> {
        // Checked: a wrapped byte count would allocate a small buffer that kernels then write `len` elements to.
        let bytes = Dims::from_slice(&[len]).try_bytes(op, size_of::<T>())?;
        Ok(CudaStorage {
            bytes: Arc::new(DeviceBytes::alloc(op, bytes)?),
            len,
            _t: PhantomData,
        })
    }
    /// Device address of element `offset`.
    pub(crate) fn ptr_at(&self, offset: usize) -> u64 {
        if graph::capturing() {
            // A kernel being recorded addresses this buffer: the graph will keep it.
            if let Ok(st) = state("capture") {
                lock(st).touch(&self.bytes);
            }
        }
        self.bytes.ptr + (offset * size_of::<T>()) as u64
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}
