//! The kernel catalog: which PTX module holds which kernel, with which parameters.
//!
//! The `.cu` files instantiate kernel families with the `FOR_*_DTYPES` macros of `ptx/common.cuh`; this file lists
//! the same families. Launches go through [`KernelSig`] so the arguments the Rust side passes are checked against
//! the catalog, and `tests/cuda_ptx.rs` checks the catalog against the `.entry` signatures of the compiled PTX.

use crate::dtype::DType;
use crate::layout::Layout;
use crate::shape::MAX_RANK;
use alloc::string::String;
use alloc::vec::Vec;

/// The compiled PTX modules, by name (`ptx/{name}.cu`).
pub const PTX_MODULES: [(&str, &str); 3] = [
    ("copy", include_str!(concat!(env!("OUT_DIR"), "/copy.ptx"))),
    (
        "unary",
        include_str!(concat!(env!("OUT_DIR"), "/unary.ptx")),
    ),
    (
        "binary",
        include_str!(concat!(env!("OUT_DIR"), "/binary.ptx")),
    ),
];

/// Unary ops instantiated for every dtype.
pub const UNARY_ALL: &[&str] = &["sqr", "clamp"];
/// Unary ops instantiated for i64 and the floats.
pub const UNARY_SIGNED: &[&str] = &["neg", "abs"];
/// Unary ops instantiated for the floats.
pub const UNARY_FLOAT: &[&str] = &[
    "exp",
    "ln",
    "sqrt",
    "recip",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "gelu_tanh",
    "gelu_erf",
    "silu",
    "powf",
    "affine",
];
/// Binary ops, for every dtype.
pub const BINARY: &[&str] = &["add", "sub", "mul", "div", "maximum", "minimum"];

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

/// Size in bytes of a kernel parameter.
pub const LAYOUT_BYTES: usize = core::mem::size_of::<KernelLayout>();
const PTR: usize = 8;
const COUNT: usize = 8;

/// A kernel's module, name and parameter sizes (in bytes, in order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSig {
    /// PTX module (`ptx/{module}.cu`).
    pub module: &'static str,
    /// Entry name, `{stem}_{dtype}`.
    pub name: String,
    /// Byte size of each parameter.
    pub params: Vec<usize>,
}

impl KernelSig {
    fn new(module: &'static str, stem: &str, dtype: DType, params: &[usize]) -> Self {
        KernelSig {
            module,
            name: crate::ops::kernel_name(stem, dtype),
            params: params.to_vec(),
        }
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
        let mut unary: Vec<&str> = UNARY_ALL.to_vec();
        if t == DType::I64 || t.is_float() {
            unary.extend(UNARY_SIGNED);
        }
        if t.is_float() {
            unary.extend(UNARY_FLOAT);
        }
        for op in unary {
            all.push(KernelSig::unary(op, t));
        }
        for op in BINARY
            .iter()
            .chain(crate::ops::CmpOp::ALL.map(|c| c.name()).iter())
        {
            all.push(KernelSig::binary(op, t));
        }
    }
    all
}
