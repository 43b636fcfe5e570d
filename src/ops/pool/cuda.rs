//! The family's CUDA kernels (`src/ops/pool/pool.cu`): a thread per output for pooling and its indices, a thread per input
//! position for max pooling's gradient.

use super::{Pool, PoolKernels, PoolParams};
use crate::device::cuda::kernels::sizes::*;
use crate::device::cuda::kernels::{ConvGeom, KernelLayout, KernelSig};
use crate::device::cuda::{dest, fresh, launch, Arg, CudaStorage};
use crate::device::{Cuda, Kernels};
use crate::dtype::DType;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::conv::cuda::conv_geom;
use alloc::vec::Vec;

/// The geometry of a pooling of `(N, C, H, W)` planes into `[OH, OW]`.
fn pool_geom([n, c, h, w]: [usize; 4], [oh, ow]: [usize; 2], p: &PoolParams<2>) -> ConvGeom {
    ConvGeom {
        count_pad: p.count_include_pad as u64,
        ..conv_geom(
            [n, c, h, w],
            [c, p.kernel[0], p.kernel[1]],
            [oh, ow],
            &p.window(),
        )
    }
}

/// Launches a pooling kernel `(n, geom, lx, x, out)` (the values or the indices) of the `(N, C, H, W)` view `x`
/// into `out`, dense `(N, C, OH, OW)`.
fn launch_pool<T: FloatDType, U: crate::dtype::WithDType>(
    op: &'static str,
    sig: KernelSig,
    (x, lx): (&CudaStorage<T>, &Layout),
    p: &PoolParams<2>,
    out: &mut CudaStorage<U>,
) -> Result<()> {
    let [n, c, h, wd] = lx.dims4();
    let [oh, ow] = p.output([h, wd]).unwrap_or([0, 0]);
    let total = n * c * oh * ow;
    let out_ptr = dest(op, out, total)?;
    let args = alloc::vec![
        Arg::U64(total as u64),
        Arg::Geom(pool_geom([n, c, h, wd], [oh, ow], p)),
        Arg::Layout(KernelLayout::new(lx)),
        Arg::U64(x.ptr_at(lx.offset())),
        Arg::U64(out_ptr),
    ];
    launch(op, sig, total, args)
}

// SAFETY: every kernel writes each element of its output (a thread per output element, or per input position
// for the gradient), and device memory is never read as host values without a copy.
unsafe impl PoolKernels for Cuda {
    fn pool2d<T: FloatDType>(
        pool: Pool,
        x: (&CudaStorage<T>, &Layout),
        p: PoolParams<2>,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        let name = pool.name();
        launch_pool(name, KernelSig::pool(name, T::DTYPE), x, &p, out)
    }

    fn max_pool2d_indices<T: FloatDType>(
        x: (&CudaStorage<T>, &Layout),
        p: PoolParams<2>,
        out: &mut CudaStorage<u32>,
    ) -> Result<()> {
        let sig = KernelSig::max_pool2d_indices(T::DTYPE);
        launch_pool("max_pool2d_indices", sig, x, &p, out)
    }

    fn max_pool2d_at<T: FloatDType>(
        x: (&CudaStorage<T>, &Layout),
        _indices: (&CudaStorage<u32>, &Layout),
        p: PoolParams<2>,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        // Pooled again: the values are the same, and a gather at the indices would check them, synchronising.
        Self::pool2d(Pool::Max, x, p, out)
    }

    fn max_pool2d_backward<T: FloatDType>(
        (at, la): (&CudaStorage<u32>, &Layout),
        (g, lg): (&CudaStorage<T>, &Layout),
        [h, wd]: [usize; 2],
        p: PoolParams<2>,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        const OP: &str = "max_pool2d_backward";
        let [n, c, oh, ow] = la.dims4();
        // The indices and the gradient are read densely.
        let (at_dense, g_dense);
        let (at, at_off) = if la.is_contiguous() {
            (at, la.offset())
        } else {
            at_dense = fresh(OP, la.numel(), |d| Self::copy((at, la), d))?;
            (&at_dense, 0)
        };
        let (g, g_off) = if lg.is_contiguous() {
            (g, lg.offset())
        } else {
            g_dense = fresh(OP, lg.numel(), |d| Self::copy((g, lg), d))?;
            (&g_dense, 0)
        };
        let total = n * c * h * wd;
        let out_ptr = dest(OP, out, total)?;
        let args = alloc::vec![
            Arg::U64(total as u64),
            Arg::Geom(pool_geom([n, c, h, wd], [oh, ow], &p)),
            Arg::U64(at.ptr_at(at_off)),
            Arg::U64(g.ptr_at(g_off)),
            Arg::U64(out_ptr),
        ];
        launch(OP, KernelSig::max_pool2d_backward(T::DTYPE), total, args)
    }
}

/// The family's kernel signatures, which launches are checked against (and `tests/cuda_ptx.rs` checks against the
/// compiled PTX).
impl KernelSig {
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

/// The family's kernels of element type `t`, for the catalog (`ops::cuda_catalog`).
pub(crate) fn signatures(t: DType, all: &mut Vec<KernelSig>) {
    if t.is_float() {
        for pool in Pool::ALL {
            all.push(KernelSig::pool(pool.name(), t));
        }
        all.push(KernelSig::max_pool2d_indices(t));
        all.push(KernelSig::max_pool2d_backward(t));
    }
}
