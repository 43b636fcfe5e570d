//! The kernel catalog: which PTX module holds which kernel, with which parameters.
//!
//! The `.cu` files instantiate kernel families with the `FOR_*_DTYPES` macros of `ptx/common.cuh`. Each op family
//! lists its own kernels beside its launcher (`ops/<family>/cuda.rs`: an `impl KernelSig` of constructors and a
//! `signatures` function); this file holds the core kernels (fill, copy, cast), the parameter structs the `.cu`
//! files mirror, and [`core_signatures`]; `ops::cuda_catalog` gathers them with every family's list. Launches go through [`KernelSig`] so the
//! arguments the Rust side passes are checked against the catalog, and `tests/cuda_ptx.rs` checks the catalog
//! against the `.entry` signatures of the compiled PTX.

use crate::dtype::DType;
use crate::layout::Layout;
use crate::shape::MAX_RANK;
use alloc::string::String;
use alloc::vec::Vec;

/// A compiled PTX module (`{name}.cu`: in `ptx/`, or in its family's folder) and the compute capability its PTX needs (70: every supported GPU).
#[derive(Clone, Copy, Debug)]
pub struct PtxModule {
    /// The `.cu` file's stem.
    pub name: &'static str,
    /// The PTX text.
    pub ptx: &'static str,
    /// The same PTX with machine code for sm_70, sm_80 and sm_90 beside it (a compressed fatbin): the driver
    /// loads the code of its GPU without compiling, and compiles the PTX on other GPUs.
    pub fatbin: &'static [u8],
    /// Lowest compute capability (major * 10 + minor) that can load it.
    pub min_capability: u32,
}

/// Bytes the driver reads in place: a fatbin must start on an 8-byte boundary, which `include_bytes!` does not
/// promise.
#[repr(C, align(16))]
struct Aligned<B: ?Sized>(B);

// `PTX_MODULES`, the table build.rs writes from the `.cu` files it compiled (a file's first line
// `// nvcc-arch: compute_80` makes its module need compute capability 8.0).
include!(concat!(env!("OUT_DIR"), "/ptx_modules.rs"));

/// Bytes reserved per partial reduction state (the largest, var's, takes 24).
pub const REDUCE_STATE_BYTES: usize = 32;

/// The strided layout passed to kernels by value; mirrors `struct Layout` in `ptx/common.cuh` (104 bytes). The
/// offset is folded into the data pointer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelLayout {
    dims: [u64; MAX_RANK],
    strides: [u64; MAX_RANK],
    rank: u32,
    contiguous: u32,
}

impl KernelLayout {
    /// The kernel view of a layout.
    pub fn new(layout: &Layout) -> Self {
        let mut k = KernelLayout {
            rank: layout.rank() as u32,
            contiguous: layout.is_contiguous() as u32,
            ..Default::default()
        };
        for (i, (&d, &s)) in layout.dims().iter().zip(layout.strides()).enumerate() {
            k.dims[i] = d as u64;
            k.strides[i] = s as u64;
        }
        k
    }
}

/// Sizes and element strides of a batched matrix product, passed by value; mirrors `struct Gemm` in
/// `src/ops/matmul/matmul.cu` (96 bytes). `c` is written at `batch * c_batch + row * c_row + col`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GemmDims {
    /// Batches, rows of A and C, columns of B and C, inner size.
    pub batch: u64,
    /// Rows of A and C.
    pub m: u64,
    /// Columns of B and C.
    pub n: u64,
    /// Columns of A, rows of B.
    pub k: u64,
    /// A's strides (batch, row, column), in elements.
    pub a: [u64; 3],
    /// B's strides (batch, row, column).
    pub b: [u64; 3],
    /// C's strides (batch, row); its columns are dense.
    pub c: [u64; 2],
}

/// Geometry of a 2-D convolution or pooling over NCHW, passed by value; mirrors `struct Geom` in `src/ops/conv/conv.cu`
/// (136 bytes). `h, w` are the input's spatial size, `oh, ow` the output's.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConvGeom {
    /// Batch, input channels, input height and width, output channels, kernel height and width, output height
    /// and width.
    pub sizes: [u64; 9],
    /// Stride, padding and dilation (height, width each), then groups.
    pub window: [u64; 7],
    /// Average pooling's divisor: 1 counts the padding (`count_include_pad`), 0 only the taps inside.
    pub count_pad: u64,
}

/// The coefficients of one fused Adam step, passed by value; mirrors `struct AdamCoefficients` in
/// `src/ops/optim/optim.cu` (72 bytes). Built from the optimizer family's `AdamStep` with the CPU kernel's
/// derived terms (`ops/optim/cuda.rs`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AdamCoefficients {
    /// `lr_t, beta1, beta2, eps, l2, keep, 1 - beta1, 1 - beta2, 1 / bc2`.
    pub values: [f64; 9],
}

/// Size in bytes of a kernel parameter.
pub const LAYOUT_BYTES: usize = core::mem::size_of::<KernelLayout>();

/// Parameter sizes, for the families' signatures (each family's `cuda.rs` lists its kernels' parameters).
pub(crate) mod sizes {
    pub(crate) use super::LAYOUT_BYTES;
    /// A device address.
    pub(crate) const PTR: usize = 8;
    /// A count or index (`unsigned long long`).
    pub(crate) const COUNT: usize = 8;
    /// A `double` parameter.
    pub(crate) const F64: usize = 8;
    /// [`GemmDims`](super::GemmDims) by value.
    pub(crate) const GEMM_BYTES: usize = core::mem::size_of::<super::GemmDims>();
    /// [`ConvGeom`](super::ConvGeom) by value.
    pub(crate) const GEOM_BYTES: usize = core::mem::size_of::<super::ConvGeom>();
}
use sizes::{COUNT, PTR};

/// Most parameters a kernel takes (the reductions and scatter-add take 10).
pub const MAX_PARAMS: usize = 12;

/// A kernel's module, name and parameter sizes (in bytes, in order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSig {
    /// PTX module (`{module}.cu`).
    pub module: &'static str,
    /// Entry name, `{stem}_{dtype}`.
    pub name: String,
    /// Byte size of each parameter, held inline (a launch allocates no list for them).
    sizes: [usize; MAX_PARAMS],
    count: usize,
}

impl KernelSig {
    pub(crate) fn new(module: &'static str, stem: &str, dtype: DType, params: &[usize]) -> Self {
        assert!(
            params.len() <= MAX_PARAMS,
            "a kernel of {} parameters",
            params.len()
        );
        let mut sizes = [0; MAX_PARAMS];
        sizes[..params.len()].copy_from_slice(params);
        KernelSig {
            module,
            name: dtype.kernel_name(stem),
            sizes,
            count: params.len(),
        }
    }
    /// Byte size of each parameter, in order.
    pub fn params(&self) -> &[usize] {
        &self.sizes[..self.count]
    }
    /// `fill_{T}(n, value, out)`.
    pub fn fill(t: DType) -> Self {
        Self::new("copy", "fill", t, &[COUNT, t.size_in_bytes(), PTR])
    }
    /// `copy_{T}(n, layout, x, out)`.
    pub fn copy(t: DType) -> Self {
        Self::new("copy", "copy", t, &[COUNT, LAYOUT_BYTES, PTR, PTR])
    }
    /// `cast_{T}_{U}(n, layout, x, out)`.
    pub fn cast(from: DType, to: DType) -> Self {
        let stem = from.kernel_name("cast");
        Self::new("copy", &stem, to, &[COUNT, LAYOUT_BYTES, PTR, PTR])
    }
}

/// The tile edge of `matmul_{T}` (128 for f32/f16/bf16, 64 for f64), for sizing its grid.
pub fn matmul_tile(t: DType) -> usize {
    if t == DType::F64 {
        64
    } else {
        128
    }
}

impl KernelSig {
    /// A kernel over the lanes along one axis, a block or thread per lane: its parameters start with the lane
    /// walk `(lanes, len, outer_in, outer_out, in_stride, out_stride)` that [`super::lane_walk`] builds, then
    /// `rest`.
    pub(crate) fn lane_kernel(module: &'static str, stem: &str, t: DType, rest: &[usize]) -> Self {
        const WALK: [usize; 6] = [COUNT, COUNT, LAYOUT_BYTES, LAYOUT_BYTES, COUNT, COUNT];
        let mut params = [0; MAX_PARAMS];
        params[..WALK.len()].copy_from_slice(&WALK);
        params[WALK.len()..WALK.len() + rest.len()].copy_from_slice(rest);
        Self::new(module, stem, t, &params[..WALK.len() + rest.len()])
    }
}

/// The core kernels of element type `t` (fill, copy, cast to every type), for the catalog
/// ([`crate::ops::cuda_catalog`], which adds every op family's).
pub fn core_signatures(t: DType, all: &mut Vec<KernelSig>) {
    all.push(KernelSig::fill(t));
    all.push(KernelSig::copy(t));
    for u in DType::ALL {
        all.push(KernelSig::cast(t, u));
    }
}
