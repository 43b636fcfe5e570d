//! The CUDA device: kernels from `ptx/*.cu`, compiled to PTX by `build.rs`, loaded once per process and launched
//! through `cust` on one stream.
//!
//! `Cuda` is zero-sized; the context, stream and modules live in a lazily initialised global. When no GPU or
//! driver is present, every operation returns [`Error::Cuda`] with the driver's reason (and the infallible tensor
//! ops panic with it); [`Cuda::is_available`] tells beforehand.

mod blas;
mod graph;
pub mod kernels;

use super::{Device, Kernels, Write};
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
use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

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

/// A device allocation from the caching allocator; dropping it returns it to the cache.
///
/// Reuse is safe without events because every kernel runs on the one stream, in order, and host copies go
/// through the legacy default stream, which waits for it: a buffer freed while a queued kernel still reads it is
/// only rewritten by work queued after that kernel.
struct DeviceBytes {
    ptr: cu::CUdeviceptr,
    size: usize,
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
    bytes: Arc<DeviceBytes>,
    len: usize,
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

/// One kernel argument, kept alive while the launch reads it.
pub(crate) enum Arg {
    U64(u64),
    Layout(KernelLayout),
    Gemm(GemmDims),
    Geom(ConvGeom),
    Adam(AdamCoefficients),
    /// A scalar of `.1` bytes, stored in the low bytes.
    Scalar(u64, usize),
}

impl Arg {
    fn size(&self) -> usize {
        match self {
            Arg::U64(_) => 8,
            Arg::Layout(_) => kernels::LAYOUT_BYTES,
            Arg::Gemm(_) => size_of::<GemmDims>(),
            Arg::Geom(_) => size_of::<ConvGeom>(),
            Arg::Adam(_) => size_of::<AdamCoefficients>(),
            Arg::Scalar(_, n) => *n,
        }
    }
    fn ptr(&mut self) -> *mut c_void {
        match self {
            Arg::U64(v) | Arg::Scalar(v, _) => v as *mut u64 as *mut c_void,
            Arg::Layout(l) => l as *mut KernelLayout as *mut c_void,
            Arg::Gemm(g) => g as *mut GemmDims as *mut c_void,
            Arg::Geom(g) => g as *mut ConvGeom as *mut c_void,
            Arg::Adam(a) => a as *mut AdamCoefficients as *mut c_void,
        }
    }
    pub(crate) fn scalar<T: WithDType>(v: T) -> Self {
        let mut bits = 0u64;
        zerocopy::IntoBytes::as_mut_bytes(&mut bits)[..size_of::<T>()]
            .copy_from_slice(zerocopy::IntoBytes::as_bytes(&v));
        Arg::Scalar(bits, size_of::<T>())
    }
    pub(crate) fn view<T: WithDType>(s: &CudaStorage<T>, l: &Layout) -> [Arg; 2] {
        [
            Arg::Layout(KernelLayout::new(l)),
            Arg::U64(s.ptr_at(l.offset())),
        ]
    }
}

const BLOCK: u32 = 256;
const MAX_GRID: usize = 1 << 20;

/// Launches `sig` over `n` elements, a thread each (grid-stride loops cover any `n`); the arguments must match
/// the catalog.
pub(crate) fn launch(op: &'static str, sig: KernelSig, n: usize, args: Vec<Arg>) -> Result<()> {
    launch_per_thread(op, sig, n, 1, args)
}

/// Elements per thread of the kernels built on `elementwise` in `ptx/common.cuh` (`ELEMS_PER_THREAD` there).
const ELEMS_PER_THREAD: usize = 4;

/// Launches `sig` over `n` elements, `per_thread` each.
fn launch_per_thread(
    op: &'static str,
    sig: KernelSig,
    n: usize,
    per_thread: usize,
    args: Vec<Arg>,
) -> Result<()> {
    let grid = n.div_ceil(BLOCK as usize * per_thread).min(MAX_GRID) as u32;
    launch_grid(op, sig, (grid, 1, 1), BLOCK, args)
}

/// Threads per block for a loop over `len` elements: a power of two from 32 (one warp; the block reductions
/// need whole warps) to 256.
pub(crate) fn threads_for(len: usize) -> u32 {
    len.next_power_of_two().clamp(32, 256) as u32
}

/// Launches `sig` on `grid` blocks of `block` threads; nothing when the grid is empty.
pub(crate) fn launch_grid(
    op: &'static str,
    sig: KernelSig,
    grid: (u32, u32, u32),
    block: u32,
    args: Vec<Arg>,
) -> Result<()> {
    launch_grid_shared(op, sig, grid, block, 0, args)
}

/// Dynamic shared memory a launch may ask for: a block may have 48 KB without opting in (per-kernel attributes
/// raise it on newer GPUs), static and dynamic together, and 1 KB is left for the kernels' static arrays (the
/// block reductions' take at most 288 bytes). A launch asking for more fails with `CUDA_ERROR_INVALID_VALUE`.
pub(crate) const SHARED_BYTES: usize = 47 << 10;

/// [`launch_grid`] with `shared` bytes of dynamic shared memory per block (at most [`SHARED_BYTES`]).
pub(crate) fn launch_grid_shared(
    op: &'static str,
    sig: KernelSig,
    grid: (u32, u32, u32),
    block: u32,
    shared: usize,
    mut args: Vec<Arg>,
) -> Result<()> {
    debug_assert!(shared <= SHARED_BYTES);
    if !args.iter().map(Arg::size).eq(sig.params().iter().copied()) {
        let sizes: Vec<usize> = args.iter().map(Arg::size).collect();
        return Err(cuda_err(
            op,
            format!(
                "internal error: {} expects parameters {:?}, got {:?}",
                sig.name,
                sig.params(),
                sizes
            ),
        ));
    }
    if grid.0 == 0 || grid.1 == 0 || grid.2 == 0 {
        return Ok(());
    }
    let st = state(op)?;
    let kernel = st.kernel(op, &sig)?;
    let gate = graph::launch_gate(op)?;
    let mut ptrs = [core::ptr::null_mut::<c_void>(); kernels::MAX_PARAMS];
    for (p, arg) in ptrs.iter_mut().zip(&mut args) {
        *p = arg.ptr();
    }
    // SAFETY: `ptrs` holds one pointer per kernel parameter, each to a live argument of the size the PTX entry
    // declares (checked against the catalog above; `args` outlives the launch, which copies them). Device
    // addresses among them point into buffers of at least the elements the kernel indexes: every caller sizes
    // its output by the launch's element count and passes input views of tensors over their own buffers. The
    // kernel handle belongs to a module of this context, and the stream is the device's.
    let code = unsafe {
        cu::cuLaunchKernel(
            kernel.0,
            grid.0,
            grid.1,
            grid.2,
            block,
            1,
            1,
            shared as u32,
            st.stream.as_inner(),
            ptrs.as_mut_ptr(),
            core::ptr::null_mut(),
        )
    };
    drop(gate);
    if code != cu::CUresult::CUDA_SUCCESS {
        return Err(cuda_err(op, format!("launching {}: {code:?}", sig.name)));
    }
    Ok(())
}

/// The lane walk that the lane kernels' parameters start with (`KernelSig::lane_kernel`): for views over the
/// same dims, the number of lanes along `axis` and their length, then per view (the given ones, then the dense
/// output) the layout of the lanes' first elements, then per view the step along a lane. Returns the lane count
/// beside the arguments.
pub(crate) fn lane_walk(views: &[&Layout], axis: usize) -> (usize, Vec<Arg>) {
    let dims = *views[0].dims();
    let mut on_axis = [false; crate::shape::MAX_RANK];
    on_axis[axis] = true;
    let dense = Layout::contiguous(dims);
    let (mut outer, mut steps) = (Vec::new(), Vec::new());
    let mut lanes = 0;
    for layout in views.iter().copied().chain([&dense]) {
        let (o, along) = layout.split_reduced(&on_axis);
        lanes = o.numel();
        outer.push(Arg::Layout(KernelLayout::new(&o)));
        steps.push(Arg::U64(along.strides()[0] as u64));
    }
    let mut args = alloc::vec![Arg::U64(lanes as u64), Arg::U64(dims[axis] as u64)];
    args.extend(outer);
    args.extend(steps);
    (lanes, args)
}

/// Launches `sig` with the common parameter order `(n, <inputs: layouts then pointers>, out, <scalars>)`,
/// writing `n` elements at `out` (a device address of at least `n` elements). Every kernel run this way loops with
/// `elementwise` (`ptx/common.cuh`).
pub(crate) fn run_into(
    op: &'static str,
    sig: KernelSig,
    n: usize,
    inputs: Vec<Arg>,
    out: u64,
    scalars: Vec<Arg>,
) -> Result<()> {
    let mut args = Vec::with_capacity(inputs.len() + scalars.len() + 2);
    args.push(Arg::U64(n as u64));
    args.extend(inputs);
    args.push(Arg::U64(out));
    args.extend(scalars);
    launch_per_thread(op, sig, n, ELEMS_PER_THREAD, args)
}

/// Layouts first, then data pointers: the parameter order of the multi-operand kernels.
pub(crate) fn views<const K: usize>(operands: [[Arg; 2]; K]) -> Vec<Arg> {
    let (layouts, ptrs): (Vec<Arg>, Vec<Arg>) = operands.into_iter().map(|[l, p]| (l, p)).unzip();
    layouts.into_iter().chain(ptrs).collect()
}

/// Most blocks a one-dimensional launch asks for; kernels loop over the rest.
pub(crate) const MAX_BLOCKS: usize = 65_535;

/// `C = A B` over the strides in `dims`, accumulating in f32 (f64 for f64).
pub(crate) fn gemm<T: FloatDType>(
    op: &'static str,
    dims: GemmDims,
    a: u64,
    b: u64,
    c: u64,
) -> Result<()> {
    let tile = kernels::matmul_tile(T::DTYPE) as u64;
    let grid = (
        dims.n.div_ceil(tile) as u32,
        dims.m.div_ceil(tile).min(MAX_BLOCKS as u64) as u32,
        dims.batch.min(MAX_BLOCKS as u64) as u32,
    );
    if dims.m > tile * MAX_BLOCKS as u64 {
        return Err(cuda_err(
            op,
            format!("{} rows exceed the kernel's grid", dims.m),
        ));
    }
    if blas::try_gemm::<T>(op, &dims, a, b, c)? {
        return Ok(());
    }
    blas::ran_on(MatmulBackend::Kernels);
    let args = alloc::vec![Arg::Gemm(dims), Arg::U64(a), Arg::U64(b), Arg::U64(c)];
    // f16/bf16 use tensor cores where the GPU has the module (same 128 x 128 tiles, same grid).
    if T::DTYPE == DType::F16 || T::DTYPE == DType::BF16 {
        let sig = KernelSig::matmul_tensor_core(T::DTYPE);
        if state(op)?.has_module(sig.module) {
            return launch_grid(op, sig, grid, 256, args);
        }
    }
    launch_grid(op, KernelSig::matmul(T::DTYPE), grid, 256, args)
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

impl Device for Cuda {}

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
