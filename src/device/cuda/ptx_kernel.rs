//! Kernels from a user's own PTX: what a custom op's CUDA side launches ([`crate::ops::custom`]).

use super::launch::launch_raw;
use super::*;

/// A kernel entry in PTX that a user crate compiled itself (with nvcc in its `build.rs`, say): the module's
/// name, its PTX text, and the entry's name (an `extern "C" __global__` function). The module is loaded once,
/// on the first launch of any of its entries, and kept for the process; that first launch cannot happen inside
/// a [`Cuda::capture`] (it is refused there: run the op once before capturing it).
///
/// ```no_run
/// use typed_tensor::device::cuda::{KernelArg, PtxKernel};
/// // In a crate whose build.rs ran `nvcc --ptx kernels.cu -o $OUT_DIR/kernels.ptx`:
/// // const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
/// # const PTX: &str = "";
/// const SWISH: PtxKernel = PtxKernel::new("my_ops", PTX, "swish_f32");
/// # fn launch(x: u64, y: u64, n: usize) -> typed_tensor::Result<()> {
/// // SAFETY: `swish_f32(const float* x, float* y, unsigned long long n)` reads `n` floats at `x` and writes
/// // `n` at `y`, which hold that many.
/// unsafe {
///     SWISH.launch_per_element("swish", n, &[KernelArg::Ptr(x), KernelArg::Ptr(y), KernelArg::U64(n as u64)])
/// }
/// # }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct PtxKernel {
    module: &'static str,
    ptx: &'static str,
    entry: &'static str,
}

/// One argument of a [`PtxKernel`] launch, passed by value as the entry's parameter of the same size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KernelArg {
    /// A device address (a `T*` parameter): [`CudaView::ptr`](crate::ops::custom::CudaView::ptr).
    Ptr(u64),
    /// An `unsigned long long` / `uint64_t`.
    U64(u64),
    /// A `long long` / `int64_t`.
    I64(i64),
    /// An `unsigned int`.
    U32(u32),
    /// An `int`.
    I32(i32),
    /// A `float`.
    F32(f32),
    /// A `double`.
    F64(f64),
}

impl KernelArg {
    fn arg(self) -> Arg {
        match self {
            KernelArg::Ptr(v) | KernelArg::U64(v) => Arg::U64(v),
            KernelArg::I64(v) => Arg::scalar(v),
            KernelArg::U32(v) => Arg::scalar(v),
            KernelArg::I32(v) => Arg::scalar(v),
            KernelArg::F32(v) => Arg::scalar(v),
            KernelArg::F64(v) => Arg::scalar(v),
        }
    }
}

/// Threads per block of [`PtxKernel::launch_per_element`].
const BLOCK_THREADS: u32 = 256;

impl PtxKernel {
    /// The entry `entry` of the PTX module `ptx`, loaded under the name `module` (one name per PTX text).
    pub const fn new(module: &'static str, ptx: &'static str, entry: &'static str) -> Self {
        PtxKernel { module, ptx, entry }
    }

    /// Launches the entry on `grid` blocks of `block` threads, with `shared` bytes of dynamic shared memory per
    /// block, on the device's stream (inside a [`Cuda::capture`], into the graph). Nothing runs when the grid or
    /// the block is empty. `op` names the operation in errors: a module that does not load, an entry it lacks, a
    /// failed launch.
    ///
    /// # Safety
    ///
    /// `args` are the entry's parameters, in order and of the sizes it declares (the launch cannot check them
    /// against user PTX), and the kernel reads and writes only memory that its pointer arguments' buffers hold:
    /// the inputs' and the output's elements ([`CudaView::numel`](crate::ops::custom::CudaView::numel)). An
    /// out-of-bounds write from a kernel is undefined behaviour that the device may report only later.
    pub unsafe fn launch(
        &self,
        op: &'static str,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared: usize,
        args: &[KernelArg],
    ) -> Result<()> {
        if [grid.0, grid.1, grid.2, block.0, block.1, block.2].contains(&0) {
            return Ok(());
        }
        let kernel = state(op)?.user_kernel(op, self)?;
        let mut args: Vec<Arg> = args.iter().map(|a| a.arg()).collect();
        // SAFETY: the argument list and the memory the kernel touches are this function's contract.
        unsafe { launch_raw(op, kernel, self.entry, grid, block, shared, &mut args) }
    }

    /// [`Self::launch`] with a thread per element for `n` elements: blocks of 256 threads, as many as `n` needs
    /// (at most 2^31 - 1; the kernel checks its index against `n`, or loops with a grid stride past that).
    ///
    /// # Safety
    ///
    /// As for [`Self::launch`].
    pub unsafe fn launch_per_element(
        &self,
        op: &'static str,
        n: usize,
        args: &[KernelArg],
    ) -> Result<()> {
        let blocks = n.div_ceil(BLOCK_THREADS as usize).min(i32::MAX as usize) as u32;
        // SAFETY: forwarded to the caller.
        unsafe { self.launch(op, (blocks, 1, 1), (BLOCK_THREADS, 1, 1), 0, args) }
    }
}

/// A module loaded from a user's PTX, and its entries looked up so far.
pub(super) struct UserModule {
    /// The PTX text's address: a second text under the same name is refused, not confused with the first.
    ptx: usize,
    module: Module,
    entries: BTreeMap<&'static str, Kernel>,
}

impl State {
    /// The handle of a user kernel: its module loaded from PTX on first use, the entry looked up once.
    fn user_kernel(&self, op: &'static str, k: &PtxKernel) -> Result<Kernel> {
        let mut modules = self.user_modules.lock().unwrap_or_else(|e| e.into_inner());
        if !modules.contains_key(k.module) {
            // Loading is not a stream operation a graph can record; the first launch must come before.
            refuse_in_capture(
                op,
                "loading a user's PTX module (launch the op once before the capture)",
            )?;
            if k.ptx.contains('\0') {
                let message = format!("the PTX text of module `{}` contains a NUL byte", k.module);
                return Err(cuda_err(op, message));
            }
            let module = Module::from_ptx(k.ptx, &[]).map_err(|e| {
                cuda_err(
                    op,
                    format!("cannot load the PTX module `{}`: {e}", k.module),
                )
            })?;
            let entry = UserModule {
                ptx: k.ptx.as_ptr() as usize,
                module,
                entries: BTreeMap::new(),
            };
            modules.insert(k.module, entry);
        }
        let user = modules.get_mut(k.module).expect("inserted above");
        if user.ptx != k.ptx.as_ptr() as usize {
            return Err(cuda_err(
                op,
                format!(
                    "two different PTX texts are named `{}`: give each module a name of its own",
                    k.module
                ),
            ));
        }
        if let Some(kernel) = user.entries.get(k.entry) {
            return Ok(*kernel);
        }
        let function = user.module.get_function(k.entry).map_err(|e| {
            cuda_err(
                op,
                format!("PTX module `{}` has no entry `{}`: {e}", k.module, k.entry),
            )
        })?;
        let kernel = Kernel(function.to_raw());
        user.entries.insert(k.entry, kernel);
        Ok(kernel)
    }
}
