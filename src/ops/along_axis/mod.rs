//! Ops that transform each lane along one axis as a whole: softmax, log-softmax, layer norm, RMS norm. The whole
//! family lives here: the op descriptor and its lane arithmetic (this file), the `Tensor` methods (`tensor.rs`), the `Traced` methods with their backward rules (`traced.rs`),
//! the device trait [`AlongAxisKernels`] and its implementations (`cpu.rs`, `host.rs` for `Embedded`, `cuda.rs`
//! launching `ptx/along_axis.cu`).
//!
//! Each lane is read once into an accumulator-precision scratch row (f32 for f16/bf16/f32, f64 for f64), so the
//! max-shift, the sums and the output come from one pass over memory; the math is in [`AlongAxis::apply_row`],
//! shared by every device that runs it on the host. A device without a heap for the scratch row runs
//! [`AlongAxis::apply_lane`] instead: the same arithmetic reading the lane as often as it needs, so the same
//! bits.

#[cfg(feature = "alloc")]
mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod host;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;

use crate::device::Kernels;
use crate::dtype::{Accumulator, FloatDType};
use crate::error::Result;
use crate::layout::Layout;

/// The family's kernel, which every device implements (`Cpu` in `cpu.rs`, `Embedded` in `host.rs`, `Cuda` in
/// `cuda.rs`); [`crate::device::Device`] requires it beside [`Kernels`].
///
/// # Safety
///
/// As for [`Kernels`]: `along_axis` initialises its whole output whenever it returns `Ok` and never reads it.
pub unsafe trait AlongAxisKernels: Kernels {
    /// `op` on every lane along `axis` (softmax, log-softmax, layer norm, RMS norm).
    fn along_axis<T: FloatDType>(
        op: AlongAxis,
        src: (&Self::Buffer<T>, &Layout),
        axis: usize,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
}

/// Independent accumulators per fold: the loop carries no single dependency chain, so it vectorises.
const LANES: usize = 16;

/// `step` folded over `xs` in `LANES` interleaved chains, joined with `combine` (sums: a different rounding
/// order from a left-to-right loop, as every SIMD library has; max: exact).
#[inline(always)]
fn lanes_fold<A: Accumulator>(
    xs: &[A],
    init: A,
    step: impl Fn(A, A) -> A,
    combine: impl Fn(A, A) -> A,
) -> A {
    let mut lanes = [init; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for j in 0..LANES {
            lanes[j] = step(lanes[j], c[j]);
        }
    }
    let mut acc = tail.iter().fold(init, |a, &x| step(a, x));
    for &lane in &lanes {
        acc = combine(acc, lane);
    }
    acc
}

/// [`lanes_fold`] over the virtual row `get(0), .., get(n - 1)`: the same chains joined in the same order, so
/// the same result.
#[inline(always)]
fn lanes_fold_by<A: Accumulator>(
    n: usize,
    get: impl Fn(usize) -> A,
    init: A,
    step: impl Fn(A, A) -> A,
    combine: impl Fn(A, A) -> A,
) -> A {
    let mut lanes = [init; LANES];
    let full = n / LANES * LANES;
    for c in (0..full).step_by(LANES) {
        for (j, lane) in lanes.iter_mut().enumerate() {
            *lane = step(*lane, get(c + j));
        }
    }
    let mut acc = (full..n).fold(init, |a, i| step(a, get(i)));
    for &lane in &lanes {
        acc = combine(acc, lane);
    }
    acc
}

/// The sum of `get(0), .., get(n - 1)` as [`lanes_fold`] adds a row.
#[inline(always)]
fn lane_sum<A: Accumulator>(n: usize, get: impl Fn(usize) -> A) -> A {
    lanes_fold_by(n, get, A::ZERO, A::add, A::add)
}

/// Elements per block of the log-softmax's sum of exponentials (each block is folded on its own, then added).
const LOG_SOFTMAX_BLOCK: usize = LANES * 16;

/// The NaN-propagating maximum step.
#[inline(always)]
fn max_step<A: Accumulator>(m: A, x: A) -> A {
    if x > m || (x.is_nan() && !m.is_nan()) {
        x
    } else {
        m
    }
}

/// The op applied to every lane along the chosen axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AlongAxis {
    /// `exp(x - max) / sum(exp(x - max))`.
    Softmax,
    /// `x - max - ln(sum(exp(x - max)))`.
    LogSoftmax,
    /// `(x - mean) / sqrt(var + eps)`, with the population variance.
    LayerNorm {
        /// Added to the variance.
        eps: f64,
    },
    /// `x / sqrt(mean(x^2) + eps)`.
    RmsNorm {
        /// Added to the mean square.
        eps: f64,
    },
}

impl AlongAxis {
    /// One of each op (the parameters are placeholders): the CUDA catalog instantiates each `name()` for the floats.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) const ALL: [AlongAxis; 4] = [
        AlongAxis::Softmax,
        AlongAxis::LogSoftmax,
        AlongAxis::LayerNorm { eps: 0.0 },
        AlongAxis::RmsNorm { eps: 0.0 },
    ];

    /// The op's name, for errors and kernel names.
    pub const fn name(self) -> &'static str {
        match self {
            AlongAxis::Softmax => "softmax",
            AlongAxis::LogSoftmax => "log_softmax",
            AlongAxis::LayerNorm { .. } => "layer_norm",
            AlongAxis::RmsNorm { .. } => "rms_norm",
        }
    }

    /// Transforms one lane in place, in accumulator precision. An empty lane is left as is.
    #[inline(always)]
    pub fn apply_row<A: Accumulator>(self, row: &mut [A]) {
        if row.is_empty() {
            return;
        }
        let n = A::from_usize(row.len());
        match self {
            AlongAxis::Softmax | AlongAxis::LogSoftmax => {
                // Max-shifted, so exp never overflows; a NaN anywhere makes the lane NaN, an all -inf lane gives
                // NaN (0/0) like PyTorch.
                let max = lanes_fold(row, A::LOWEST, max_step, max_step);
                let shift = if max == A::HIGHEST || max == A::LOWEST {
                    A::ZERO
                } else {
                    max
                };
                if self == AlongAxis::Softmax {
                    // Separate passes (exp, then sum, then scale) so each loop vectorises.
                    for x in row.iter_mut() {
                        *x = x.sub(shift).exp();
                    }
                    let inv = A::ONE.div(lanes_fold(row, A::ZERO, A::add, A::add));
                    for x in row.iter_mut() {
                        *x = x.mul(inv);
                    }
                } else {
                    let mut sum = A::ZERO;
                    for block in row.chunks(LOG_SOFTMAX_BLOCK) {
                        let mut exps = [A::ZERO; LOG_SOFTMAX_BLOCK];
                        for (e, &x) in exps.iter_mut().zip(block) {
                            *e = x.sub(shift).exp();
                        }
                        sum = sum.add(lanes_fold(&exps[..block.len()], A::ZERO, A::add, A::add));
                    }
                    let log_sum = shift.add(sum.ln());
                    for x in row.iter_mut() {
                        *x = x.sub(log_sum);
                    }
                }
            }
            AlongAxis::LayerNorm { eps } => {
                let mean = lanes_fold(row, A::ZERO, A::add, A::add).div(n);
                for x in row.iter_mut() {
                    *x = x.sub(mean);
                }
                let var = lanes_fold(row, A::ZERO, |s, d| s.add(d.mul(d)), A::add).div(n);
                let inv = A::ONE.div(var.add(A::from_f64(eps)).sqrt());
                for x in row.iter_mut() {
                    *x = x.mul(inv);
                }
            }
            AlongAxis::RmsNorm { eps } => {
                let ms = lanes_fold(row, A::ZERO, |s, x| s.add(x.mul(x)), A::add).div(n);
                let inv = A::ONE.div(ms.add(A::from_f64(eps)).sqrt());
                for x in row.iter_mut() {
                    *x = x.mul(inv);
                }
            }
        }
    }

    /// [`Self::apply_row`] without a scratch row, for a lane of `n` elements that `read(i)` returns (in
    /// accumulator precision) as often as needed: `write(i, y)` receives each result once, after every read of
    /// the lane. The arithmetic is `apply_row`'s, step for step, so the results are the same bits; softmax pays a
    /// second `exp` per element for it.
    #[inline(always)]
    pub fn apply_lane<A: Accumulator>(
        self,
        n: usize,
        read: impl Fn(usize) -> A,
        mut write: impl FnMut(usize, A),
    ) {
        if n == 0 {
            return;
        }
        let count = A::from_usize(n);
        match self {
            AlongAxis::Softmax | AlongAxis::LogSoftmax => {
                let max = lanes_fold_by(n, &read, A::LOWEST, max_step, max_step);
                let shift = if max == A::HIGHEST || max == A::LOWEST {
                    A::ZERO
                } else {
                    max
                };
                let exp = |i: usize| read(i).sub(shift).exp();
                if self == AlongAxis::Softmax {
                    let inv = A::ONE.div(lane_sum(n, exp));
                    for i in 0..n {
                        write(i, exp(i).mul(inv));
                    }
                } else {
                    let mut total = A::ZERO;
                    for start in (0..n).step_by(LOG_SOFTMAX_BLOCK) {
                        let len = LOG_SOFTMAX_BLOCK.min(n - start);
                        total = total.add(lane_sum(len, |j| exp(start + j)));
                    }
                    let log_sum = shift.add(total.ln());
                    for i in 0..n {
                        write(i, read(i).sub(log_sum));
                    }
                }
            }
            AlongAxis::LayerNorm { eps } => {
                let mean = lane_sum(n, &read).div(count);
                let centred = |i: usize| read(i).sub(mean);
                let var =
                    lanes_fold_by(n, centred, A::ZERO, |s, d| s.add(d.mul(d)), A::add).div(count);
                let inv = A::ONE.div(var.add(A::from_f64(eps)).sqrt());
                for i in 0..n {
                    write(i, centred(i).mul(inv));
                }
            }
            AlongAxis::RmsNorm { eps } => {
                let ms =
                    lanes_fold_by(n, &read, A::ZERO, |s, x| s.add(x.mul(x)), A::add).div(count);
                let inv = A::ONE.div(ms.add(A::from_f64(eps)).sqrt());
                for i in 0..n {
                    write(i, read(i).mul(inv));
                }
            }
        }
    }
}
