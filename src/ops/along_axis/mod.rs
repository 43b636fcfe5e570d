//! Ops that transform each lane along one axis as a whole: softmax, log-softmax, layer norm, RMS norm. The whole
//! family lives here: the op descriptor and its lane arithmetic (this file), the `Tensor` methods (`tensor.rs`), the `Traced` methods with their backward rules (`traced.rs`),
//! the device trait [`AlongAxisKernels`] and its implementations (`cpu.rs`, `host.rs` for `Embedded`, `cuda.rs`
//! launching `src/ops/along_axis/along_axis.cu`).
//!
//! The lane arithmetic is written once, [`AlongAxis::apply`], for every host device: over a [`Lane`], which the
//! CPU makes an accumulator-precision scratch row (f32 for f16/bf16/f32, f64 for f64: the lane is read from memory
//! once) and `Embedded` a strided view of its input and output (no scratch, so softmax computes each
//! exponential twice); the results are the same bits. CUDA runs the same formulas (`src/ops/along_axis/along_axis.cu`), with a
//! block's threads sharing each sum.

#[cfg(feature = "alloc")]
mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
mod host;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;

use crate::device::Kernels;
use crate::dtype::{Accumulator, FloatDType};
use crate::error::Result;
use crate::layout::Layout;
use core::ops::Range;

/// The family's kernel, which every device implements (`Cpu` in `cpu.rs`, `Embedded` in `host.rs`, `Cuda` in
/// `cuda.rs`); [`crate::ops::Device`] requires it beside [`Kernels`].
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

/// `step` folded over `get(start), .., get(end - 1)` in `LANES` interleaved chains, joined with `combine` (sums: a
/// different rounding order from a left-to-right loop, as every SIMD library has; max: exact): the one fold order
/// of every lane ([`Lane::fold`]).
#[inline(always)]
fn lanes_fold_by<A: Accumulator>(
    range: Range<usize>,
    get: impl Fn(usize) -> A,
    init: A,
    step: impl Fn(A, A) -> A,
    combine: impl Fn(A, A) -> A,
) -> A {
    let mut lanes = [init; LANES];
    let full = range.start + range.len() / LANES * LANES;
    for c in (range.start..full).step_by(LANES) {
        for (j, lane) in lanes.iter_mut().enumerate() {
            *lane = step(*lane, get(c + j));
        }
    }
    let mut acc = (full..range.end).fold(init, |a, i| step(a, get(i)));
    for &lane in &lanes {
        acc = combine(acc, lane);
    }
    acc
}

/// [`lanes_fold_by`] over a row of values: the same chains joined in the same order, so the same result, with a
/// loop the compiler vectorises (no index arithmetic to bounds-check).
#[inline(always)]
fn lanes_fold_row<A: Accumulator>(
    xs: &[A],
    f: impl Fn(A) -> A,
    init: A,
    step: impl Fn(A, A) -> A,
    combine: impl Fn(A, A) -> A,
) -> A {
    let mut lanes = [init; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for j in 0..LANES {
            lanes[j] = step(lanes[j], f(c[j]));
        }
    }
    let mut acc = tail.iter().fold(init, |a, &x| step(a, f(x)));
    for &lane in &lanes {
        acc = combine(acc, lane);
    }
    acc
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

    /// Transforms one lane, in accumulator precision: the one lane algorithm of every host device (the CPU's
    /// scratch rows, `Embedded`'s strided lanes, the tiny path's stack rows), so they give the same bits. An empty
    /// lane is left as is.
    #[inline(always)]
    pub fn apply<A: Accumulator, L: Lane<A> + ?Sized>(self, lane: &mut L) {
        if lane.is_empty() {
            return;
        }
        let n = lane.len();
        let count = A::from_usize(n);
        match self {
            AlongAxis::Softmax | AlongAxis::LogSoftmax => {
                // Max-shifted, so exp never overflows; a NaN anywhere makes the lane NaN, an all -inf lane gives
                // NaN (0/0) like PyTorch.
                let max = lane.fold(0..n, |x| x, A::LOWEST, max_step, max_step);
                let shift = if max == A::HIGHEST || max == A::LOWEST {
                    A::ZERO
                } else {
                    max
                };
                if self == AlongAxis::Softmax {
                    // A lane that can hold its results stores each exponential once (separate passes: exp, sum,
                    // scale, so each loop vectorises); one that cannot computes it again for the output.
                    if L::HOLDS_RESULTS {
                        lane.map(|x| x.sub(shift).exp());
                        let inv = A::ONE.div(lane.fold(0..n, |e| e, A::ZERO, A::add, A::add));
                        lane.map(|e| e.mul(inv));
                    } else {
                        let exp = |x: A| x.sub(shift).exp();
                        let inv = A::ONE.div(lane.fold(0..n, exp, A::ZERO, A::add, A::add));
                        lane.map(|x| exp(x).mul(inv));
                    }
                } else {
                    let mut total = A::ZERO;
                    for start in (0..n).step_by(LOG_SOFTMAX_BLOCK) {
                        let block = start..start + LOG_SOFTMAX_BLOCK.min(n - start);
                        total = total.add(lane.fold(
                            block,
                            |x| x.sub(shift).exp(),
                            A::ZERO,
                            A::add,
                            A::add,
                        ));
                    }
                    let log_sum = shift.add(total.ln());
                    lane.map(|x| x.sub(log_sum));
                }
            }
            AlongAxis::LayerNorm { eps } => {
                // Moments of x - x[0] (CUDA uses the same formula): better conditioned when |mean| >> spread, and
                // a constant lane gives exact zeros (its deviations are exactly 0, whatever the summation order).
                let pivot = lane.get(0);
                let mean = lane
                    .fold(0..n, |x| x.sub(pivot), A::ZERO, A::add, A::add)
                    .div(count);
                let centred = |x: A| x.sub(pivot).sub(mean);
                let var = lane
                    .fold(0..n, centred, A::ZERO, |s, d| s.add(d.mul(d)), A::add)
                    .div(count);
                let inv = A::ONE.div(var.add(A::from_f64(eps)).sqrt());
                lane.map(|x| centred(x).mul(inv));
            }
            AlongAxis::RmsNorm { eps } => {
                let ms = lane
                    .fold(0..n, |x| x, A::ZERO, |s, x| s.add(x.mul(x)), A::add)
                    .div(count);
                let inv = A::ONE.div(ms.add(A::from_f64(eps)).sqrt());
                lane.map(|x| x.mul(inv));
            }
        }
    }
}

/// One lane of an [`AlongAxis`] op, in accumulator precision: `len()` inputs, read with `get` (or `fold`) as often
/// as the op needs, and as many results, each given to `set` once (through `map`), after the last read of that
/// element's input.
pub trait Lane<A: Accumulator> {
    /// Whether `get(i)` returns the result after `set(i, ..)` (a row of accumulators that the results overwrite):
    /// softmax then stores each exponential instead of computing it twice.
    const HOLDS_RESULTS: bool;
    /// The lane's length.
    fn len(&self) -> usize;
    /// Whether the lane is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Element `i`: the input, or with [`Self::HOLDS_RESULTS`] the result once `set(i, ..)` has run.
    fn get(&self, i: usize) -> A;
    /// Result `i`.
    fn set(&mut self, i: usize, y: A);
    /// `step` folded over `f` of the elements in `range`, in the one fold order of every lane (sixteen
    /// interleaved chains joined with `combine`). The default reads through [`Self::get`].
    #[inline(always)]
    fn fold(
        &self,
        range: Range<usize>,
        f: impl Fn(A) -> A,
        init: A,
        step: impl Fn(A, A) -> A,
        combine: impl Fn(A, A) -> A,
    ) -> A {
        lanes_fold_by(range, |i| f(self.get(i)), init, step, combine)
    }
    /// `set(i, f(get(i)))` for every element, in order: the lane's last read of each input and its one write.
    #[inline(always)]
    fn map(&mut self, f: impl Fn(A) -> A) {
        for i in 0..self.len() {
            let y = f(self.get(i));
            self.set(i, y);
        }
    }
}

/// A row of accumulators, transformed in place (the CPU's scratch rows, the tiny path's stack rows).
impl<A: Accumulator> Lane<A> for [A] {
    const HOLDS_RESULTS: bool = true;
    #[inline(always)]
    fn len(&self) -> usize {
        <[A]>::len(self)
    }
    #[inline(always)]
    fn get(&self, i: usize) -> A {
        self[i]
    }
    #[inline(always)]
    fn set(&mut self, i: usize, y: A) {
        self[i] = y;
    }
    #[inline(always)]
    fn fold(
        &self,
        range: Range<usize>,
        f: impl Fn(A) -> A,
        init: A,
        step: impl Fn(A, A) -> A,
        combine: impl Fn(A, A) -> A,
    ) -> A {
        lanes_fold_row(&self[range], f, init, step, combine)
    }
}
