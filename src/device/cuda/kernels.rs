//! The kernel catalog: which PTX module holds which kernel, with which parameters.
//!
//! The `.cu` files instantiate kernel families with the `FOR_*_DTYPES` macros of `ptx/common.cuh`; this file lists
//! the same families. Launches go through [`KernelSig`] so the arguments the Rust side passes are checked against
//! the catalog, and `tests/cuda_ptx.rs` checks the catalog against the `.entry` signatures of the compiled PTX.

use crate::dtype::DType;
use crate::layout::Layout;
use crate::ops::{elementwise, reduce, AlongAxis, Pool, Scan};
use crate::shape::MAX_RANK;
use alloc::string::String;
use alloc::vec::Vec;

/// A compiled PTX module (`ptx/{name}.cu`) and the compute capability its PTX needs (70: every supported GPU).
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

// `PTX_MODULES`, the table build.rs writes from the `ptx/*.cu` files it compiled (a file's first line
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
/// `ptx/matmul.cu` (96 bytes). `c` is written at `batch * c_batch + row * c_row + col`.
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

/// Geometry of a 2-D convolution or pooling over NCHW, passed by value; mirrors `struct Geom` in `ptx/conv.cu`
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
/// `ptx/optim.cu` (72 bytes). Built from [`crate::ops::AdamStep`] with the CPU kernel's derived terms.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AdamCoefficients {
    /// `lr_t, beta1, beta2, eps, l2, keep, 1 - beta1, 1 - beta2, 1 / bc2`.
    pub values: [f64; 9],
}

impl AdamCoefficients {
    /// The kernel's view of a step.
    pub fn new(s: &crate::ops::AdamStep) -> Self {
        AdamCoefficients {
            values: [
                s.lr_t,
                s.beta1,
                s.beta2,
                s.eps,
                s.l2,
                s.keep,
                1.0 - s.beta1,
                1.0 - s.beta2,
                1.0 / s.bc2,
            ],
        }
    }
}

/// Size in bytes of a kernel parameter.
pub const LAYOUT_BYTES: usize = core::mem::size_of::<KernelLayout>();
const PTR: usize = 8;
const COUNT: usize = 8;

/// Most parameters a kernel takes (the reductions and scatter-add take 10).
pub const MAX_PARAMS: usize = 12;

/// The parameters of both resampling kernels (`ptx/resample.cu`).
const RESAMPLE_PARAMS: [usize; 10] = [
    COUNT,
    LAYOUT_BYTES,
    PTR,
    PTR,
    COUNT,
    COUNT,
    COUNT,
    COUNT,
    COUNT,
    COUNT,
];

/// A kernel's module, name and parameter sizes (in bytes, in order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSig {
    /// PTX module (`ptx/{module}.cu`).
    pub module: &'static str,
    /// Entry name, `{stem}_{dtype}`.
    pub name: String,
    /// Byte size of each parameter, held inline (a launch allocates no list for them).
    sizes: [usize; MAX_PARAMS],
    count: usize,
}

impl KernelSig {
    fn new(module: &'static str, stem: &str, dtype: DType, params: &[usize]) -> Self {
        assert!(
            params.len() <= MAX_PARAMS,
            "a kernel of {} parameters",
            params.len()
        );
        let mut sizes = [0; MAX_PARAMS];
        sizes[..params.len()].copy_from_slice(params);
        KernelSig {
            module,
            name: crate::ops::kernel_name(stem, dtype),
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
        let stem = crate::ops::kernel_name("cast", from);
        Self::new("copy", &stem, to, &[COUNT, LAYOUT_BYTES, PTR, PTR])
    }
    /// `{op}_{T}(n, layout, x, out, p0, p1)`.
    pub fn unary(op: &str, t: DType) -> Self {
        let s = t.size_in_bytes();
        Self::new("unary", op, t, &[COUNT, LAYOUT_BYTES, PTR, PTR, s, s])
    }
    /// `{op}_{T}(n, la, lb, a, b, out)`; comparisons have the same parameters with a `u8` output.
    pub fn binary(op: &str, t: DType) -> Self {
        Self::new(
            "binary",
            op,
            t,
            &[COUNT, LAYOUT_BYTES, LAYOUT_BYTES, PTR, PTR, PTR],
        )
    }
    /// `where_{T}(n, lm, lt, lf, m, t, f, out)`.
    pub fn where_cond(t: DType) -> Self {
        Self::new(
            "binary",
            "where",
            t,
            &[
                COUNT,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                PTR,
                PTR,
                PTR,
                PTR,
            ],
        )
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

const GEMM_BYTES: usize = core::mem::size_of::<GemmDims>();
const GEOM_BYTES: usize = core::mem::size_of::<ConvGeom>();
const F64: usize = 8;

impl KernelSig {
    /// `copy_into_{T}(n, src_layout, dst_layout, x, out)`.
    pub fn copy_into(t: DType) -> Self {
        Self::new(
            "copy",
            "copy_into",
            t,
            &[COUNT, LAYOUT_BYTES, LAYOUT_BYTES, PTR, PTR],
        )
    }
    /// `reduce_{op}_{T}(n_out, parts, chunk, count, lo, lr, x, partial, out, param)`.
    pub fn reduce(op: &str, t: DType) -> Self {
        let stem = alloc::format!("reduce_{op}");
        Self::new(
            "reduce",
            &stem,
            t,
            &[
                COUNT,
                COUNT,
                COUNT,
                COUNT,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                PTR,
                PTR,
                PTR,
                F64,
            ],
        )
    }
    /// `merge_{op}_{T}(n_out, parts, count, partial, out, param)`.
    pub fn reduce_merge(op: &str, t: DType) -> Self {
        let stem = alloc::format!("merge_{op}");
        Self::new("reduce", &stem, t, &[COUNT, COUNT, COUNT, PTR, PTR, F64])
    }
    /// `scan_{op}_{T}(<lane walk>, x, out, reverse)`.
    pub fn scan(op: &str, t: DType) -> Self {
        Self::lane_kernel("scan", &alloc::format!("scan_{op}"), t, &[PTR, PTR, COUNT])
    }
    /// `scan_index_{op}_{T}(<lane walk>, x, out)`.
    pub fn scan_index(op: &str, t: DType) -> Self {
        Self::lane_kernel("scan", &alloc::format!("scan_index_{op}"), t, &[PTR, PTR])
    }
    /// `argsort_{T}(<lane walk>, x, out, scratch, descending)`.
    pub fn argsort(t: DType) -> Self {
        Self::lane_kernel("sort", "argsort", t, &[PTR, PTR, PTR, COUNT])
    }
    /// `cumprod_backward_{T}(lanes, len, outer_x, outer_g, outer_out, x_stride, g_stride, out_stride, x, g, out)`.
    pub fn cumprod_backward(t: DType) -> Self {
        let params = [
            COUNT,
            COUNT,
            LAYOUT_BYTES,
            LAYOUT_BYTES,
            LAYOUT_BYTES,
            COUNT,
            COUNT,
            COUNT,
            PTR,
            PTR,
            PTR,
        ];
        Self::new("scan", "cumprod_backward", t, &params)
    }
    /// `{op}_{T}(<lane walk>, x, out, eps)`.
    pub fn along_axis(op: &str, t: DType) -> Self {
        Self::lane_kernel("along_axis", op, t, &[PTR, PTR, F64])
    }
    /// A kernel over the lanes along one axis, a block or thread per lane: its parameters start with the lane
    /// walk `(lanes, len, outer_in, outer_out, in_stride, out_stride)` that [`super::lane_walk`] builds, then
    /// `rest`.
    fn lane_kernel(module: &'static str, stem: &str, t: DType, rest: &[usize]) -> Self {
        const WALK: [usize; 6] = [COUNT, COUNT, LAYOUT_BYTES, LAYOUT_BYTES, COUNT, COUNT];
        let mut params = [0; MAX_PARAMS];
        params[..WALK.len()].copy_from_slice(&WALK);
        params[WALK.len()..WALK.len() + rest.len()].copy_from_slice(rest);
        Self::new(module, stem, t, &params[..WALK.len() + rest.len()])
    }
    /// `matmul_{T}(dims, a, b, c)`.
    pub fn matmul(t: DType) -> Self {
        Self::new("matmul", "matmul", t, &[GEMM_BYTES, PTR, PTR, PTR])
    }
    /// `matmul_tc_{T}(dims, a, b, c)`, the tensor-core form for f16 (module `matmul`) and bf16 (`matmul_sm80`).
    pub fn matmul_tensor_core(t: DType) -> Self {
        let module = if t == DType::BF16 {
            "matmul_sm80"
        } else {
            "matmul"
        };
        Self::new(module, "matmul_tc", t, &[GEMM_BYTES, PTR, PTR, PTR])
    }
    /// `gather_{I}_{T}(n, li, walk, size, step, idx, src, out, err)`.
    pub fn gather(index: DType, t: DType) -> Self {
        let stem = crate::ops::kernel_name("gather", index);
        Self::new(
            "indexing",
            &stem,
            t,
            &[
                COUNT,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                COUNT,
                COUNT,
                PTR,
                PTR,
                PTR,
                PTR,
            ],
        )
    }
    /// `scatter_add_{I}_{T}(n, li, walk, ls, size, step, idx, src, out, err)`.
    pub fn scatter_add(index: DType, t: DType) -> Self {
        let stem = crate::ops::kernel_name("scatter_add", index);
        Self::new(
            "indexing",
            &stem,
            t,
            &[
                COUNT,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                COUNT,
                COUNT,
                PTR,
                PTR,
                PTR,
                PTR,
            ],
        )
    }
    /// `cross_entropy_backward_{I}_{T}(n, classes, llp, llab, lg, log_probs, labels, g, out)`.
    pub fn cross_entropy_backward(index: DType, t: DType) -> Self {
        let stem = crate::ops::kernel_name("cross_entropy_backward", index);
        Self::new(
            "indexing",
            &stem,
            t,
            &[
                COUNT,
                COUNT,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                LAYOUT_BYTES,
                PTR,
                PTR,
                PTR,
                PTR,
            ],
        )
    }
    /// `adam_step_{T}(n, coefficients, w, m, v, g)`.
    pub fn adam_step(t: DType) -> Self {
        let coefficients = core::mem::size_of::<AdamCoefficients>();
        Self::new(
            "optim",
            "adam_step",
            t,
            &[COUNT, coefficients, PTR, PTR, PTR, PTR],
        )
    }
    /// `im2col_{T}(n, geom, lx, x, col)`.
    pub fn im2col(t: DType) -> Self {
        Self::new(
            "conv",
            "im2col",
            t,
            &[COUNT, GEOM_BYTES, LAYOUT_BYTES, PTR, PTR],
        )
    }
    /// `resample_{T}(n, lanes, x, out, inner, step, n_in, n_out, mode, align)`.
    pub fn resample(t: DType) -> Self {
        Self::new("resample", "resample", t, &RESAMPLE_PARAMS)
    }
    /// `resample_backward_{T}(n_lanes, lanes, g, out, inner, step, n_in, n_out, mode, align)`.
    pub fn resample_backward(t: DType) -> Self {
        Self::new("resample", "resample_backward", t, &RESAMPLE_PARAMS)
    }
    /// `fold_{T}(n, geom, lc, col, out)`.
    pub fn fold(t: DType) -> Self {
        Self::new(
            "conv",
            "fold",
            t,
            &[COUNT, GEOM_BYTES, LAYOUT_BYTES, PTR, PTR],
        )
    }
    /// `conv_transpose2d_{T}(n, geom, lx, lw, x, w, out)`.
    pub fn conv_transpose2d(t: DType) -> Self {
        Self::new(
            "conv",
            "conv_transpose2d",
            t,
            &[COUNT, GEOM_BYTES, LAYOUT_BYTES, LAYOUT_BYTES, PTR, PTR, PTR],
        )
    }
    /// `{max,avg}_pool2d_{T}(n, geom, lx, x, out)`.
    pub fn pool(op: &str, t: DType) -> Self {
        Self::new("pool", op, t, &[COUNT, GEOM_BYTES, LAYOUT_BYTES, PTR, PTR])
    }
    /// `max_pool2d_indices_{T}(n, geom, lx, x, out)` (`out`: u32).
    pub fn max_pool2d_indices(t: DType) -> Self {
        Self::new(
            "pool",
            "max_pool2d_indices",
            t,
            &[COUNT, GEOM_BYTES, LAYOUT_BYTES, PTR, PTR],
        )
    }
    /// `max_pool2d_backward_{T}(n, geom, at, dy, dx)` (`at`: u32).
    pub fn max_pool2d_backward(t: DType) -> Self {
        Self::new(
            "pool",
            "max_pool2d_backward",
            t,
            &[COUNT, GEOM_BYTES, PTR, PTR, PTR],
        )
    }
}

/// Every kernel the Rust side can launch.
pub fn catalog() -> Vec<KernelSig> {
    let mut all = Vec::new();
    for t in DType::ALL {
        all.push(KernelSig::fill(t));
        all.push(KernelSig::copy(t));
        all.push(KernelSig::where_cond(t));
        for u in DType::ALL {
            all.push(KernelSig::cast(t, u));
        }
        for (op, bound) in elementwise::UNARY_STEMS {
            if bound.admits(t) {
                all.push(KernelSig::unary(op, t));
            }
        }
        if t.is_float() {
            for op in elementwise::PARAM_STEMS {
                all.push(KernelSig::unary(op, t));
            }
            for op in elementwise::FLOAT_BINARY_STEMS {
                all.push(KernelSig::binary(op, t));
            }
        }
        if t.is_int() {
            for op in elementwise::INT_BINARY_STEMS {
                all.push(KernelSig::binary(op, t));
            }
        }
        for op in elementwise::BINARY_STEMS
            .iter()
            .chain(crate::ops::CmpOp::ALL.map(|c| c.name()).iter())
        {
            all.push(KernelSig::binary(op, t));
        }
        all.push(KernelSig::copy_into(t));
        for (op, bound) in reduce::REDUCE_STEMS {
            if bound.admits(t) {
                all.push(KernelSig::reduce(op, t));
                all.push(KernelSig::reduce_merge(op, t));
            }
        }
        for op in Scan::ALL {
            if !op.floats_only() || t.is_float() {
                all.push(KernelSig::scan(op.name(), t));
            }
        }
        for op in [Scan::Max, Scan::Min] {
            all.push(KernelSig::scan_index(op.name(), t));
        }
        all.push(KernelSig::argsort(t));
        if t.is_float() {
            all.push(KernelSig::cumprod_backward(t));
        }
        for index in [DType::U32, DType::I32, DType::I64] {
            all.push(KernelSig::gather(index, t));
            all.push(KernelSig::scatter_add(index, t));
            if t.is_float() {
                all.push(KernelSig::cross_entropy_backward(index, t));
            }
        }
        if t.is_float() {
            for op in AlongAxis::ALL {
                all.push(KernelSig::along_axis(op.name(), t));
            }
            all.push(KernelSig::matmul(t));
            if t == DType::F16 || t == DType::BF16 {
                all.push(KernelSig::matmul_tensor_core(t));
            }
            all.push(KernelSig::im2col(t));
            all.push(KernelSig::fold(t));
            all.push(KernelSig::resample(t));
            all.push(KernelSig::resample_backward(t));
            all.push(KernelSig::adam_step(t));
            all.push(KernelSig::conv_transpose2d(t));
            for pool in Pool::ALL {
                all.push(KernelSig::pool(pool.name(), t));
            }
            all.push(KernelSig::max_pool2d_indices(t));
            all.push(KernelSig::max_pool2d_backward(t));
        }
    }
    all
}
