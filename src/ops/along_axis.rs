//! Ops that transform each lane along one axis as a whole: softmax, log-softmax, layer norm, RMS norm.
//!
//! Each lane is read once into an accumulator-precision scratch row (f32 for f16/bf16/f32, f64 for f64), so the
//! max-shift, the sums and the output come from one pass over memory; the math is in [`AlongAxis::apply_row`],
//! shared by every device that runs it on the host.

use crate::dtype::Accumulator;

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
    pub fn apply_row<A: Accumulator>(self, row: &mut [A]) {
        if row.is_empty() {
            return;
        }
        let n = A::from_usize(row.len());
        match self {
            AlongAxis::Softmax | AlongAxis::LogSoftmax => {
                // Max-shifted, so exp never overflows; a NaN anywhere makes the lane NaN, an all -inf lane gives
                // NaN (0/0) like PyTorch.
                let max = row.iter().fold(A::LOWEST, |m, &x| {
                    if m.is_nan() || x.is_nan() || x > m {
                        if m.is_nan() {
                            m
                        } else {
                            x
                        }
                    } else {
                        m
                    }
                });
                let shift = if max == A::HIGHEST || max == A::LOWEST {
                    A::ZERO
                } else {
                    max
                };
                if self == AlongAxis::Softmax {
                    let mut sum = A::ZERO;
                    for x in row.iter_mut() {
                        *x = x.sub(shift).exp();
                        sum = sum.add(*x);
                    }
                    let inv = A::ONE.div(sum);
                    for x in row.iter_mut() {
                        *x = x.mul(inv);
                    }
                } else {
                    let sum = row.iter().fold(A::ZERO, |s, &x| s.add(x.sub(shift).exp()));
                    let log_sum = shift.add(sum.ln());
                    for x in row.iter_mut() {
                        *x = x.sub(log_sum);
                    }
                }
            }
            AlongAxis::LayerNorm { eps } => {
                let mean = row.iter().fold(A::ZERO, |s, &x| s.add(x)).div(n);
                let var = row
                    .iter()
                    .fold(A::ZERO, |s, &x| {
                        let d = x.sub(mean);
                        s.add(d.mul(d))
                    })
                    .div(n);
                let inv = A::ONE.div(var.add(A::from_f64(eps)).sqrt());
                for x in row.iter_mut() {
                    *x = x.sub(mean).mul(inv);
                }
            }
            AlongAxis::RmsNorm { eps } => {
                let ms = row.iter().fold(A::ZERO, |s, &x| s.add(x.mul(x))).div(n);
                let inv = A::ONE.div(ms.add(A::from_f64(eps)).sqrt());
                for x in row.iter_mut() {
                    *x = x.mul(inv);
                }
            }
        }
    }
}
