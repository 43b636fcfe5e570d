//! Kernel launches: the arguments a kernel takes ([`Arg`]), grid sizes, the launch through the driver (or into a
//! graph being recorded), the lane walk the lane kernels share, and the matmul kernels' tiling.

use super::*;

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
    let kernel = state(op)?.kernel(op, &sig)?;
    // SAFETY: the arguments match the entry's parameters (checked against the catalog above), and every caller
    // sizes its output by the launch's element count and passes input views of tensors over their own buffers.
    unsafe {
        launch_raw(
            op,
            kernel,
            &sig.name,
            grid,
            (block, 1, 1),
            shared,
            &mut args,
        )
    }
}

/// Launches `kernel` (an entry of a module of this context) on `grid` blocks of `block` threads on the device's
/// stream (or into the graph being recorded).
///
/// # Safety
///
/// `args` are the entry's parameters, in order and of the sizes its PTX declares, and every device address
/// among them points into a buffer of at least the elements the kernel reads or writes there.
pub(super) unsafe fn launch_raw(
    op: &'static str,
    kernel: Kernel,
    name: &str,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared: usize,
    args: &mut [Arg],
) -> Result<()> {
    if args.len() > kernels::MAX_PARAMS {
        return Err(cuda_err(
            op,
            format!("{name}: at most {} kernel arguments", kernels::MAX_PARAMS),
        ));
    }
    let st = state(op)?;
    let gate = graph::launch_gate(op)?;
    let mut ptrs = [core::ptr::null_mut::<c_void>(); kernels::MAX_PARAMS];
    for (p, arg) in ptrs.iter_mut().zip(args.iter_mut()) {
        *p = arg.ptr();
    }
    // SAFETY: `ptrs` holds one pointer per kernel parameter, each to a live argument (`args` outlives the
    // launch, which copies them) of the size the entry declares, and the addresses among them point into large
    // enough buffers (this function's contract). The kernel handle belongs to a module of this context, and the
    // stream is the device's.
    let code = unsafe {
        cu::cuLaunchKernel(
            kernel.0,
            grid.0,
            grid.1,
            grid.2,
            block.0,
            block.1,
            block.2,
            shared as u32,
            st.stream.as_inner(),
            ptrs.as_mut_ptr(),
            core::ptr::null_mut(),
        )
    };
    drop(gate);
    if code != cu::CUresult::CUDA_SUCCESS {
        return Err(cuda_err(op, format!("launching {name}: {code:?}")));
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
