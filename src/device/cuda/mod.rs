//! The CUDA device: kernels from `ptx/*.cu` and each family's `src/ops/<family>/*.cu`, compiled to PTX by `build.rs`, loaded once per process and launched
//! through `cust` on one stream.
//!
//! `Cuda` is zero-sized; the context, stream and modules live in a lazily initialised global. When no GPU or
//! driver is present, every operation returns [`Error::Cuda`] with the driver's reason (and the infallible tensor
//! ops panic with it); [`Cuda::is_available`] tells beforehand.

mod blas;
mod graph;
pub mod kernels;
mod launch;
mod ptx_kernel;
mod storage;

use super::{Kernels, Write};
use crate::dtype::{DType, FloatDType, WithDType};
use crate::error::{Error, Result};
use crate::layout::{Layout, Strided, ViewOf};
use crate::shape::{Dims, Shape};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
pub use blas::MatmulBackend;
use core::ffi::c_void;
use core::marker::PhantomData;
use cust::context::{Context, CurrentContext};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use cust::sys as cu;
pub use graph::CudaGraph;
pub(crate) use graph::{
    capture_record, capturing, defer_index_check, read_pinned, refuse_in_capture, IndexCheck,
};
use kernels::{AdamCoefficients, ConvGeom, GemmDims, KernelLayout, KernelSig};
pub(crate) use launch::{
    gemm, lane_walk, launch, launch_grid, launch_grid_shared, run_into, threads_for, views, Arg,
    MAX_BLOCKS, SHARED_BYTES,
};
pub use ptx_kernel::{KernelArg, PtxKernel};
use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
pub use storage::CudaStorage;
use storage::DeviceBytes;

/// An NVIDIA GPU (the first one), through the CUDA driver API.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cuda;

struct State {
    ctx: Context,
    stream: Stream,
    modules: Vec<(&'static str, Module)>,
    /// Kernel handles by module and entry name, looked up in their module once (a launch then only reads this).
    functions: std::sync::RwLock<BTreeMap<&'static str, BTreeMap<String, Kernel>>>,
    cache: Mutex<Cache>,
    /// Modules loaded from users' PTX ([`PtxKernel`]), by name.
    user_modules: Mutex<BTreeMap<&'static str, ptx_kernel::UserModule>>,
}

/// A kernel entry of a loaded module.
#[derive(Clone, Copy)]
struct Kernel(cu::CUfunction);

// SAFETY: a `CUfunction` is a handle the driver owns for the module's lifetime (the process's: modules are never
// unloaded) and may be launched from any thread that has the context current.
unsafe impl Send for Kernel {}
// SAFETY: as for `Send`: launching reads the handle, and nothing mutates it.
unsafe impl Sync for Kernel {}

/// The caching allocator's books: freed buffers by rounded size, ready for reuse, so a training loop that
/// allocates the same sizes every step stops calling the driver after its first step.
#[derive(Default)]
struct Cache {
    free: BTreeMap<usize, Vec<cu::CUdeviceptr>>,
    in_use: usize,
    cached: usize,
    /// Bytes of buffers whose tensors are gone but which a graph still addresses.
    in_graphs: usize,
    /// The books of the running [`Cuda::capture`], if any.
    capture: Option<graph::Recording>,
    /// Buffers that live graphs address, by base address.
    pins: BTreeMap<cu::CUdeviceptr, graph::Pin>,
}

impl Cache {
    /// Frees every cached buffer (the context is current).
    fn release(&mut self) {
        for (_, ptrs) in core::mem::take(&mut self.free) {
            for ptr in ptrs {
                // SAFETY: `ptr` came from `cuMemAlloc_v2` in this context and sits in the free list, so no buffer
                // refers to it any more; it leaves the list here and is freed once.
                let _ = unsafe { cu::cuMemFree_v2(ptr) };
            }
        }
        self.cached = 0;
    }
}

/// The size class of a request: 512-byte steps up to 1 MiB, 1 MiB steps above (PyTorch's rounding, which keeps
/// the waste under 1 MiB per buffer while letting repeated sizes hit the cache).
fn size_class(bytes: usize) -> usize {
    if bytes <= 1 << 20 {
        bytes.max(1).next_multiple_of(512)
    } else {
        bytes.next_multiple_of(1 << 20)
    }
}

/// Device memory held by this process's tensors and by the cache; see [`Cuda::memory_stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes in buffers that tensors hold (rounded to the allocator's size classes).
    pub in_use: usize,
    /// Bytes in freed buffers kept for reuse.
    pub cached: usize,
    /// Bytes in buffers no tensor holds any more but a live [`CudaGraph`] addresses (its intermediate results);
    /// they return to the cache when the graph is dropped.
    pub in_graphs: usize,
}

static STATE: OnceLock<core::result::Result<State, String>> = OnceLock::new();

fn init_state() -> core::result::Result<State, String> {
    let fail = |what: &str, e: cust::error::CudaError| format!("{what}: {e}");
    cust::init(cust::CudaFlags::empty()).map_err(|e| fail("no usable CUDA driver", e))?;
    let count = cust::device::Device::num_devices().map_err(|e| fail("cannot count GPUs", e))?;
    if count == 0 {
        return Err("no CUDA device found".to_string());
    }
    let device = cust::device::Device::get_device(0).map_err(|e| fail("cannot open GPU 0", e))?;
    let ctx = Context::new(device).map_err(|e| fail("cannot create a CUDA context", e))?;
    CurrentContext::set_current(&ctx).map_err(|e| fail("cannot make the context current", e))?;
    // A blocking stream: synchronous copies on the legacy default stream wait for our kernels.
    let stream =
        Stream::new(StreamFlags::DEFAULT, None).map_err(|e| fail("cannot create a stream", e))?;
    let attr = |a| {
        device
            .get_attribute(a)
            .map_err(|e| fail("cannot read the GPU's attributes", e))
    };
    let capability = (attr(cust::device::DeviceAttribute::ComputeCapabilityMajor)? * 10
        + attr(cust::device::DeviceAttribute::ComputeCapabilityMinor)?) as u32;
    // Modules whose PTX needs a newer GPU are skipped; their kernels' callers check `has_module`.
    let modules = kernels::PTX_MODULES
        .iter()
        .filter(|m| m.min_capability <= capability)
        .map(|m| {
            Module::from_fatbin(m.fatbin, &[])
                .map(|module| (m.name, module))
                .map_err(|e| fail(&format!("cannot load kernel module `{}`", m.name), e))
        })
        .collect::<core::result::Result<Vec<_>, _>>()?;
    Ok(State {
        ctx,
        stream,
        modules,
        functions: Default::default(),
        cache: Mutex::new(Cache::default()),
        user_modules: Mutex::default(),
    })
}

impl State {
    /// True when the module `name` was loaded (the GPU can run its PTX).
    fn has_module(&self, name: &str) -> bool {
        self.modules.iter().any(|(n, _)| *n == name)
    }

    /// The handle of `sig`'s kernel: from the table after the first launch, from its module before.
    fn kernel(&self, op: &'static str, sig: &KernelSig) -> Result<Kernel> {
        let read = |table: &BTreeMap<&'static str, BTreeMap<String, Kernel>>| {
            table
                .get(sig.module)
                .and_then(|m| m.get(&sig.name))
                .copied()
        };
        if let Some(k) = read(&self.functions.read().unwrap_or_else(|e| e.into_inner())) {
            return Ok(k);
        }
        let module = &self
            .modules
            .iter()
            .find(|(name, _)| *name == sig.module)
            .ok_or_else(|| cuda_err(op, format!("no kernel module {}", sig.module)))?
            .1;
        let kernel = Kernel(
            module
                .get_function(&sig.name)
                .map_err(|e| cuda_err(op, format!("kernel {}: {e}", sig.name)))?
                .to_raw(),
        );
        self.functions
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(sig.module)
            .or_default()
            .insert(sig.name.clone(), kernel);
        Ok(kernel)
    }
}

/// The device state, made current on the calling thread.
fn state(op: &'static str) -> Result<&'static State> {
    match STATE.get_or_init(init_state) {
        Ok(st) => {
            CurrentContext::set_current(&st.ctx).map_err(|e| cuda_err(op, e))?;
            Ok(st)
        }
        Err(msg) => Err(Error::Cuda {
            op,
            message: msg.clone(),
        }),
    }
}

pub(crate) fn cuda_err(op: &'static str, e: impl core::fmt::Display) -> Error {
    Error::Cuda {
        op,
        message: e.to_string(),
    }
}

pub(crate) fn check(op: &'static str, code: cu::CUresult) -> Result<()> {
    if code == cu::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(cuda_err(op, format!("{code:?}")))
    }
}

impl Cuda {
    /// True when a GPU and driver are usable (initialises the device on first call).
    pub fn is_available() -> bool {
        Self::init().is_ok()
    }

    /// Initialises the device, or says why it cannot be used.
    pub fn init() -> Result<()> {
        state("init").map(|_| ())
    }

    /// Waits for every queued kernel to finish.
    pub fn synchronize() -> Result<()> {
        let st = state("synchronize")?;
        refuse_in_capture("synchronize", "waiting for the GPU")?;
        st.stream
            .synchronize()
            .map_err(|e| cuda_err("synchronize", e))
    }

    /// Bytes held by tensors and by the caching allocator.
    ///
    /// ```no_run
    /// # use typed_tensor::prelude::*;
    /// # use typed_tensor::device::Cuda;
    /// let a: Tensor<f32, Rank1<1024>, Cuda> = Tensor::zeros();
    /// let stats = Cuda::memory_stats().unwrap();
    /// assert!(stats.in_use >= 4096);
    /// drop(a);
    /// assert!(Cuda::memory_stats().unwrap().cached >= 4096);
    /// ```
    pub fn memory_stats() -> Result<MemoryStats> {
        let st = state("memory_stats")?;
        let cache = lock(st);
        Ok(MemoryStats {
            in_use: cache.in_use,
            cached: cache.cached,
            in_graphs: cache.in_graphs,
        })
    }

    /// Runs `f` with the matrix products this thread launches (matmul, and the products inside the
    /// convolutions) preferring `backend`, then restores the previous preference.
    ///
    /// By default products go through cuBLAS when it is installed and can take the operands' layouts (row- or
    /// column-major strides, as transposed and narrowed views have, and broadcast batches), and through the
    /// library's own kernels otherwise; [`MatmulBackend::Kernels`] keeps them on the kernels, to compare the two.
    /// [`Cuda::last_matmul_backend`] tells which one ran.
    ///
    /// ```no_run
    /// # use typed_tensor::prelude::*;
    /// use typed_tensor::device::{Cuda, MatmulBackend};
    /// let a: Tensor<f32, Rank2<64, 32>, Cuda> = Tensor::randn(1);
    /// let b: Tensor<f32, Rank2<32, 16>, Cuda> = Tensor::randn(2);
    /// let ours = Cuda::with_matmul_backend(MatmulBackend::Kernels, || a.matmul(&b));
    /// assert_eq!(Cuda::last_matmul_backend(), Some(MatmulBackend::Kernels));
    /// let theirs = a.matmul(&b); // cuBLAS, when installed
    /// assert!((&ours - &theirs).abs().max_all().to_scalar() < 1e-4);
    /// ```
    pub fn with_matmul_backend<R>(backend: MatmulBackend, f: impl FnOnce() -> R) -> R {
        blas::with_backend(backend, f)
    }

    /// The backend that ran the last matrix product this thread launched (`None` before the first).
    pub fn last_matmul_backend() -> Option<MatmulBackend> {
        blas::last_backend()
    }

    /// The cuBLAS version the products use (major * 10000 + minor * 100 + patch, as `cublasGetVersion` gives
    /// it), or why cuBLAS is not used: not found on the library path (`TYPED_TENSOR_CUBLAS` names another file,
    /// or `off`), or no GPU.
    pub fn cublas_version() -> Result<u32> {
        blas::version()
    }

    /// Lets f32 products run on tensor cores in TF32 (off by default, as in PyTorch's
    /// `torch.backends.cuda.matmul.allow_tf32`), for every thread.
    ///
    /// TF32 rounds each input to 10 mantissa bits (a relative error up to 2^-11 per input, against f32's 2^-24)
    /// and accumulates in f32, so a product of `K` terms is off by about `2^-11 * sqrt(K)` relative to its terms'
    /// magnitude; in exchange it runs several times faster. It applies to products cuBLAS runs.
    pub fn set_allow_tf32(allow: bool) {
        blas::set_allow_tf32(allow)
    }

    /// Whether f32 products may use TF32 (see [`Cuda::set_allow_tf32`]).
    pub fn allow_tf32() -> bool {
        blas::allow_tf32()
    }

    /// Gives every cached (freed) buffer back to the driver, after waiting for queued kernels.
    pub fn empty_cache() -> Result<()> {
        refuse_in_capture("empty_cache", "freeing memory")?;
        Self::synchronize()?;
        lock(state("empty_cache")?).release();
        Ok(())
    }
}

fn lock(st: &State) -> std::sync::MutexGuard<'_, Cache> {
    // The books stay consistent even if a panic poisoned the lock (every update is a single statement).
    st.cache.lock().unwrap_or_else(|e| e.into_inner())
}

/// Fills `out` with the elements from `offset` on, after the queued work.
pub(crate) fn read_back<T: WithDType>(
    op: &'static str,
    s: &CudaStorage<T>,
    offset: usize,
    out: &mut [T],
) -> Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    // The copy reads `out.len()` elements from `offset` on: they must lie inside the buffer.
    if offset
        .checked_add(out.len())
        .is_none_or(|end| end > s.len())
    {
        return Err(cuda_err(
            op,
            format!(
                "reading {} elements from {offset} on, past the end of a buffer of {}",
                out.len(),
                s.len()
            ),
        ));
    }
    refuse_in_capture(op, "a read from the GPU to the host")?;
    // SAFETY: the source range, `out.len()` elements from `offset`, lies inside `s` (checked above).
    unsafe { copy_to_host(op, s.ptr_at(offset), out) }
}

/// Fills `out` with the elements at device address `at` on, after the queued work (the stream is synchronised
/// first, so the data is final).
///
/// # Safety
///
/// `at` must address `out.len()` live elements of a buffer of this context.
unsafe fn copy_to_host<T: WithDType>(op: &'static str, at: u64, out: &mut [T]) -> Result<()> {
    let st = state(op)?;
    st.stream.synchronize().map_err(|e| cuda_err(op, e))?;
    let bytes: &mut [u8] = crate::dtype::cast_slice_mut(out);
    // SAFETY: the caller promises the source range is live; the destination is `out`'s own bytes, exclusively
    // borrowed.
    check(op, unsafe {
        cu::cuMemcpyDtoH_v2(bytes.as_mut_ptr() as *mut c_void, at, bytes.len())
    })
}

/// A fresh buffer of `n` elements that `kernel` writes: for the intermediate buffers of composite kernels.
pub(crate) fn fresh<T: WithDType>(
    op: &'static str,
    n: usize,
    kernel: impl FnOnce(&mut CudaStorage<T>) -> Result<()>,
) -> Result<CudaStorage<T>> {
    let mut out = CudaStorage::alloc(op, n)?;
    kernel(&mut out)?;
    Ok(out)
}

/// The address of `out`'s first element, where a kernel writes `n` elements: an error (not a write past the
/// end) when the destination is shorter.
pub(crate) fn dest<T: WithDType>(op: &'static str, out: &CudaStorage<T>, n: usize) -> Result<u64> {
    if out.len() < n {
        return Err(cuda_err(
            op,
            format!(
                "internal error: a destination of {} elements for {n} results",
                out.len()
            ),
        ));
    }
    Ok(out.ptr_at(0))
}

// SAFETY: device memory is never read as host values without a copy (`read_back`), so an unwritten destination
// is no hazard to Rust; every kernel below also writes its whole output (one thread per element, or per output of
// a reduction or lane) and reads `out` only for `Operand::Out`.
unsafe impl Kernels for Cuda {
    type Buffer<T: WithDType> = CudaStorage<T>;
    type Out<T: WithDType> = CudaStorage<T>;
    type Storage<T: WithDType, S: Shape> = CudaStorage<T>;
    type View<S: Shape> = Strided<S>;
    type Loose<T: WithDType> = CudaStorage<T>;
    const SHAPE_FREE: bool = true;
    const NAME: &'static str = "cuda";

    #[inline(always)]
    fn buffer<T: WithDType, S: Shape>(storage: &CudaStorage<T>) -> &CudaStorage<T> {
        storage
    }

    fn refuse_recording(op: &'static str, what: &str) -> Result<()> {
        refuse_in_capture(op, what)
    }

    #[inline]
    fn buffer_mut<T: WithDType, S: Shape>(
        storage: &mut CudaStorage<T>,
    ) -> Option<&mut CudaStorage<T>> {
        Arc::get_mut(&mut storage.bytes)
            .is_some()
            .then_some(storage)
    }

    unsafe fn alloc_with<T: WithDType, S: Shape>(
        op: &'static str,
        n: usize,
        write: &mut Write<'_, CudaStorage<T>>,
    ) -> Result<CudaStorage<T>> {
        fresh(op, n, write)
    }

    unsafe fn alloc_loose<T: WithDType>(
        op: &'static str,
        n: usize,
        write: &mut Write<'_, CudaStorage<T>>,
    ) -> Result<CudaStorage<T>> {
        fresh(op, n, write)
    }

    #[inline(always)]
    fn loose<T: WithDType, S: Shape>(storage: &CudaStorage<T>) -> Option<&CudaStorage<T>> {
        Some(storage)
    }

    #[inline(always)]
    fn tighten<T: WithDType, S: Shape>(storage: CudaStorage<T>) -> CudaStorage<T> {
        storage
    }

    #[inline(always)]
    unsafe fn out_of<T: WithDType>(buffer: &mut CudaStorage<T>) -> &mut CudaStorage<T> {
        buffer
    }

    #[inline]
    fn view<T: WithDType, S0: Shape, S: Shape>(
        storage: &CudaStorage<T>,
        layout: &Layout,
    ) -> Result<(CudaStorage<T>, Strided<S>)> {
        Ok((storage.clone(), Strided::from_layout(layout)))
    }

    fn full<T: WithDType, S: Shape>(n: usize, value: T) -> Result<CudaStorage<T>> {
        let out = CudaStorage::<T>::alloc("full", n)?;
        let args = alloc::vec![
            Arg::U64(n as u64),
            Arg::scalar(value),
            Arg::U64(out.ptr_at(0))
        ];
        launch("full", KernelSig::fill(T::DTYPE), n, args)?;
        Ok(out)
    }

    fn from_slice<T: WithDType, S: Shape>(data: &[T]) -> Result<CudaStorage<T>> {
        refuse_in_capture("from_slice", "a copy from the host to the GPU")?;
        let out = CudaStorage::<T>::alloc("from_slice", data.len())?;
        if !data.is_empty() {
            let bytes: &[u8] = crate::dtype::cast_slice(data);
            // SAFETY: `out` is a fresh allocation of `data.len()` elements, exactly `bytes.len()` bytes, and
            // `bytes` is `data`'s own memory, borrowed for the call.
            check("from_slice", unsafe {
                cu::cuMemcpyHtoD_v2(out.ptr_at(0), bytes.as_ptr() as *const c_void, bytes.len())
            })?;
        }
        Ok(out)
    }

    fn to_vec<T: WithDType>(storage: &CudaStorage<T>, layout: &Layout) -> Result<Vec<T>> {
        let dense;
        let (src, offset) = if layout.is_contiguous() {
            (storage, layout.offset())
        } else {
            dense = fresh("to_vec", layout.numel(), |d| {
                Self::copy((storage, layout), d)
            })?;
            (&dense, 0)
        };
        let mut out = alloc::vec![T::ZERO; layout.numel()];
        read_back("to_vec", src, offset, &mut out)?;
        Ok(out)
    }

    fn copy<T: WithDType>(
        (src, layout): (&CudaStorage<T>, &Layout),
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        let sig = KernelSig::copy(T::DTYPE);
        let n = layout.numel();
        let inputs = views([Arg::view(src, layout)]);
        run_into(
            "contiguous",
            sig,
            n,
            inputs,
            dest("contiguous", out, n)?,
            Vec::new(),
        )
    }

    fn cast<T: WithDType, U: WithDType>(
        (src, layout): (&CudaStorage<T>, &Layout),
        out: &mut CudaStorage<U>,
    ) -> Result<()> {
        let sig = KernelSig::cast(T::DTYPE, U::DTYPE);
        let n = layout.numel();
        let inputs = views([Arg::view(src, layout)]);
        run_into(
            "to_dtype",
            sig,
            n,
            inputs,
            dest("to_dtype", out, n)?,
            Vec::new(),
        )
    }

    // In place ([`Operand::Out`]): the kernels read element i of the dense destination before writing element i.
}
