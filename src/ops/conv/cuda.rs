//! The family's CUDA kernels: conv2d and its weight gradient as im2col (`src/ops/conv/conv.cu`) + the PTX GEMM, the
//! transposed convolution, pooling and max pooling's gradient as direct kernels.

use super::{Conv2dParams, ConvKernels};
use crate::device::cuda::kernels::sizes::*;
use crate::device::cuda::kernels::{ConvGeom, GemmDims, KernelLayout, KernelSig};
use crate::device::cuda::{dest, fresh, gemm, launch, Arg, CudaStorage};
use crate::device::{Cuda, Kernels};
use crate::dtype::{DType, FloatDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::shape::{Dims, MAX_RANK};
use alloc::vec::Vec;

pub(crate) fn conv_geom(
    [n, c, h, w]: [usize; 4],
    [co, kh, kw]: [usize; 3],
    [oh, ow]: [usize; 2],
    p: &Conv2dParams,
) -> ConvGeom {
    let u = |v: usize| v as u64;
    ConvGeom {
        sizes: [n, c, h, w, co, kh, kw, oh, ow].map(u),
        window: [
            p.stride[0],
            p.stride[1],
            p.padding[0],
            p.padding[1],
            p.dilation[0],
            p.dilation[1],
            p.groups,
        ]
        .map(u),
        count_pad: 1,
    }
}

/// The `(N, C, H, W)` view's im2col for a `[C_out, KH, KW]` kernel and `[OH, OW]` output: a dense
/// `[N, C * KH * KW, OH * OW]` buffer (the columns of the convolution's product and of its weight gradient's).
fn im2col<T: FloatDType>(
    op: &'static str,
    (x, lx): (&CudaStorage<T>, &Layout),
    [co, kh, kw]: [usize; 3],
    [oh, ow]: [usize; 2],
    p: &Conv2dParams,
) -> Result<CudaStorage<T>> {
    let [n, c, h, w] = lx.dims4();
    let col = CudaStorage::<T>::alloc(op, n * c * kh * kw * oh * ow)?;
    let args = alloc::vec![
        Arg::U64(col.len() as u64),
        Arg::Geom(conv_geom([n, c, h, w], [co, kh, kw], [oh, ow], p)),
        Arg::Layout(KernelLayout::new(lx)),
        Arg::U64(x.ptr_at(lx.offset())),
        Arg::U64(col.ptr_at(0)),
    ];
    launch(op, KernelSig::im2col(T::DTYPE), col.len(), args)?;
    Ok(col)
}

/// The conv2d weight gradient for f32/f64: per group, `dW_g (cog, cig * KH * KW) = dY_g (cog, N * L) x
/// col_g^T (N * L, cig * KH * KW)`, where `col` is the forward pass's im2col (L = OH * OW positions per image).
/// Images and positions are laid side by side (dY and col permuted to put the images inside their rows), so the
/// contraction is one dense axis; it is long and the output small, so it is split into chunks computed as the
/// batches of one product (enough blocks to fill the GPU), whose partial results are summed by the reduction
/// kernel.
fn weight_grad<T: FloatDType>(
    x: &CudaStorage<T>,
    lx: &Layout,
    gy: &CudaStorage<T>,
    lgy: &Layout,
    [kh, kw]: [usize; 2],
    p: Conv2dParams,
) -> Result<CudaStorage<T>> {
    const OP: &str = "conv2d_weight_grad";
    let [n, c, _, _] = lx.dims4();
    let [_, co, oh, ow] = lgy.dims4();
    let (groups, l) = (p.groups, oh * ow);
    let (cog, ckg, ckt) = (co / groups, c / groups * kh * kw, c * kh * kw);
    let contraction = n * l;
    if co * ckg == 0 || contraction == 0 {
        return <Cuda as Kernels>::full::<T, ()>(co * ckg, T::ZERO);
    }
    let view = |dims: &[usize], strides: &[usize], offset| {
        Layout::from_parts(Dims::from_slice(dims), strides, offset)
    };
    // im2col into [N, C * KH * KW, L], as the forward pass does, then rows of (C * KH * KW, N * L) (the first
    // buffer goes back to the cache before the products).
    let col = {
        let per_image = im2col(OP, (x, lx), [co, kh, kw], [oh, ow], &p)?;
        let rows = view(&[ckt, n, l], &[l, ckt * l, 1], 0);
        fresh(OP, rows.numel(), |d| Cuda::copy((&per_image, &rows), d))?
    };
    // dY as rows of (C_out, N * L).
    let sg = lgy.strides();
    let gy_rows = view(
        &[co, n, oh, ow],
        &[sg[1], sg[0], sg[2], sg[3]],
        lgy.offset(),
    );
    let gy = fresh(OP, gy_rows.numel(), |d| Cuda::copy((gy, &gy_rows), d))?;
    // Chunks of the contraction: ~512 blocks of 128 x 128 outputs in all, none shorter than 256 products.
    let tiles = cog.div_ceil(128) * ckg.div_ceil(128) * groups;
    let chunks = (512 / tiles).clamp(1, (contraction / 256).max(1));
    let chunk = contraction / chunks;
    let rest = contraction - chunks * chunk; // summed as one more partial
    let parts = chunks + usize::from(rest > 0);
    let partial = CudaStorage::<T>::alloc(OP, parts * co * ckg)?;
    for grp in 0..groups {
        let (a, b) = (grp * cog * contraction, grp * ckg * contraction);
        let c_at = |part: usize| partial.ptr_at(part * co * ckg + grp * cog * ckg);
        let dims = |batch: usize, k: usize| GemmDims {
            batch: batch as u64,
            m: cog as u64,
            n: ckg as u64,
            k: k as u64,
            a: [chunk as u64, contraction as u64, 1],
            b: [chunk as u64, 1, contraction as u64],
            c: [(co * ckg) as u64, ckg as u64],
        };
        gemm::<T>(
            OP,
            dims(chunks, chunk),
            gy.ptr_at(a),
            col.ptr_at(b),
            c_at(0),
        )?;
        if rest > 0 {
            let done = chunks * chunk;
            gemm::<T>(
                OP,
                dims(1, rest),
                gy.ptr_at(a + done),
                col.ptr_at(b + done),
                c_at(chunks),
            )?;
        }
    }
    if parts == 1 {
        return Ok(partial);
    }
    let mut reduced = [false; MAX_RANK];
    reduced[0] = true;
    let parts_view = view(&[parts, co * ckg], &[co * ckg, 1], 0);
    fresh(OP, co * ckg, |d| {
        <Cuda as crate::ops::ReduceKernels>::reduce(
            crate::ops::Sum,
            (&partial, &parts_view),
            &reduced,
            d,
        )
    })
}

// SAFETY: every kernel writes each output element on the GPU, and device memory is never read as host values
// without a copy.
unsafe impl ConvKernels for Cuda {
    fn conv2d<T: FloatDType>(
        (x, lx): (&CudaStorage<T>, &Layout),
        (w, lw): (&CudaStorage<T>, &Layout),
        p: Conv2dParams,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        // im2col into a dense [N, C * KH * KW, OH * OW] buffer, then one batched product per group.
        let [n, c, h, wd] = lx.dims4();
        let [co, cig, kh, kw] = lw.dims4();
        let [oh, ow] = p.output_hw([h, wd], [kh, kw]).unwrap_or([0, 0]);
        let (g, cog, l) = (p.groups, co / p.groups, oh * ow);
        let kc = cig * kh * kw;
        dest("conv2d", out, n * co * l)?;
        if n * co * l == 0 {
            return Ok(());
        }
        let col = im2col("conv2d", (x, lx), [co, kh, kw], [oh, ow], &p)?;
        // The weight as [C_out, cig * KH * KW] rows: in place when its last three axes flatten.
        let sw = lw.strides();
        let dense_w;
        let (w_buf, w_row, w_col, w_base) = if sw[1] == kh * kw * sw[3] && sw[2] == kw * sw[3] {
            (w, sw[0], sw[3], lw.offset())
        } else {
            dense_w = fresh("conv2d", lw.numel(), |d| Self::copy((w, lw), d))?;
            (&dense_w, kc, 1, 0)
        };
        for grp in 0..g {
            let dims = GemmDims {
                batch: n as u64,
                m: cog as u64,
                n: l as u64,
                k: kc as u64,
                a: [0, w_row as u64, w_col as u64],
                b: [(c * kh * kw * l) as u64, l as u64, 1],
                c: [(co * l) as u64, l as u64],
            };
            gemm::<T>(
                "conv2d",
                dims,
                w_buf.ptr_at(w_base + grp * cog * w_row),
                col.ptr_at(grp * kc * l),
                out.ptr_at(grp * cog * l),
            )?;
        }
        Ok(())
    }

    fn conv_transpose2d<T: FloatDType>(
        (x, lx): (&CudaStorage<T>, &Layout),
        (w, lw): (&CudaStorage<T>, &Layout),
        p: Conv2dParams,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        let [n, c, h, wd] = lx.dims4();
        let [_, cog, kh, kw] = lw.dims4();
        let [oh, ow] = p.transposed_output_hw([h, wd], [kh, kw]);
        let co = cog * p.groups;
        let total = n * co * oh * ow;
        let out_ptr = dest("conv_transpose2d", out, total)?;
        let args = alloc::vec![
            Arg::U64(total as u64),
            Arg::Geom(conv_geom([n, c, h, wd], [co, kh, kw], [oh, ow], &p)),
            Arg::Layout(KernelLayout::new(lx)),
            Arg::Layout(KernelLayout::new(lw)),
            Arg::U64(x.ptr_at(lx.offset())),
            Arg::U64(w.ptr_at(lw.offset())),
            Arg::U64(out_ptr),
        ];
        let sig = KernelSig::conv_transpose2d(T::DTYPE);
        launch("conv_transpose2d", sig, total, args)
    }

    fn conv2d_weight_grad<T: FloatDType>(
        (x, lx): (&CudaStorage<T>, &Layout),
        (gy, lgy): (&CudaStorage<T>, &Layout),
        kernel: [usize; 2],
        p: Conv2dParams,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        const OP: &str = "conv2d_weight_grad";
        if T::DTYPE == DType::F16 || T::DTYPE == DType::BF16 {
            // As on the CPU: inputs widened once, products summed in f32, one rounding at the end.
            let dense = |l: &Layout| Layout::contiguous(*l.dims());
            let widen = |(s, l): (&CudaStorage<T>, &Layout)| {
                fresh::<f32>(OP, l.numel(), |d| Self::cast((s, l), d))
            };
            let (wx, wg) = (widen((x, lx))?, widen((gy, lgy))?);
            let grad = weight_grad(&wx, &dense(lx), &wg, &dense(lgy), kernel, p)?;
            let flat = Layout::from_parts(Dims::from_slice(&[grad.len()]), &[1], 0);
            Self::cast((&grad, &flat), out)?;
        } else {
            let grad = weight_grad(x, lx, gy, lgy, kernel, p)?;
            let flat = Layout::from_parts(Dims::from_slice(&[grad.len()]), &[1], 0);
            Self::copy((&grad, &flat), out)?;
        }
        Ok(())
    }

    fn unfold<T: FloatDType>(
        (x, lx): (&CudaStorage<T>, &Layout),
        [kh, kw]: [usize; 2],
        p: Conv2dParams,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        const OP: &str = "unfold";
        let [n, c, h, w] = lx.dims4();
        let [oh, ow] = p.output_hw([h, w], [kh, kw]).unwrap_or([0, 0]);
        let total = n * c * kh * kw * oh * ow;
        let out_ptr = dest(OP, out, total)?;
        // The convolution's own im2col writes exactly the columns' layout.
        let args = alloc::vec![
            Arg::U64(total as u64),
            Arg::Geom(conv_geom([n, c, h, w], [c, kh, kw], [oh, ow], &p)),
            Arg::Layout(KernelLayout::new(lx)),
            Arg::U64(x.ptr_at(lx.offset())),
            Arg::U64(out_ptr),
        ];
        launch(OP, KernelSig::im2col(T::DTYPE), total, args)
    }

    fn fold<T: FloatDType>(
        (cols, lc): (&CudaStorage<T>, &Layout),
        [kh, kw]: [usize; 2],
        [h, w]: [usize; 2],
        p: Conv2dParams,
        out: &mut CudaStorage<T>,
    ) -> Result<()> {
        const OP: &str = "fold";
        let [n, ck, oh, ow] = lc.dims4();
        let c = ck / (kh * kw).max(1);
        let total = n * c * h * w;
        let out_ptr = dest(OP, out, total)?;
        let args = alloc::vec![
            Arg::U64(total as u64),
            Arg::Geom(conv_geom([n, c, h, w], [c, kh, kw], [oh, ow], &p)),
            Arg::Layout(KernelLayout::new(lc)),
            Arg::U64(cols.ptr_at(lc.offset())),
            Arg::U64(out_ptr),
        ];
        launch(OP, KernelSig::fold(T::DTYPE), total, args)
    }
}

/// The family's kernel signatures, which launches are checked against (and `tests/cuda_ptx.rs` checks against the
/// compiled PTX).
impl KernelSig {
    /// `im2col_{T}(n, geom, lx, x, col)`.
    pub fn im2col(t: DType) -> Self {
        Self::new(
            "conv",
            "im2col",
            t,
            &[COUNT, GEOM_BYTES, LAYOUT_BYTES, PTR, PTR],
        )
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
}

/// The family's kernels of element type `t`, for the catalog (`ops::cuda_catalog`).
pub(crate) fn signatures(t: DType, all: &mut Vec<KernelSig>) {
    if t.is_float() {
        all.push(KernelSig::im2col(t));
        all.push(KernelSig::fold(t));
        all.push(KernelSig::conv_transpose2d(t));
    }
}
