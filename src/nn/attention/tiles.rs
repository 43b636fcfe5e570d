//! The fused attention kernels on the CPU, f32: scaled dot-product attention a tile of the `(L, S)` scores at a
//! time with the online softmax (FlashAttention's forward), and its gradient recomputing each tile from the
//! saved log-sum-exp (FlashAttention-2's backward), so memory grows with `L·E`, never `L·S`. The tile products
//! are the library's gemm (`matmul_into`, one thread each); the `(batch, head)` pairs run side by side, each in
//! [`simd`]'s clone for the CPU's vector unit, so the tiles' elementwise passes vectorise.
//!
//! A query that may see no key (causal with a negative reach does not occur; every query sees key 0) gets zeros,
//! as the composed path gives.

use crate::device::host::elementwise::{simd, DenseLoop};
use crate::dtype::fast_math::exp_f32;
use crate::layout::Layout;
use crate::ops::matmul::cpu::{matmul_add_into, matmul_into, Threads};
use crate::shape::Dims;
use alloc::vec;
use alloc::vec::Vec;
use rayon::prelude::*;

/// Query rows per tile.
const BR: usize = 64;
/// Key columns per tile, at most (the products stop at the last key a row tile sees): 256 measured fastest of
/// 64 to 512 (benches/README.md).
const BC: usize = 256;

/// The sizes of one call: queries `(B, H, L, E)`, keys `(B, HK, S, E)`, values `(B, HK, S, EV)`, dense and
/// row-major; `H` a multiple of `HK`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sizes {
    pub b: usize,
    pub h: usize,
    pub hk: usize,
    pub l: usize,
    pub s: usize,
    pub e: usize,
    pub ev: usize,
    /// Multiplies the scores.
    pub scale: f32,
    /// Causal masking: query `i` sees keys `0..=offset + i`.
    pub causal: Option<usize>,
}

impl Sizes {
    /// The keys query `row` may see, `0..reach` (all of them when not causal).
    fn reach(&self, row: usize) -> usize {
        match self.causal {
            Some(offset) => offset.saturating_add(row).saturating_add(1).min(self.s),
            None => self.s,
        }
    }
}

/// An additive mask over the `(B, H, L, S)` scores: its f32 elements and the strides of its view broadcast to
/// that shape (0 along the axes it is constant on).
pub(super) struct Added<'a> {
    pub values: &'a [f32],
    pub strides: [usize; 4],
    pub offset: usize,
}

impl Added<'_> {
    /// The index of the mask's entry for batch `b`, head `h`, query `r`, key `c`.
    #[inline(always)]
    fn at(&self, b: usize, h: usize, r: usize, c: usize) -> usize {
        let [sb, sh, sl, ss] = self.strides;
        self.offset + b * sb + h * sh + r * sl + c * ss
    }
}

/// `[1, rows, width]` rows of a dense row-major matrix of `width` columns starting at element `at`.
fn rows(at: usize, rows: usize, width: usize) -> Layout {
    Layout::from_parts(Dims::from_slice(&[1, rows, width]), &[0, width, 1], at)
}

/// `[1, width, rows]`: the transpose of [`rows`].
fn rows_t(at: usize, rows: usize, width: usize) -> Layout {
    Layout::from_parts(Dims::from_slice(&[1, width, rows]), &[0, 1, width], at)
}

/// `a x b` into `out` (overwritten), one thread.
fn product(a: (&[f32], &Layout), b: (&[f32], &Layout), out: &mut [f32]) {
    matmul_into(a.0, a.1, b.0, b.1, out, Threads::One);
}

/// `out += a x b`, one thread.
fn add_product(a: (&[f32], &Layout), b: (&[f32], &Layout), out: &mut [f32]) {
    matmul_add_into(a.0, a.1, b.0, b.1, out);
}

/// The forward pass: `out` `(B, H, L, EV)` and the rows' log-sum-exp `lse` `(B, H, L)` (`-inf` for a query that
/// saw no key).
pub(super) fn forward(
    z: &Sizes,
    (q, k, v): (&[f32], &[f32], &[f32]),
    mask: Option<&Added<'_>>,
    out: &mut [f32],
    lse: &mut [f32],
) {
    let per_head = (z.l * z.ev).max(1);
    out.par_chunks_mut(per_head)
        .zip(lse.par_chunks_mut(z.l.max(1)))
        .enumerate()
        .for_each(|(bh, (out, lse))| {
            simd(ForwardJob {
                z,
                qkv: (q, k, v),
                mask,
                bh,
                out,
                lse,
            })
        });
}

/// The forward pass of one `(batch, head)` pair, in [`simd`]'s clone for the CPU's vector unit (the tiles'
/// elementwise passes vectorise there; gemm picks its own).
struct ForwardJob<'a> {
    z: &'a Sizes,
    qkv: (&'a [f32], &'a [f32], &'a [f32]),
    mask: Option<&'a Added<'a>>,
    bh: usize,
    out: &'a mut [f32],
    lse: &'a mut [f32],
}

impl DenseLoop for ForwardJob<'_> {
    #[inline(always)]
    fn run(self) {
        let ForwardJob {
            z,
            qkv: (q, k, v),
            mask,
            bh,
            out,
            lse,
        } = self;
        let group = z.h / z.hk;
        let (b, h) = (bh / z.h, bh % z.h);
        let kv = b * z.hk + h / group;
        let mut scores = vec![0f32; BR * BC];
        for r0 in (0..z.l).step_by(BR) {
            let br = BR.min(z.l - r0);
            let (mut m, mut sum) = (vec![f32::NEG_INFINITY; br], vec![0f32; br]);
            let acc = &mut out[r0 * z.ev..(r0 + br) * z.ev];
            acc.fill(0.0);
            let last = z.reach(r0 + br - 1);
            for c0 in (0..last).step_by(BC) {
                let bc = BC.min(last - c0);
                let q_rows = rows(((bh * z.l) + r0) * z.e, br, z.e);
                let k_t = rows_t((kv * z.s + c0) * z.e, bc, z.e);
                product((q, &q_rows), (k, &k_t), &mut scores[..br * bc]);
                for i in 0..br {
                    let row = &mut scores[i * bc..(i + 1) * bc];
                    let seen = z.reach(r0 + i).saturating_sub(c0).min(bc);
                    let (kept, masked) = row.split_at_mut(seen);
                    match mask {
                        Some(m) => {
                            let at = m.at(b, h, r0 + i, c0);
                            for (j, x) in kept.iter_mut().enumerate() {
                                *x = *x * z.scale + m.values[at + j * m.strides[3]];
                            }
                        }
                        None => kept.iter_mut().for_each(|x| *x *= z.scale),
                    }
                    masked.fill(f32::NEG_INFINITY);
                    // A NaN score makes the row NaN, as the composed softmax does (`max` drops it).
                    let top = kept.iter().fold(m[i], |t, &x| t.max(x));
                    let top = if kept.iter().any(|x| x.is_nan()) {
                        f32::NAN
                    } else {
                        top
                    };
                    if top == f32::NEG_INFINITY {
                        row.fill(0.0); // nothing seen yet in this row
                        continue;
                    }
                    let rescale = exp_f32(m[i] - top); // 0 when m was -inf
                    row.iter_mut().for_each(|x| *x = exp_f32(*x - top));
                    let total: f32 = row.iter().sum();
                    sum[i] = sum[i] * rescale + total;
                    m[i] = top;
                    acc[i * z.ev..(i + 1) * z.ev]
                        .iter_mut()
                        .for_each(|a| *a *= rescale);
                }
                let p_rows = rows(0, br, bc);
                let v_rows = rows((kv * z.s + c0) * z.ev, bc, z.ev);
                add_product((&scores, &p_rows), (v, &v_rows), acc);
            }
            for i in 0..br {
                let row = &mut acc[i * z.ev..(i + 1) * z.ev];
                if sum[i] > 0.0 || sum[i].is_nan() {
                    let inv = 1.0 / sum[i];
                    row.iter_mut().for_each(|a| *a *= inv);
                    lse[r0 + i] = m[i] + sum[i].ln();
                } else {
                    row.fill(0.0);
                    lse[r0 + i] = f32::NEG_INFINITY;
                }
            }
        }
    }
}

/// The gradients into `(dq, dk, dv)` (zeros) from the output's `dout`, given the forward's `out` and `lse`. Each
/// job owns one key/value head of one batch entry: its keys' and values' gradients (summed over the query heads
/// it serves) and those query heads' gradients.
pub(super) fn backward(
    z: &Sizes,
    (q, k, v): (&[f32], &[f32], &[f32]),
    mask: Option<&Added<'_>>,
    (out, lse, dout): (&[f32], &[f32], &[f32]),
    (dq, dk, dv): (&mut [f32], &mut [f32], &mut [f32]),
) {
    let group = z.h / z.hk;
    // Each row's `dout · out`, the softmax gradient's correction.
    let delta: Vec<f32> = dout
        .chunks(z.ev.max(1))
        .zip(out.chunks(z.ev.max(1)))
        .map(|(g, o)| g.iter().zip(o).map(|(g, o)| g * o).sum())
        .take(z.b * z.h * z.l)
        .collect();
    dk.par_chunks_mut((z.s * z.e).max(1))
        .zip(dv.par_chunks_mut((z.s * z.ev).max(1)))
        .zip(dq.par_chunks_mut((group * z.l * z.e).max(1)))
        .enumerate()
        .for_each(|(kv, ((dk, dv), dq))| {
            simd(BackwardJob {
                z,
                qkv: (q, k, v),
                mask,
                saved: (lse, dout, &delta),
                kv,
                grads: (dq, dk, dv),
            })
        });
}

/// The gradient of one key/value head of one batch entry, in [`simd`]'s clone for the CPU's vector unit.
struct BackwardJob<'a> {
    z: &'a Sizes,
    qkv: (&'a [f32], &'a [f32], &'a [f32]),
    mask: Option<&'a Added<'a>>,
    /// The rows' log-sum-exp, the output's gradient, the rows' `dout · out`.
    saved: (&'a [f32], &'a [f32], &'a [f32]),
    kv: usize,
    /// This head's queries' gradients (all the query heads it serves), its keys' and values'.
    grads: (&'a mut [f32], &'a mut [f32], &'a mut [f32]),
}

impl DenseLoop for BackwardJob<'_> {
    #[inline(always)]
    fn run(self) {
        let BackwardJob {
            z,
            qkv: (q, k, v),
            mask,
            saved: (lse, dout, delta),
            kv,
            grads: (dq, dk, dv),
        } = self;
        let group = z.h / z.hk;
        let b = kv / z.hk;
        let mut p = vec![0f32; BR * BC];
        let mut dp = vec![0f32; BR * BC];
        for g in 0..group {
            let bh = b * z.h + (kv % z.hk) * group + g;
            let dq = &mut dq[g * z.l * z.e..(g + 1) * z.l * z.e];
            for c0 in (0..z.s).step_by(BC) {
                for r0 in (0..z.l).step_by(BR) {
                    let br = BR.min(z.l - r0);
                    let last = z.reach(r0 + br - 1);
                    if last <= c0 {
                        continue; // every query of the tile is before every key of it
                    }
                    // The tile's keys up to the last one its queries see.
                    let bc = BC.min(last - c0);
                    // P = exp(scale q k^T - lse), zero where masked.
                    let q_rows = rows((bh * z.l + r0) * z.e, br, z.e);
                    product(
                        (q, &q_rows),
                        (k, &rows_t((kv * z.s + c0) * z.e, bc, z.e)),
                        &mut p[..br * bc],
                    );
                    for i in 0..br {
                        let seen = z.reach(r0 + i).saturating_sub(c0).min(bc);
                        let l = lse[bh * z.l + r0 + i];
                        let row = &mut p[i * bc..(i + 1) * bc];
                        if l == f32::NEG_INFINITY {
                            row.fill(0.0); // a query that saw no key
                            continue;
                        }
                        let (kept, masked) = row.split_at_mut(seen);
                        match mask {
                            Some(m) => {
                                let at = m.at(b, bh % z.h, r0 + i, c0);
                                for (j, x) in kept.iter_mut().enumerate() {
                                    let added = m.values[at + j * m.strides[3]];
                                    *x = exp_f32(*x * z.scale + added - l);
                                }
                            }
                            None => kept.iter_mut().for_each(|x| *x = exp_f32(*x * z.scale - l)),
                        }
                        masked.fill(0.0);
                    }
                    let do_rows = rows((bh * z.l + r0) * z.ev, br, z.ev);
                    // dV += P^T dO.
                    let dv = &mut dv[c0 * z.ev..(c0 + bc) * z.ev];
                    add_product((&p, &rows_t(0, br, bc)), (dout, &do_rows), dv);
                    // dP = dO V^T, then dS = P (dP - delta), scaled.
                    let v_t = rows_t((kv * z.s + c0) * z.ev, bc, z.ev);
                    product((dout, &do_rows), (v, &v_t), &mut dp[..br * bc]);
                    for i in 0..br {
                        let d = delta[bh * z.l + r0 + i];
                        for j in 0..bc {
                            let x = i * bc + j;
                            dp[x] = p[x] * (dp[x] - d) * z.scale;
                        }
                    }
                    // dQ += dS K; dK += dS^T Q.
                    let k_rows = rows((kv * z.s + c0) * z.e, bc, z.e);
                    let dq = &mut dq[r0 * z.e..(r0 + br) * z.e];
                    add_product((&dp, &rows(0, br, bc)), (k, &k_rows), dq);
                    let dk = &mut dk[c0 * z.e..(c0 + bc) * z.e];
                    add_product((&dp, &rows_t(0, br, bc)), (q, &q_rows), dk);
                }
            }
        }
    }
}
