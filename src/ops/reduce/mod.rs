//! Reductions as accumulator machines: `init`, `step` per element, `merge` of partial results (for blocked and
//! threaded loops), `finish` per output. Devices run them over any set of axes of a strided view.
//!
//! Accumulation happens in [`WithDType::Acc`]: f32 for f16/bf16/f32 (so summing 4096 f16 ones gives 4096), f64
//! for f64, wrapping i64 for integers.

#[cfg(feature = "alloc")]
mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
pub(crate) mod host;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;

use crate::device::Kernels;
use crate::dtype::{Accumulator, Bound, FloatDType, WithDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::shape::MAX_RANK;

/// The family's kernel, which every device implements (`Cpu` in `cpu.rs`, `Embedded` in `host.rs`, `Cuda` in
/// `cuda.rs`); [`crate::ops::Device`] requires it beside [`Kernels`].
///
/// # Safety
///
/// As for [`Kernels`]: `reduce` initialises its whole output whenever it returns `Ok` and never reads it.
pub unsafe trait ReduceKernels: Kernels {
    /// `op` over the axes marked in `reduced`; the output is the other axes, in order.
    fn reduce<T: WithDType, Op: ReduceOp<T>>(
        op: Op,
        src: (&Self::Buffer<T>, &Layout),
        reduced: &[bool; MAX_RANK],
        out: &mut Self::Out<Op::Out>,
    ) -> Result<()>;
}

/// A reduction of `T` elements to one `Out` value per output position.
pub trait ReduceOp<T: WithDType>: Copy + Send + Sync + 'static {
    /// Name, for errors and kernel names.
    const NAME: &'static str;
    /// True when `step` uses the element's index (argmax/argmin); such ops are always walked in index order.
    const USES_INDEX: bool = false;
    /// True when the op has no value over zero elements (max, min, argmax, argmin): reducing an empty axis is
    /// then an error (`Error::EmptyAxis`), not `init`'s value.
    const NEEDS_ELEMENTS: bool = false;
    /// The running state.
    type Acc: Copy + Send + Sync;
    /// The result type.
    type Out: WithDType;
    /// The state before any element.
    fn init(&self) -> Self::Acc;
    /// Folds in element `x`, the `index`-th of its output's reduced elements (row-major over the reduced axes).
    fn step(&self, acc: Self::Acc, x: T, index: usize) -> Self::Acc;
    /// Combines two partial states; `b` covers elements after `a`'s.
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// The result from the final state and the number of reduced elements.
    fn finish(&self, acc: Self::Acc, count: usize) -> Self::Out;
    /// The op's scalar parameter, for device kernels that receive it by value (`var`'s correction; 0 otherwise).
    fn param(&self) -> f64 {
        0.0
    }
    /// Folds a contiguous run (`xs[i]` has index `first + i`); ops override it with a vectorisable loop.
    #[inline]
    fn fold_slice(&self, acc: Self::Acc, xs: &[T], first: usize) -> Self::Acc {
        xs.iter()
            .enumerate()
            .fold(acc, |a, (i, &x)| self.step(a, x, first + i))
    }
}

/// Lanes of independent accumulators: the compiler keeps them in SIMD registers, and blocks of `BLOCK` elements
/// are combined separately before joining the running total, which keeps f32 sums accurate on long rows.
/// `combine` must be associative enough for the op (sums: to rounding; max/min: exactly, NaN included).
const LANES: usize = 16;
const BLOCK: usize = 4096;

#[inline(always)]
fn lane_fold<A: Accumulator, T: Copy>(
    xs: &[T],
    zero: A,
    f: impl Fn(T) -> A,
    combine: impl Fn(A, A) -> A,
) -> A {
    if xs.len() < LANES {
        // No full lane: the join below would combine `zero`s only, which gives `zero` for every op here (+0 for
        // sums, -inf / +inf for max / min), so this is the same value, bit for bit, without the 16-lane tree.
        let s = xs.iter().fold(zero, |s, &x| combine(s, f(x)));
        return combine(zero, combine(zero, s));
    }
    let mut total = zero;
    for block in xs.chunks(BLOCK) {
        let mut lanes = [zero; LANES];
        let chunks = block.chunks_exact(LANES);
        let tail = chunks.remainder();
        for c in chunks {
            for j in 0..LANES {
                lanes[j] = combine(lanes[j], f(c[j]));
            }
        }
        let mut s = zero;
        for &x in tail {
            s = combine(s, f(x));
        }
        // Pairwise join of the lanes.
        let mut width = LANES;
        while width > 1 {
            width /= 2;
            for j in 0..width {
                lanes[j] = combine(lanes[j], lanes[j + width]);
            }
        }
        total = combine(total, combine(lanes[0], s));
    }
    total
}

/// The kernel name stem and element-type bound of every reduction: CUDA instantiates `reduce_{stem}_{dtype}` and
/// `merge_{stem}_{dtype}` for the dtypes meeting the bound (`src/ops/reduce/reduce.cu`; `tests/cuda_ptx.rs` checks both ways).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) const REDUCE_STEMS: &[(&str, Bound)] = &[
    (<Sum as ReduceOp<f32>>::NAME, Bound::WithDType),
    (<Prod as ReduceOp<f32>>::NAME, Bound::WithDType),
    (<Max as ReduceOp<f32>>::NAME, Bound::WithDType),
    (<Min as ReduceOp<f32>>::NAME, Bound::WithDType),
    (<ArgMax as ReduceOp<f32>>::NAME, Bound::WithDType),
    (<ArgMin as ReduceOp<f32>>::NAME, Bound::WithDType),
    (<ArgMaxLast as ReduceOp<f32>>::NAME, Bound::WithDType),
    (<ArgMinLast as ReduceOp<f32>>::NAME, Bound::WithDType),
    (<Mean as ReduceOp<f32>>::NAME, Bound::FloatDType),
    (<Var as ReduceOp<f32>>::NAME, Bound::FloatDType),
    (<LogSumExp as ReduceOp<f32>>::NAME, Bound::FloatDType),
    (<Norm as ReduceOp<f32>>::NAME, Bound::FloatDType),
];

/// Sum.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sum;
impl<T: WithDType> ReduceOp<T> for Sum {
    const NAME: &'static str = "sum";
    type Acc = T::Acc;
    type Out = T;
    fn init(&self) -> T::Acc {
        T::Acc::ZERO
    }
    #[inline(always)]
    fn step(&self, acc: T::Acc, x: T, _: usize) -> T::Acc {
        acc.add(x.to_acc())
    }
    fn merge(&self, a: T::Acc, b: T::Acc) -> T::Acc {
        a.add(b)
    }
    fn finish(&self, acc: T::Acc, _: usize) -> T {
        T::from_acc(acc)
    }
    #[inline]
    fn fold_slice(&self, acc: T::Acc, xs: &[T], _: usize) -> T::Acc {
        acc.add(lane_fold(xs, T::Acc::ZERO, T::to_acc, T::Acc::add))
    }
}

/// Product.
#[derive(Clone, Copy, Debug, Default)]
pub struct Prod;
impl<T: WithDType> ReduceOp<T> for Prod {
    const NAME: &'static str = "prod";
    type Acc = T::Acc;
    type Out = T;
    fn init(&self) -> T::Acc {
        T::Acc::ONE
    }
    #[inline(always)]
    fn step(&self, acc: T::Acc, x: T, _: usize) -> T::Acc {
        acc.mul(x.to_acc())
    }
    fn merge(&self, a: T::Acc, b: T::Acc) -> T::Acc {
        a.mul(b)
    }
    fn finish(&self, acc: T::Acc, _: usize) -> T {
        T::from_acc(acc)
    }
}

/// `a` if it should win a max (greater, or NaN), with NaN sticking: the reductions' and the scans' rule.
#[inline(always)]
pub(crate) fn max_acc<A: Accumulator>(a: A, b: A) -> A {
    if a.is_nan() || (!b.is_nan() && a >= b) {
        a
    } else {
        b
    }
}
#[inline(always)]
pub(crate) fn min_acc<A: Accumulator>(a: A, b: A) -> A {
    if a.is_nan() || (!b.is_nan() && a <= b) {
        a
    } else {
        b
    }
}

/// Maximum; NaN propagates. An empty axis has none (the tensor ops refuse it; the kernel's state for no
/// elements is the lowest value, -inf for floats).
#[derive(Clone, Copy, Debug, Default)]
pub struct Max;
/// Minimum; NaN propagates. An empty axis has none (as for [`Max`]; the kernel's state is the highest value).
#[derive(Clone, Copy, Debug, Default)]
pub struct Min;

macro_rules! extreme_op {
    ($name:ident, $stem:literal, $init:ident, $pick:ident) => {
        impl<T: WithDType> ReduceOp<T> for $name {
            const NAME: &'static str = $stem;
            const NEEDS_ELEMENTS: bool = true;
            type Acc = T::Acc;
            type Out = T;
            fn init(&self) -> T::Acc {
                T::Acc::$init
            }
            #[inline(always)]
            fn step(&self, acc: T::Acc, x: T, _: usize) -> T::Acc {
                $pick(acc, x.to_acc())
            }
            fn merge(&self, a: T::Acc, b: T::Acc) -> T::Acc {
                $pick(a, b)
            }
            fn finish(&self, acc: T::Acc, _: usize) -> T {
                T::from_acc(acc)
            }
            #[inline]
            fn fold_slice(&self, acc: T::Acc, xs: &[T], _: usize) -> T::Acc {
                $pick(acc, lane_fold(xs, T::Acc::$init, T::to_acc, $pick))
            }
        }
    };
}
extreme_op!(Max, "max", LOWEST, max_acc);
extreme_op!(Min, "min", HIGHEST, min_acc);

/// Index of the maximum (the first one on ties, the first NaN if any), as `u32`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ArgMax;
/// Index of the minimum (the first one on ties, the first NaN if any), as `u32`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ArgMin;
/// Index of the maximum, the last one on ties (the last NaN if any), as `u32`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ArgMaxLast;
/// Index of the minimum, the last one on ties (the last NaN if any), as `u32`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ArgMinLast;

macro_rules! arg_op {
    ($name:ident, $stem:literal, $init:ident, $better:ident, last: $last:literal) => {
        impl<T: WithDType> ReduceOp<T> for $name {
            const NAME: &'static str = $stem;
            const USES_INDEX: bool = true;
            const NEEDS_ELEMENTS: bool = true;
            type Acc = (T::Acc, usize, bool);
            type Out = u32;
            fn init(&self) -> Self::Acc {
                (T::Acc::$init, 0, false)
            }
            #[inline(always)]
            fn step(&self, acc: Self::Acc, x: T, index: usize) -> Self::Acc {
                <Self as ReduceOp<T>>::merge(self, acc, (x.to_acc(), index, true))
            }
            fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc {
                // `b` comes later: it wins if strictly better, so ties keep the first index, or (the `_last` ops)
                // also on a tie. Plain `|` and `&` and a select per field, no branch on the data (which would
                // mispredict on random values).
                let take = !a.2 | $better(b.0, a.0) | ($last & tied(b.0, a.0));
                (
                    if take { b.0 } else { a.0 },
                    if take { b.1 } else { a.1 },
                    if take { b.2 } else { a.2 },
                )
            }
            fn finish(&self, acc: Self::Acc, _: usize) -> u32 {
                acc.1 as u32
            }
        }
    };
}
#[inline(always)]
fn greater<A: Accumulator>(b: A, a: A) -> bool {
    !a.is_nan() & (b.is_nan() | (b > a))
}
#[inline(always)]
fn less<A: Accumulator>(b: A, a: A) -> bool {
    !a.is_nan() & (b.is_nan() | (b < a))
}
/// Equal, or both NaN (a tie among NaNs, which count as the extreme).
#[inline(always)]
fn tied<A: Accumulator>(b: A, a: A) -> bool {
    (b == a) | (a.is_nan() & b.is_nan())
}
arg_op!(ArgMax, "argmax", LOWEST, greater, last: false);
arg_op!(ArgMin, "argmin", HIGHEST, less, last: false);
arg_op!(ArgMaxLast, "argmax_last", LOWEST, greater, last: true);
arg_op!(ArgMinLast, "argmin_last", HIGHEST, less, last: true);

/// Arithmetic mean.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mean;
/// A [`Sum`] divided by the count at the end.
impl<T: FloatDType> ReduceOp<T> for Mean {
    const NAME: &'static str = "mean";
    type Acc = T::Acc;
    type Out = T;
    fn init(&self) -> T::Acc {
        <Sum as ReduceOp<T>>::init(&Sum)
    }
    #[inline(always)]
    fn step(&self, acc: T::Acc, x: T, index: usize) -> T::Acc {
        Sum.step(acc, x, index)
    }
    fn merge(&self, a: T::Acc, b: T::Acc) -> T::Acc {
        <Sum as ReduceOp<T>>::merge(&Sum, a, b)
    }
    fn finish(&self, acc: T::Acc, count: usize) -> T {
        T::from_acc(acc.div(T::Acc::from_usize(count)))
    }
    #[inline]
    fn fold_slice(&self, acc: T::Acc, xs: &[T], first: usize) -> T::Acc {
        Sum.fold_slice(acc, xs, first)
    }
}

/// Variance with `correction` subtracted from the count (1: unbiased, 0: population), by Welford's update and
/// Chan's merge, so it is stable without a second pass.
#[derive(Clone, Copy, Debug)]
pub struct Var {
    /// Subtracted from the element count in the denominator.
    pub correction: usize,
}
impl<T: FloatDType> ReduceOp<T> for Var {
    const NAME: &'static str = "var";
    /// (count, mean, sum of squared deviations)
    type Acc = (usize, T::Acc, T::Acc);
    type Out = T;
    fn init(&self) -> Self::Acc {
        (0, T::Acc::ZERO, T::Acc::ZERO)
    }
    #[inline(always)]
    fn step(&self, (n, mean, m2): Self::Acc, x: T, _: usize) -> Self::Acc {
        let x = x.to_acc();
        let n = n + 1;
        let delta = x.sub(mean);
        let mean = mean.add(delta.div(T::Acc::from_usize(n)));
        (n, mean, m2.add(delta.mul(x.sub(mean))))
    }
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc {
        if a.0 == 0 {
            return b;
        }
        if b.0 == 0 {
            return a;
        }
        let n = a.0 + b.0;
        let (na, nb, nn) = (
            T::Acc::from_usize(a.0),
            T::Acc::from_usize(b.0),
            T::Acc::from_usize(n),
        );
        let delta = b.1.sub(a.1);
        let mean = a.1.add(delta.mul(nb).div(nn));
        let m2 = a.2.add(b.2).add(delta.mul(delta).mul(na).mul(nb).div(nn));
        (n, mean, m2)
    }
    fn param(&self) -> f64 {
        self.correction as f64
    }
    /// A contiguous run in blocks: each block's mean, then its squared deviations from it (two vectorisable
    /// passes over a block in cache, where Welford's update divides once per element in one dependent chain),
    /// merged into the running state by Chan's formula.
    #[inline]
    fn fold_slice(&self, mut acc: Self::Acc, xs: &[T], _: usize) -> Self::Acc {
        for block in xs.chunks(BLOCK) {
            let n = T::Acc::from_usize(block.len());
            let mean = lane_fold(block, T::Acc::ZERO, T::to_acc, T::Acc::add).div(n);
            let deviation = |x: T| {
                let d = x.to_acc().sub(mean);
                d.mul(d)
            };
            let m2 = lane_fold(block, T::Acc::ZERO, deviation, T::Acc::add);
            acc = <Self as ReduceOp<T>>::merge(self, acc, (block.len(), mean, m2));
        }
        acc
    }
    fn finish(&self, (n, _, m2): Self::Acc, _: usize) -> T {
        // n <= correction gives 0/0 = NaN (or inf), as in PyTorch.
        T::from_acc(m2.div(T::Acc::from_usize(n.saturating_sub(self.correction))))
    }
}

/// `ln(sum(exp(x)))`, computed online with a running maximum so it never overflows.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogSumExp;
impl<T: FloatDType> ReduceOp<T> for LogSumExp {
    const NAME: &'static str = "logsumexp";
    /// (running max, sum of exp(x - max))
    type Acc = (T::Acc, T::Acc);
    type Out = T;
    fn init(&self) -> Self::Acc {
        (T::Acc::LOWEST, T::Acc::ZERO)
    }
    #[inline(always)]
    fn step(&self, acc: Self::Acc, x: T, _: usize) -> Self::Acc {
        <Self as ReduceOp<T>>::merge(self, acc, (x.to_acc(), T::Acc::ONE))
    }
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc {
        log_sum_exp_merge(a, b)
    }
    fn finish(&self, acc: Self::Acc, _: usize) -> T {
        T::from_acc(log_sum_exp_finish(acc))
    }
}

/// Two log-sum-exp states `(max, sum of exp(x - max))` combined, `b` covering later elements (one element `x` is
/// `(x, 1)`): NaN sticks, an empty state (-inf max) adds nothing, and otherwise the smaller maximum's sum is
/// shifted by the larger. The reduction's merge and the scan's step.
#[inline(always)]
pub(crate) fn log_sum_exp_merge<A: Accumulator>((ma, sa): (A, A), (mb, sb): (A, A)) -> (A, A) {
    if ma.is_nan() || mb.is_nan() {
        return (A::ZERO.div(A::ZERO), A::ONE);
    }
    if mb == A::LOWEST {
        return (ma, sa);
    }
    if ma == A::LOWEST {
        return (mb, sb);
    }
    if ma == mb {
        // Also covers two +inf maxima, where exp(inf - inf) would be NaN.
        (ma, sa.add(sb))
    } else if mb > ma {
        (mb, sb.add(sa.mul(ma.sub(mb).exp())))
    } else {
        (ma, sa.add(sb.mul(mb.sub(ma).exp())))
    }
}

/// A log-sum-exp state's value: `max + ln(sum)`, or -inf for no elements.
#[inline(always)]
pub(crate) fn log_sum_exp_finish<A: Accumulator>((m, s): (A, A)) -> A {
    if m == A::LOWEST {
        m
    } else {
        m.add(s.ln())
    }
}

/// Euclidean (L2) norm: `sqrt(sum(x^2))`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Norm;
impl<T: FloatDType> ReduceOp<T> for Norm {
    const NAME: &'static str = "norm";
    type Acc = T::Acc;
    type Out = T;
    fn init(&self) -> T::Acc {
        T::Acc::ZERO
    }
    #[inline(always)]
    fn step(&self, acc: T::Acc, x: T, _: usize) -> T::Acc {
        let x = x.to_acc();
        acc.add(x.mul(x))
    }
    fn merge(&self, a: T::Acc, b: T::Acc) -> T::Acc {
        a.add(b)
    }
    fn finish(&self, acc: T::Acc, _: usize) -> T {
        T::from_acc(acc.sqrt())
    }
    #[inline]
    fn fold_slice(&self, acc: T::Acc, xs: &[T], _: usize) -> T::Acc {
        let square = |x: T| {
            let x = x.to_acc();
            x.mul(x)
        };
        acc.add(lane_fold(xs, T::Acc::ZERO, square, T::Acc::add))
    }
}
