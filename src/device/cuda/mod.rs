//! The CUDA device: kernels from `ptx/*.cu`, compiled to PTX by `build.rs`, loaded once per process and launched
//! through `cust` on one stream.
//!
//! `Cuda` is zero-sized; the context, stream and modules live in a lazily initialised global. When no GPU or
//! driver is present, every operation returns [`Error::Cuda`] with the driver's reason (and the infallible tensor
//! ops panic with it); [`Cuda::is_available`] tells beforehand.

pub mod kernels;

use super::{Device, Kernels};
use crate::dtype::{FloatDType, IndexDType, WithDType};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::{AlongAxis, BinaryOp, CmpOp, Conv2dParams, Pool, ReduceOp, UnaryOp};
use crate::shape::MAX_RANK;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ffi::c_void;
use core::marker::PhantomData;
use cust::context::{Context, CurrentContext};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use cust::sys as cu;
use kernels::{KernelLayout, KernelSig};
use std::sync::OnceLock;

/// An NVIDIA GPU (the first one), through the CUDA driver API.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cuda;

struct State {
    ctx: Context,
    stream: Stream,
    modules: Vec<(&'static str, Module)>,
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
    let modules = kernels::PTX_MODULES
        .iter()
        .map(|(name, ptx)| {
            Module::from_ptx(ptx, &[])
                .map(|m| (*name, m))
                .map_err(|e| fail(&format!("cannot load PTX module `{name}`"), e))
        })
        .collect::<core::result::Result<Vec<_>, _>>()?;
    Ok(State {
        ctx,
        stream,
        modules,
    })
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

fn cuda_err(op: &'static str, e: impl core::fmt::Display) -> Error {
    Error::Cuda {
        op,
        message: e.to_string(),
    }
}

fn check(op: &'static str, code: cu::CUresult) -> Result<()> {
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
        st.stream
            .synchronize()
            .map_err(|e| cuda_err("synchronize", e))
    }
}

/// A device allocation, freed with the context made current (drops can happen on any thread).
struct DeviceBytes {
    ptr: cu::CUdeviceptr,
}

impl DeviceBytes {
    fn alloc(op: &'static str, bytes: usize) -> Result<Self> {
        state(op)?;
        let mut ptr: cu::CUdeviceptr = 0;
        // Zero-sized tensors still get a (1-byte) allocation so every storage has a valid pointer.
        check(op, unsafe { cu::cuMemAlloc_v2(&mut ptr, bytes.max(1)) })?;
        Ok(DeviceBytes { ptr })
    }
}

impl Drop for DeviceBytes {
    fn drop(&mut self) {
        // cuMemFree waits for queued work on the buffer. Nothing sensible can be done with a failure here.
        if state("free").is_ok() {
            let _ = unsafe { cu::cuMemFree_v2(self.ptr) };
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
    fn alloc(op: &'static str, len: usize) -> Result<Self> {
        Ok(CudaStorage {
            bytes: Arc::new(DeviceBytes::alloc(op, len * size_of::<T>())?),
            len,
            _t: PhantomData,
        })
    }
    /// Device address of element `offset`.
    fn ptr_at(&self, offset: usize) -> u64 {
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
enum Arg {
    U64(u64),
    Layout(KernelLayout),
    /// A scalar of `.1` bytes, stored in the low bytes.
    Scalar(u64, usize),
}

impl Arg {
    fn size(&self) -> usize {
        match self {
            Arg::U64(_) => 8,
            Arg::Layout(_) => kernels::LAYOUT_BYTES,
            Arg::Scalar(_, n) => *n,
        }
    }
    fn ptr(&mut self) -> *mut c_void {
        match self {
            Arg::U64(v) | Arg::Scalar(v, _) => v as *mut u64 as *mut c_void,
            Arg::Layout(l) => l as *mut KernelLayout as *mut c_void,
        }
    }
    fn scalar<T: WithDType>(v: T) -> Self {
        let mut bits = 0u64;
        bytemuck::bytes_of_mut(&mut bits)[..size_of::<T>()].copy_from_slice(bytemuck::bytes_of(&v));
        Arg::Scalar(bits, size_of::<T>())
    }
    fn view<T: WithDType>(s: &CudaStorage<T>, l: &Layout) -> [Arg; 2] {
        [
            Arg::Layout(KernelLayout::new(l)),
            Arg::U64(s.ptr_at(l.offset())),
        ]
    }
}

/// The error of an op whose CUDA kernels do not exist yet (the CUDA-parity issue): it names the op and dtype
/// instead of guessing.
fn unsupported<T: WithDType, R>(op: &'static str) -> Result<R> {
    Err(Error::Unsupported {
        op,
        dtype: T::DTYPE,
        device: "cuda",
    })
}

const BLOCK: u32 = 256;
const MAX_GRID: usize = 1 << 20;

/// Launches `sig` over `n` elements (grid-stride loops cover any `n`); the arguments must match the catalog.
fn launch(op: &'static str, sig: KernelSig, n: usize, mut args: Vec<Arg>) -> Result<()> {
    let sizes: Vec<usize> = args.iter().map(Arg::size).collect();
    if sizes != sig.params {
        return Err(cuda_err(
            op,
            format!(
                "internal error: {} expects parameters {:?}, got {:?}",
                sig.name, sig.params, sizes
            ),
        ));
    }
    if n == 0 {
        return Ok(());
    }
    let st = state(op)?;
    let module = &st
        .modules
        .iter()
        .find(|(name, _)| *name == sig.module)
        .ok_or_else(|| cuda_err(op, format!("no PTX module {}", sig.module)))?
        .1;
    let func = module
        .get_function(&sig.name)
        .map_err(|e| cuda_err(op, format!("kernel {}: {e}", sig.name)))?;
    let grid = n.div_ceil(BLOCK as usize).min(MAX_GRID) as u32;
    let ptrs: Vec<*mut c_void> = args.iter_mut().map(Arg::ptr).collect();
    unsafe { st.stream.launch(&func, grid, BLOCK, 0, &ptrs) }
        .map_err(|e| cuda_err(op, format!("launching {}: {e}", sig.name)))
}

/// Allocates `n` outputs of `U` and launches `sig` with the common parameter order
/// `(n, <inputs: layouts then pointers>, out, <scalars>)`.
fn run<U: WithDType>(
    op: &'static str,
    sig: KernelSig,
    n: usize,
    inputs: Vec<Arg>,
    scalars: Vec<Arg>,
) -> Result<CudaStorage<U>> {
    let out = CudaStorage::<U>::alloc(op, n)?;
    let mut args = Vec::with_capacity(inputs.len() + scalars.len() + 2);
    args.push(Arg::U64(n as u64));
    args.extend(inputs);
    args.push(Arg::U64(out.ptr_at(0)));
    args.extend(scalars);
    launch(op, sig, n, args)?;
    Ok(out)
}

/// Layouts first, then data pointers: the parameter order of the multi-operand kernels.
fn views<const K: usize>(operands: [[Arg; 2]; K]) -> Vec<Arg> {
    let (layouts, ptrs): (Vec<Arg>, Vec<Arg>) = operands.into_iter().map(|[l, p]| (l, p)).unzip();
    layouts.into_iter().chain(ptrs).collect()
}

impl Device for Cuda {}

impl Kernels for Cuda {
    type Storage<T: WithDType> = CudaStorage<T>;
    const NAME: &'static str = "cuda";

    fn full<T: WithDType>(n: usize, value: T) -> Result<CudaStorage<T>> {
        let out = CudaStorage::<T>::alloc("full", n)?;
        let args = alloc::vec![
            Arg::U64(n as u64),
            Arg::scalar(value),
            Arg::U64(out.ptr_at(0))
        ];
        launch("full", KernelSig::fill(T::DTYPE), n, args)?;
        Ok(out)
    }

    fn from_slice<T: WithDType>(data: &[T]) -> Result<CudaStorage<T>> {
        let out = CudaStorage::<T>::alloc("from_slice", data.len())?;
        if !data.is_empty() {
            let bytes: &[u8] = bytemuck::cast_slice(data);
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
            dense = Self::copy_strided(storage, layout)?;
            (&dense, 0)
        };
        let n = layout.numel();
        let mut out = alloc::vec![T::ZERO; n];
        if n > 0 {
            let st = state("to_vec")?;
            st.stream.synchronize().map_err(|e| cuda_err("to_vec", e))?;
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
            check("to_vec", unsafe {
                cu::cuMemcpyDtoH_v2(
                    bytes.as_mut_ptr() as *mut c_void,
                    src.ptr_at(offset),
                    bytes.len(),
                )
            })?;
        }
        Ok(out)
    }

    fn copy_strided<T: WithDType>(
        storage: &CudaStorage<T>,
        layout: &Layout,
    ) -> Result<CudaStorage<T>> {
        let sig = KernelSig::copy(T::DTYPE);
        run(
            "contiguous",
            sig,
            layout.numel(),
            views([Arg::view(storage, layout)]),
            Vec::new(),
        )
    }

    fn cast<T: WithDType, U: WithDType>(
        storage: &CudaStorage<T>,
        layout: &Layout,
    ) -> Result<CudaStorage<U>> {
        let sig = KernelSig::cast(T::DTYPE, U::DTYPE);
        run(
            "to_dtype",
            sig,
            layout.numel(),
            views([Arg::view(storage, layout)]),
            Vec::new(),
        )
    }

    fn unary<T: WithDType, Op: UnaryOp<T>>(
        op: Op,
        storage: &CudaStorage<T>,
        layout: &Layout,
    ) -> Result<CudaStorage<T>> {
        let sig = KernelSig::unary(Op::NAME, T::DTYPE);
        let scalars = op.params().map(Arg::scalar).into();
        run(
            Op::NAME,
            sig,
            layout.numel(),
            views([Arg::view(storage, layout)]),
            scalars,
        )
    }

    fn binary<T: WithDType, Op: BinaryOp<T>>(
        _op: Op,
        (a, la): (&CudaStorage<T>, &Layout),
        (b, lb): (&CudaStorage<T>, &Layout),
    ) -> Result<CudaStorage<T>> {
        let sig = KernelSig::binary(Op::NAME, T::DTYPE);
        let inputs = views([Arg::view(a, la), Arg::view(b, lb)]);
        run(Op::NAME, sig, la.numel(), inputs, Vec::new())
    }

    fn compare<T: WithDType>(
        op: CmpOp,
        (a, la): (&CudaStorage<T>, &Layout),
        (b, lb): (&CudaStorage<T>, &Layout),
    ) -> Result<CudaStorage<u8>> {
        let sig = KernelSig::binary(op.name(), T::DTYPE);
        let inputs = views([Arg::view(a, la), Arg::view(b, lb)]);
        run(op.name(), sig, la.numel(), inputs, Vec::new())
    }

    fn reduce<T: WithDType, Op: ReduceOp<T>>(
        _op: Op,
        _storage: &CudaStorage<T>,
        _layout: &Layout,
        _reduced: &[bool; MAX_RANK],
    ) -> Result<CudaStorage<Op::Out>> {
        // The reduction kernels are the CUDA-parity issue's work; until then, say so instead of guessing.
        unsupported::<T, _>(Op::NAME)
    }

    fn concat<T: WithDType>(
        parts: &[(&CudaStorage<T>, &Layout)],
        axis: usize,
    ) -> Result<CudaStorage<T>> {
        // Each part is a strided copy into its slab of the output; with the output contiguous and the slab a
        // narrowed view of it, that is the copy kernel once the destination can be strided (CUDA-parity issue).
        let _ = (parts, axis);
        unsupported::<T, _>("cat")
    }

    fn gather<T: WithDType, I: IndexDType>(
        op: &'static str,
        _src: (&CudaStorage<T>, &Layout),
        _idx: (&CudaStorage<I>, &Layout),
        _axis: usize,
    ) -> Result<CudaStorage<T>> {
        // Gather/scatter kernels (with out-of-range reporting) are the CUDA-parity issue's work.
        unsupported::<T, _>(op)
    }

    fn scatter_add<T: WithDType, I: IndexDType>(
        op: &'static str,
        _dst: (&CudaStorage<T>, &Layout),
        _idx: (&CudaStorage<I>, &Layout),
        _src: (&CudaStorage<T>, &Layout),
        _axis: usize,
    ) -> Result<CudaStorage<T>> {
        unsupported::<T, _>(op)
    }

    fn along_axis<T: FloatDType>(
        op: AlongAxis,
        _storage: &CudaStorage<T>,
        _layout: &Layout,
        _axis: usize,
    ) -> Result<CudaStorage<T>> {
        // One-block-per-row kernels are the CUDA-parity issue's work.
        unsupported::<T, _>(op.name())
    }

    fn conv2d<T: FloatDType>(
        _input: (&CudaStorage<T>, &Layout),
        _weight: (&CudaStorage<T>, &Layout),
        _params: Conv2dParams,
    ) -> Result<CudaStorage<T>> {
        // im2col + the matmul kernel is the CUDA-parity issue's work.
        unsupported::<T, _>("conv2d")
    }

    fn conv_transpose2d<T: FloatDType>(
        _input: (&CudaStorage<T>, &Layout),
        _weight: (&CudaStorage<T>, &Layout),
        _params: Conv2dParams,
    ) -> Result<CudaStorage<T>> {
        unsupported::<T, _>("conv_transpose2d")
    }

    fn pool2d<T: FloatDType>(
        pool: Pool,
        _input: (&CudaStorage<T>, &Layout),
        _kernel: usize,
        _params: Conv2dParams,
    ) -> Result<CudaStorage<T>> {
        unsupported::<T, _>(match pool {
            Pool::Max => "max_pool2d",
            Pool::Avg => "avg_pool2d",
        })
    }

    fn matmul<T: FloatDType>(
        _lhs: (&CudaStorage<T>, &Layout),
        _rhs: (&CudaStorage<T>, &Layout),
    ) -> Result<CudaStorage<T>> {
        // The matmul kernels are the CUDA-parity issue's work.
        unsupported::<T, _>("matmul")
    }

    fn where_cond<T: WithDType>(
        (m, lm): (&CudaStorage<u8>, &Layout),
        (t, lt): (&CudaStorage<T>, &Layout),
        (f, lf): (&CudaStorage<T>, &Layout),
    ) -> Result<CudaStorage<T>> {
        let sig = KernelSig::where_cond(T::DTYPE);
        let inputs = views([Arg::view(m, lm), Arg::view(t, lt), Arg::view(f, lf)]);
        run("where_cond", sig, lm.numel(), inputs, Vec::new())
    }
}
