//! The fused recurrence's loops on the CPU: one layer in one direction over every step, each step one matmul
//! (`h W_hh^T`) and one pass of the cell's equations over `(B, H)`, without a graph node per op; and its
//! gradient, each step one pass of the cell's derivatives and one matmul (`dgates W_hh`), the weights' gradient
//! one matmul over every step at the end (`dgates^T h_prev`, `(G·H, L·B) x (L·B, H)`), as cuDNN does. Generic over
//! the float types; f32 steps are what the benches measure.
//!
//! Buffers are time-major, `(L, B, ..)`, except the input gates and their gradient, which are the layer's
//! `(B, L, G, H)`. The equations and their order of operations are [`CellType`]'s composed step's, so the two
//! paths agree to rounding.

use crate::device::cpu::pool;
use crate::device::host::elementwise::{simd, DenseLoop};
use crate::dtype::FloatDType;
use crate::layout::Layout;
use crate::nn::recurrent::CellType;
use crate::ops::matmul::cpu::{matmul_into, Threads, PARALLEL_MACS};
use crate::shape::Dims;
use alloc::vec;
use alloc::vec::Vec;
use rayon::prelude::*;

/// The sizes of one recurrence.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sizes {
    pub b: usize,
    pub l: usize,
    pub h: usize,
    pub cell: CellType,
    /// Backwards in time (the second direction).
    pub reverse: bool,
}

impl Sizes {
    /// The gates' rows, `G·H`.
    fn gh(&self) -> usize {
        self.cell.gates() * self.h
    }

    /// The time of processing step `k`.
    fn time(&self, k: usize) -> usize {
        if self.reverse {
            self.l - 1 - k
        } else {
            k
        }
    }
}

/// What the forward pass keeps for the gradient, time-major.
pub(super) struct Tape<T> {
    /// `(L, B, G, H)`: the gates after their nonlinearities (LSTM σi σf tanh g σo; GRU r z n; RNN h').
    acts: Vec<T>,
    /// `(L, B, H)`: the state each step started from.
    h_prev: Vec<T>,
    /// `(L, B, H)`: LSTM: the cell state each step started from; GRU: `W_hn h + b_hn`; RNN: unused.
    extra: Vec<T>,
}

/// The inputs of one recurrence, host slices.
pub(super) struct Inputs<'a, T> {
    /// `(B, L, G, H)`: `x W_ih^T` of every step.
    pub gates: &'a [T],
    /// `(G·H, H)`.
    pub w_hh: &'a [T],
    /// `(G·H)` each, or none.
    pub b_ih: Option<&'a [T]>,
    pub b_hh: Option<&'a [T]>,
    /// `(B, H)` each.
    pub h0: &'a [T],
    pub c0: &'a [T],
    /// `(B)`: each sample's length, or every sample the whole sequence.
    pub lengths: Option<&'a [u32]>,
}

/// Whether sample `b` is padding at time `t`.
fn padded(lengths: Option<&[u32]>, b: usize, t: usize) -> bool {
    lengths.is_some_and(|len| t >= len[b] as usize)
}

/// `[1, rows, cols]` dense row-major, or its transpose `[1, cols, rows]` when `t`.
fn matrix(rows: usize, cols: usize, t: bool) -> Layout {
    if t {
        Layout::from_parts(Dims::from_slice(&[1, cols, rows]), &[0, 1, cols], 0)
    } else {
        Layout::from_parts(Dims::from_slice(&[1, rows, cols]), &[0, cols, 1], 0)
    }
}

/// `σ'` from `σ`.
fn dsigmoid<T: FloatDType>(s: T) -> T {
    s.mul(T::ONE.sub(s))
}

/// `tanh'` from `tanh`.
fn dtanh<T: FloatDType>(y: T) -> T {
    T::ONE.sub(y.mul(y))
}

/// Samples per group: each step's samples run in groups side by side, each group its own product and cells, one
/// join per step (rather than one inside gemm and another for the cells). One group below a step of
/// [`PARALLEL_MACS`] or sixteen samples a thread.
fn group_rows(z: &Sizes) -> usize {
    let macs = z.b.saturating_mul(z.gh()).saturating_mul(z.h);
    let groups = if macs < PARALLEL_MACS {
        1
    } else {
        (z.b / 16).clamp(1, rayon::current_num_threads())
    };
    z.b.div_ceil(groups)
}

/// `job(group, parts)` for each group of `rows` samples: `parts` are the groups' pieces of `bufs`, piece `k` of
/// `widths[k]` elements per sample. One group runs on this thread; several side by side on rayon's.
fn each_group<T: Send, const N: usize>(
    rows: usize,
    mut bufs: [&mut [T]; N],
    widths: [usize; N],
    job: &(dyn Fn(usize, [&mut [T]; N]) + Sync),
) {
    let samples = bufs[0].len() / widths[0];
    if rows >= samples {
        return job(0, bufs);
    }
    let mut groups: Vec<[&mut [T]; N]> = Vec::with_capacity(samples.div_ceil(rows));
    while !bufs[0].is_empty() {
        let n = rows.min(bufs[0].len() / widths[0]);
        let mut k = 0;
        let split = bufs.each_mut().map(|buf| {
            let (piece, rest) = core::mem::take(buf).split_at_mut(n * widths[k]);
            *buf = rest;
            k += 1;
            piece
        });
        groups.push(split);
    }
    groups
        .into_par_iter()
        .enumerate()
        .for_each(|(g, parts)| job(g, parts));
}

/// `W^T` of a dense `(rows, cols)` matrix, dense: gemm reads a row-major right operand several times faster than
/// a transposed one at a step's size.
fn transposed<T: FloatDType>(w: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut t = vec![T::ZERO; rows * cols];
    for (r, w_row) in w.chunks_exact(cols).enumerate() {
        for (c, &v) in w_row.iter().enumerate() {
            t[c * rows + r] = v;
        }
    }
    t
}

/// Runs the recurrence into `out` (zeros, time-major `(L + 2, B, H)`): every step's `h` (zeros at padded steps),
/// the final `h` and the final `c` (`h` again for the kinds without a cell state); returns, when `keep`, what the
/// gradient needs.
pub(super) fn forward<T: FloatDType>(
    z: &Sizes,
    x: &Inputs<'_, T>,
    out: &mut [T],
    keep: bool,
) -> Option<Tape<T>> {
    let (b, l, h, gh) = (z.b, z.l, z.h, z.gh());
    let (mut state, mut cell) = (x.h0.to_vec(), x.c0.to_vec());
    let mut hidden = pool::filled(b * gh, T::ZERO);
    let w_t = transposed(x.w_hh, gh, h);
    // Without `keep` one step's worth, reused.
    let kept = if keep { l } else { 1 };
    let mut tape = Tape {
        acts: pool::filled(kept * b * gh, T::ZERO),
        h_prev: pool::filled(kept * b * h, T::ZERO),
        extra: pool::filled(kept * b * h, T::ZERO),
    };
    let rows = group_rows(z);
    for k in 0..l {
        let t = z.time(k);
        let slot = if keep { t } else { 0 };
        let bufs = [
            &mut state[..],
            &mut cell[..],
            &mut hidden[..],
            &mut out[t * b * h..(t + 1) * b * h],
            &mut tape.acts[slot * b * gh..(slot + 1) * b * gh],
            &mut tape.h_prev[slot * b * h..(slot + 1) * b * h],
            &mut tape.extra[slot * b * h..(slot + 1) * b * h],
        ];
        each_group(rows, bufs, [h, h, gh, h, gh, h, h], &|g, parts| {
            let [state, cell, hidden, out, acts, h_prev, extra] = parts;
            let n = state.len() / h;
            h_prev.copy_from_slice(state);
            matmul_into(
                state,
                &matrix(n, h, false),
                &w_t,
                &matrix(h, gh, false),
                hidden,
                Threads::One,
            );
            for i in 0..n {
                let (s, at, gates) = (g * rows + i, i * h..(i + 1) * h, i * gh..(i + 1) * gh);
                let hidden = &mut hidden[gates.clone()];
                if let Some(bias) = x.b_hh {
                    hidden
                        .iter_mut()
                        .zip(bias)
                        .for_each(|(v, &b)| *v = v.add(b));
                }
                match z.cell {
                    CellType::Lstm => extra[at.clone()].copy_from_slice(&cell[at.clone()]),
                    CellType::Gru => extra[at.clone()].copy_from_slice(&hidden[2 * h..3 * h]),
                    CellType::RnnTanh | CellType::RnnRelu => {}
                }
                if padded(x.lengths, s, t) {
                    continue; // the state holds; the output stays zero
                }
                simd(StepForward {
                    cell: z.cell,
                    h,
                    x: &x.gates[(s * l + t) * gh..(s * l + t + 1) * gh],
                    b_ih: x.b_ih,
                    hidden,
                    state: &mut state[at.clone()],
                    c: &mut cell[at.clone()],
                    out: &mut out[at],
                    acts: &mut acts[gates],
                });
            }
        });
    }
    let finals = &mut out[l * b * h..];
    finals[..b * h].copy_from_slice(&state);
    let c = if z.cell == CellType::Lstm {
        &cell
    } else {
        &state
    };
    finals[b * h..].copy_from_slice(c);
    pool::recycle(hidden);
    if keep {
        Some(tape)
    } else {
        tape.recycle();
        None
    }
}

impl<T: FloatDType> Tape<T> {
    /// Gives the buffers back to the Cpu's cache: the next pass of the same sizes reuses their pages.
    pub(super) fn recycle(self) {
        [self.acts, self.h_prev, self.extra]
            .into_iter()
            .for_each(pool::recycle);
    }
}

/// The gradients of one recurrence but the input products'.
pub(super) struct Grads<T> {
    /// `(G·H, H)`.
    pub w_hh: Vec<T>,
    /// `(G·H)` each.
    pub b_ih: Vec<T>,
    pub b_hh: Vec<T>,
    /// `(B, H)` each; `c0`'s is zeros but for the LSTM.
    pub h0: Vec<T>,
    pub c0: Vec<T>,
}

/// The gradient of [`forward`] from its output's, `dout` `(L + 2, B, H)`, with the weights `W_hh` and the lengths
/// it ran with: the input gates' into `dgates` (zeros, `(B, L, G, H)`), the others returned.
pub(super) fn backward<T: FloatDType>(
    z: &Sizes,
    (w_hh, lengths): (&[T], Option<&[u32]>),
    tape: &Tape<T>,
    dout: &[T],
    dgates: &mut [T],
) -> Grads<T> {
    let (b, l, h, gh) = (z.b, z.l, z.h, z.gh());
    // The gradients of the hidden products, time-major: one matmul with `h_prev` gives `W_hh`'s at the end.
    let mut dhidden = pool::filled(l * b * gh, T::ZERO);
    let mut dh = dout[l * b * h..(l + 1) * b * h].to_vec();
    let mut dc = if z.cell == CellType::Lstm {
        dout[(l + 1) * b * h..].to_vec()
    } else {
        vec![T::ZERO; b * h]
    };
    // What reaches the previous state other than through `W_hh` (the GRU's `z h` term).
    let mut direct = vec![T::ZERO; b * h];
    let mut dh_prev = vec![T::ZERO; b * h];
    let rows = group_rows(z);
    for k in (0..l).rev() {
        let t = z.time(k);
        let bufs = [
            &mut dh[..],
            &mut dc[..],
            &mut direct[..],
            &mut dh_prev[..],
            &mut *dgates,
            &mut dhidden[t * b * gh..(t + 1) * b * gh],
        ];
        each_group(rows, bufs, [h, h, h, h, l * gh, gh], &|g, parts| {
            let [dh, dc, direct, dh_prev, dgates, dhidden] = parts;
            let n = dh.len() / h;
            for i in 0..n {
                let (s, at, gates) = (g * rows + i, i * h..(i + 1) * h, i * gh..(i + 1) * gh);
                let row = t * b + s;
                direct[at.clone()].fill(T::ZERO);
                if padded(lengths, s, t) {
                    continue; // the state passed through: its gradient does too
                }
                simd(StepBackward {
                    cell: z.cell,
                    h,
                    acts: &tape.acts[row * gh..(row + 1) * gh],
                    h_prev: &tape.h_prev[row * h..(row + 1) * h],
                    extra: &tape.extra[row * h..(row + 1) * h],
                    dh: &dh[at.clone()],
                    dout: &dout[row * h..(row + 1) * h],
                    dc: &mut dc[at.clone()],
                    direct: &mut direct[at],
                    dgates: &mut dgates[(i * l + t) * gh..(i * l + t + 1) * gh],
                    dhidden: &mut dhidden[gates],
                });
            }
            matmul_into(
                dhidden,
                &matrix(n, gh, false),
                w_hh,
                &matrix(gh, h, false),
                dh_prev,
                Threads::One,
            );
            for i in 0..n {
                let at = i * h..(i + 1) * h;
                if padded(lengths, g * rows + i, t) {
                    dh_prev[at.clone()].copy_from_slice(&dh[at]);
                } else {
                    for j in at {
                        dh_prev[j] = dh_prev[j].add(direct[j]);
                    }
                }
            }
        });
        core::mem::swap(&mut dh, &mut dh_prev);
    }
    let mut w_hh = vec![T::ZERO; gh * h];
    matmul_into(
        &dhidden,
        &matrix(l * b, gh, true),
        &tape.h_prev,
        &matrix(l * b, h, false),
        &mut w_hh,
        Threads::IfLarge,
    );
    let b_hh = column_sums(&dhidden, gh);
    pool::recycle(dhidden);
    // The input products' gradient is the hidden products' but for the GRU's `n` rows.
    let b_ih = if z.cell == CellType::Gru {
        column_sums(dgates, gh)
    } else {
        b_hh.clone()
    };
    Grads {
        w_hh,
        b_ih,
        b_hh,
        h0: dh,
        c0: dc,
    }
}

/// The sums of the columns of `rows` (`width` wide), accumulated in f64: a bias's gradient over every step.
fn column_sums<T: FloatDType>(rows: &[T], width: usize) -> Vec<T> {
    let mut sums = vec![0f64; width];
    for row in rows.chunks_exact(width) {
        sums.iter_mut().zip(row).for_each(|(s, v)| *s += v.to_f64());
    }
    sums.into_iter().map(T::from_f64).collect()
}

/// One sample's step of the cell's equations over its `H` units: the gates' activations into `acts`, the new
/// state into `state` and `c`, the output into `out`. Passes over whole rows, so each compiles to vector code
/// ([`simd`]).
struct StepForward<'a, T> {
    cell: CellType,
    h: usize,
    /// `(G, H)`: the input's products, its bias (when there is one) and the state's pre-activations
    /// (`h W_hh^T + b_hh`).
    x: &'a [T],
    b_ih: Option<&'a [T]>,
    hidden: &'a [T],
    /// `(H)` each, updated.
    state: &'a mut [T],
    c: &'a mut [T],
    out: &'a mut [T],
    /// `(G, H)`.
    acts: &'a mut [T],
}

/// Gate `k`'s row of a `(G, H)` sample.
#[inline(always)]
fn row<T>(v: &[T], k: usize, h: usize) -> &[T] {
    &v[k * h..][..h]
}

/// The input's part of gate `k`, `x W_ih^T + b_ih`, unit `j`: the bias added first, as the composed path does.
#[inline(always)]
fn input_part<T: FloatDType>((x, bias): (&[T], Option<&[T]>), k: usize, h: usize, j: usize) -> T {
    let v = row(x, k, h)[j];
    match bias {
        Some(bias) => v.add(row(bias, k, h)[j]),
        None => v,
    }
}

/// Gate `k`'s pre-activation, the input's part plus the state's, through `f` into its row of `acts`.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn activate<T: FloatDType>(
    acts: &mut [T],
    (x, hg): ((&[T], Option<&[T]>), &[T]),
    (k, h): (usize, usize),
    f: impl Fn(T) -> T,
) {
    let (xk, hk, acts) = (row(x.0, k, h), row(hg, k, h), &mut acts[k * h..][..h]);
    // Two loops rather than a test per unit: each compiles to vector code.
    match x.1 {
        Some(bias) => {
            let bk = row(bias, k, h);
            for j in 0..h {
                acts[j] = f(xk[j].add(bk[j]).add(hk[j]));
            }
        }
        None => {
            for j in 0..h {
                acts[j] = f(xk[j].add(hk[j]));
            }
        }
    }
}

impl<T: FloatDType> DenseLoop for StepForward<'_, T> {
    #[inline(always)]
    fn run(self) {
        let (h, x, hg) = (self.h, (self.x, self.b_ih), self.hidden);
        let (state, c, out) = (&mut self.state[..h], &mut self.c[..h], &mut self.out[..h]);
        let acts = self.acts;
        match self.cell {
            CellType::Lstm => {
                activate(acts, (x, hg), (0, h), T::sigmoid);
                activate(acts, (x, hg), (1, h), T::sigmoid);
                activate(acts, (x, hg), (2, h), T::tanh);
                activate(acts, (x, hg), (3, h), T::sigmoid);
                let (i, f, g, o) = (
                    row(acts, 0, h),
                    row(acts, 1, h),
                    row(acts, 2, h),
                    row(acts, 3, h),
                );
                for j in 0..h {
                    let c2 = f[j].mul(c[j]).add(i[j].mul(g[j]));
                    let h2 = o[j].mul(c2.tanh());
                    (c[j], state[j], out[j]) = (c2, h2, h2);
                }
            }
            CellType::Gru => {
                activate(acts, (x, hg), (0, h), T::sigmoid);
                activate(acts, (x, hg), (1, h), T::sigmoid);
                let hn = row(hg, 2, h);
                let (rz, n) = acts.split_at_mut(2 * h);
                let (r, zz, n) = (&rz[..h], &rz[h..2 * h], &mut n[..h]);
                for j in 0..h {
                    n[j] = input_part(x, 2, h, j).add(r[j].mul(hn[j])).tanh();
                    // (1 - z) n + z h, as n + z (h - n).
                    let h2 = n[j].add(zz[j].mul(state[j].sub(n[j])));
                    (c[j], state[j], out[j]) = (h2, h2, h2);
                }
            }
            CellType::RnnTanh | CellType::RnnRelu => {
                if self.cell == CellType::RnnTanh {
                    activate(acts, (x, hg), (0, h), T::tanh);
                } else {
                    activate(acts, (x, hg), (0, h), |v: T| v.max_of(T::ZERO));
                }
                for (j, &h2) in acts[..h].iter().enumerate() {
                    (c[j], state[j], out[j]) = (h2, h2, h2);
                }
            }
        }
    }
}

/// One sample's step of the gradient over its `H` units: from the state's gradient `dh` plus the step output's
/// `dout`, and the cell state's `dc` (updated to the previous step's), the input gates' and hidden products'
/// pre-activation gradients and what reaches the previous state directly (`direct`, the GRU's `z`).
struct StepBackward<'a, T> {
    cell: CellType,
    h: usize,
    /// `(G, H)`, the forward pass's activations.
    acts: &'a [T],
    /// `(H)` each: the state the step started from; the LSTM's cell state then, or the GRU's `W_hn h + b_hn`.
    h_prev: &'a [T],
    extra: &'a [T],
    dh: &'a [T],
    dout: &'a [T],
    dc: &'a mut [T],
    direct: &'a mut [T],
    /// `(G, H)` each.
    dgates: &'a mut [T],
    dhidden: &'a mut [T],
}

impl<T: FloatDType> DenseLoop for StepBackward<'_, T> {
    #[inline(always)]
    fn run(self) {
        let h = self.h;
        let (acts, dh, dout) = (self.acts, &self.dh[..h], &self.dout[..h]);
        let (dc, direct) = (&mut self.dc[..h], &mut self.direct[..h]);
        let (dgx, dhh) = (self.dgates, self.dhidden);
        match self.cell {
            CellType::Lstm => {
                let (i, f, g, o) = (
                    row(acts, 0, h),
                    row(acts, 1, h),
                    row(acts, 2, h),
                    row(acts, 3, h),
                );
                let c_prev = &self.extra[..h];
                let (gi, rest) = dgx.split_at_mut(h);
                let (gf, rest) = rest.split_at_mut(h);
                let (gg, go) = rest.split_at_mut(h);
                let (gg, go) = (&mut gg[..h], &mut go[..h]);
                for j in 0..h {
                    let dht = dh[j].add(dout[j]);
                    let tc = f[j].mul(c_prev[j]).add(i[j].mul(g[j])).tanh();
                    let dc2 = dc[j].add(dht.mul(o[j]).mul(dtanh(tc)));
                    gi[j] = dc2.mul(g[j]).mul(dsigmoid(i[j]));
                    gf[j] = dc2.mul(c_prev[j]).mul(dsigmoid(f[j]));
                    gg[j] = dc2.mul(i[j]).mul(dtanh(g[j]));
                    go[j] = dht.mul(tc).mul(dsigmoid(o[j]));
                    dc[j] = dc2.mul(f[j]);
                }
                dhh.copy_from_slice(dgx);
            }
            CellType::Gru => {
                let (r, zz, n) = (row(acts, 0, h), row(acts, 1, h), row(acts, 2, h));
                let (hn, hp) = (&self.extra[..h], &self.h_prev[..h]);
                let (gr, rest) = dgx.split_at_mut(h);
                let (gz, gn) = rest.split_at_mut(h);
                let (gz, gn) = (&mut gz[..h], &mut gn[..h]);
                let hhn = &mut dhh[2 * h..3 * h];
                for j in 0..h {
                    let dht = dh[j].add(dout[j]);
                    let dn = dht.mul(T::ONE.sub(zz[j])).mul(dtanh(n[j]));
                    gr[j] = dn.mul(hn[j]).mul(dsigmoid(r[j]));
                    gz[j] = dht.mul(hp[j].sub(n[j])).mul(dsigmoid(zz[j]));
                    gn[j] = dn;
                    hhn[j] = dn.mul(r[j]);
                    direct[j] = dht.mul(zz[j]);
                }
                dhh[..2 * h].copy_from_slice(&dgx[..2 * h]);
            }
            CellType::RnnTanh | CellType::RnnRelu => {
                let (y, gx) = (&acts[..h], &mut dgx[..h]);
                let tanh = self.cell == CellType::RnnTanh;
                for j in 0..h {
                    let dht = dh[j].add(dout[j]);
                    gx[j] = if tanh {
                        dht.mul(dtanh(y[j]))
                    } else if y[j] > T::ZERO {
                        dht
                    } else {
                        T::ZERO
                    };
                }
                dhh.copy_from_slice(dgx);
            }
        }
    }
}
