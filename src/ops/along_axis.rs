//! Ops that transform each lane along one axis as a whole: softmax, log-softmax, layer norm, RMS norm.
//!
//! Each lane is read once into an accumulator-precision scratch row (f32 for f16/bf16/f32, f64 for f64), so the
//! max-shift, the sums and the output come from one pass over memory; the math is in [`AlongAxis::apply_row`],
//! shared by every device that runs it on the host.

use crate::dtype::Accumulator;

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
    /// The op's name, for errors.
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
                    for block in row.chunks(LANES * 16) {
                        let mut exps = [A::ZERO; LANES * 16];
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
}
