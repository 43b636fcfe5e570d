//! Scans along one axis: cumulative sum, product, maximum, minimum and log-sum-exp (PyTorch's `cumsum`,
//! `cumprod`, `cummax`/`cummin` with their indices, `logcumsumexp`). The whole family lives here: the descriptor
//! and the lane arithmetic every host device runs (this file), the `Tensor` methods (`tensor.rs`), the `Traced`
//! methods with their backward rules (`traced.rs`), the device trait [`ScanKernels`] and its implementations
//! (`host.rs` for `Cpu` and `Embedded`, `cuda.rs` launching `src/ops/scan/scan.cu`).
//!
//! Every element of a lane depends on the ones before it, so a lane is walked in order, in the accumulator type
//! ([`WithDType::Acc`]: f32 for f16/bf16/f32, f64 for f64, wrapping i64 for integers); lanes run in parallel.
//! CUDA runs the same recurrences, a thread per lane, so the results are the host's to rounding (the same bits
//! for integers, maxima and minima).

#[cfg(feature = "cuda")]
pub(crate) mod cuda;
mod host;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;

use crate::device::Kernels;
use crate::dtype::{Accumulator, WithDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::reduce::{log_sum_exp_finish, log_sum_exp_merge, max_acc, min_acc};

/// The family's kernels, which every device implements (`Cpu` and `Embedded` in `host.rs`, `Cuda` in `cuda.rs`);
/// [`crate::ops::Device`] requires it beside [`Kernels`]. Each writes a dense output with the input view's dims.
///
/// # Safety
///
/// As for [`Kernels`]: each method initialises its whole output whenever it returns `Ok` and never reads it.
pub unsafe trait ScanKernels: Kernels {
    /// The scan `op` of every lane along `axis`, from the first element to the last or (`order.reverse`) from
    /// the last to the first, each element's own value included or (`order.exclusive`: sums, products and
    /// log-sum-exp; a running maximum or minimum is always inclusive) not.
    fn scan<T: WithDType>(
        op: Scan,
        src: (&Self::Buffer<T>, &Layout),
        axis: usize,
        order: Cumulative,
        out: &mut Self::Out<T>,
    ) -> Result<()>;

    /// The index along `axis` of each running maximum ([`Scan::Max`]) or minimum ([`Scan::Min`]) that
    /// [`ScanKernels::scan`] gives: ties go to the later element and a NaN wins from where it occurs (PyTorch's
    /// `cummax`/`cummin` indices).
    fn scan_index<T: WithDType>(
        op: Scan,
        src: (&Self::Buffer<T>, &Layout),
        axis: usize,
        out: &mut Self::Out<u32>,
    ) -> Result<()>;

    /// The gradient of `cumprod` along `axis` for input `x` and output gradient `g` (both with the output's
    /// dims): `dx_i = P_i R_i` with `P_i` the product of the elements before `i` and `R_i = g_i + x_{i+1}
    /// R_{i+1}`, which needs no division, so zeros in `x` get their exact gradient. For the `exclusive` cumprod
    /// (`y_i` the product before `i`) `g_{i+1}` stands for `g_i` (0 past the end): the same recurrence.
    fn cumprod_backward<T: WithDType>(
        x: (&Self::Buffer<T>, &Layout),
        g: (&Self::Buffer<T>, &Layout),
        axis: usize,
        exclusive: bool,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
}

/// Which elements each output of a cumulative op (`cumsum_with`, `cumprod_with`) takes: by default (PyTorch's
/// `cumsum`) element `i` and those before it; `reverse` takes those after it instead (`flip`, `cumsum`, `flip`
/// in one pass), `exclusive` leaves element `i` out (the first output is then 0 for a sum, 1 for a product), as
/// TensorFlow's `tf.math.cumsum(x, exclusive, reverse)`.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::ops::Cumulative;
/// let x = Tensor::<i32, Rank1<4>, Cpu>::from_array([1, 2, 3, 4]);
/// assert_eq!(x.cumsum_with::<Axis<0>>(Cumulative::REVERSE).to_array(), [10, 9, 7, 4]);
/// assert_eq!(x.cumsum_with::<Axis<0>>(Cumulative::EXCLUSIVE).to_array(), [0, 1, 3, 6]);
/// let both = Cumulative { reverse: true, exclusive: true };
/// assert_eq!(x.cumprod_with::<Axis<0>>(both).to_array(), [24, 12, 4, 1]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cumulative {
    /// From the last element to the first.
    pub reverse: bool,
    /// Each output leaves its own element out.
    pub exclusive: bool,
}

impl Cumulative {
    /// PyTorch's `cumsum`: element `i` and those before it.
    pub const INCLUSIVE: Self = Cumulative {
        reverse: false,
        exclusive: false,
    };
    /// Element `i` and those after it.
    pub const REVERSE: Self = Cumulative {
        reverse: true,
        exclusive: false,
    };
    /// The elements before `i`.
    pub const EXCLUSIVE: Self = Cumulative {
        reverse: false,
        exclusive: true,
    };

    /// The scan in the other direction, as exclusive as this one: what a cumulative sum's gradient runs.
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // its callers (autograd, nn) need std
    pub(crate) const fn opposite(self) -> Self {
        Cumulative {
            reverse: !self.reverse,
            exclusive: self.exclusive,
        }
    }

    /// The kernels' flags word: bit 0 `reverse`, bit 1 `exclusive`.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) const fn flags(self) -> u64 {
        self.reverse as u64 | (self.exclusive as u64) << 1
    }
}

/// The running operation of a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scan {
    /// Running sum (wrapping for integers, as [`crate::ops::Sum`]).
    Sum,
    /// Running product (wrapping for integers).
    Prod,
    /// Running maximum; NaN propagates.
    Max,
    /// Running minimum; NaN propagates.
    Min,
    /// Running `ln(sum(exp(x)))`, kept as a maximum and a sum of shifted exponentials, so it never overflows.
    LogSumExp,
}

impl Scan {
    /// Every scan: the CUDA catalog instantiates `scan_{name}` for the dtypes [`Scan::floats_only`] admits.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) const ALL: [Scan; 5] =
        [Scan::Sum, Scan::Prod, Scan::Max, Scan::Min, Scan::LogSumExp];

    /// The op's name, for errors and kernel names (PyTorch's).
    pub const fn name(self) -> &'static str {
        match self {
            Scan::Sum => "cumsum",
            Scan::Prod => "cumprod",
            Scan::Max => "cummax",
            Scan::Min => "cummin",
            Scan::LogSumExp => "logcumsumexp",
        }
    }

    /// True for the scans defined on floats only.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) const fn floats_only(self) -> bool {
        matches!(self, Scan::LogSumExp)
    }

    /// Runs the scan over `len` elements read by `get(i)`, handing each running result to `put(i, y)`, in the
    /// order `order(0), order(1), ..` (forwards or backwards), each result taken before its element joins when
    /// `exclusive`: the one lane recurrence of every host device.
    #[inline(always)]
    pub(crate) fn run<A: Accumulator>(
        self,
        len: usize,
        order: impl Fn(usize) -> usize,
        exclusive: bool,
        get: impl Fn(usize) -> A,
        put: impl FnMut(usize, A),
    ) {
        let same = |a: A| a;
        let lse = |state, x| log_sum_exp_merge(state, (x, A::ONE));
        let ex = exclusive;
        match self {
            Scan::Sum => fold_each(len, order, ex, get, put, A::ZERO, A::add, same),
            Scan::Prod => fold_each(len, order, ex, get, put, A::ONE, A::mul, same),
            // A running extreme is always inclusive (no public op asks otherwise; no start value to show).
            Scan::Max => fold_each(len, order, false, get, put, A::LOWEST, later_max, same),
            Scan::Min => fold_each(len, order, false, get, put, A::HIGHEST, later_min, same),
            // State (m, s): the running maximum and the sum of exp(x - m); the result is m + ln(s).
            Scan::LogSumExp => {
                let empty = (A::LOWEST, A::ZERO);
                fold_each(len, order, ex, get, put, empty, lse, log_sum_exp_finish)
            }
        }
    }

    /// Runs the scan over `n` rows of `width` independent lanes at once: `load(i, row)` fills row `i` (element
    /// `i` of every lane), `store(i, row)` takes its results. How the CPU walks lanes that are strided in memory
    /// but side by side (a scan along a leading axis): each row of memory is touched once, in a loop over dense
    /// rows that vectorises, instead of once per lane.
    #[cfg(feature = "alloc")]
    #[inline(always)]
    pub(crate) fn run_rows<A: Accumulator>(
        self,
        n: usize,
        width: usize,
        exclusive: bool,
        load: impl FnMut(usize, &mut [A]),
        store: impl FnMut(usize, &[A]),
    ) {
        let same = |a: A| a;
        let lse = |state, x| log_sum_exp_merge(state, (x, A::ONE));
        let ex = exclusive;
        match self {
            Scan::Sum => rows(n, width, ex, A::ZERO, load, store, A::add, same),
            Scan::Prod => rows(n, width, ex, A::ONE, load, store, A::mul, same),
            Scan::Max => rows(n, width, false, A::LOWEST, load, store, later_max, same),
            Scan::Min => rows(n, width, false, A::HIGHEST, load, store, later_min, same),
            Scan::LogSumExp => {
                let empty = (A::LOWEST, A::ZERO);
                rows(n, width, ex, empty, load, store, lse, log_sum_exp_finish)
            }
        }
    }

    /// The index of each running maximum or minimum (see [`ScanKernels::scan_index`]), in lane order.
    #[inline(always)]
    pub(crate) fn run_index<A: Accumulator>(
        self,
        len: usize,
        get: impl Fn(usize) -> A,
        mut put: impl FnMut(usize, u32),
    ) {
        let better = |x: A, best: A| match self {
            Scan::Min => x <= best,
            _ => x >= best,
        };
        let mut best = A::ZERO;
        let mut at = 0;
        for i in 0..len {
            let x = get(i);
            if i == 0 || x.is_nan() || (!best.is_nan() && better(x, best)) {
                best = x;
                at = i;
            }
            put(i, at as u32);
        }
    }
}

/// The running maximum's step: the later element wins a tie, as in PyTorch's `x >= max` (so at a `0.0`/`-0.0` tie
/// `cummax` gives the element its index names), and a NaN sticks.
#[inline(always)]
fn later_max<A: Accumulator>(acc: A, x: A) -> A {
    max_acc(x, acc)
}

/// The running minimum's step (see [`later_max`]).
#[inline(always)]
fn later_min<A: Accumulator>(acc: A, x: A) -> A {
    min_acc(x, acc)
}

/// Each running value of `step` from `init`, in `order`, read out by `value` after each element joins (or
/// before, when `exclusive`).
#[allow(clippy::too_many_arguments)] // one lane's recurrence, its parts named
#[inline(always)]
fn fold_each<A: Accumulator, St: Copy>(
    len: usize,
    order: impl Fn(usize) -> usize,
    exclusive: bool,
    get: impl Fn(usize) -> A,
    mut put: impl FnMut(usize, A),
    init: St,
    step: impl Fn(St, A) -> St,
    value: impl Fn(St) -> A,
) {
    let mut state = init;
    for k in 0..len {
        let i = order(k);
        let before = state;
        state = step(state, get(i));
        put(i, value(if exclusive { before } else { state }));
    }
}

/// [`Scan::run_rows`]'s loop for one op: every lane's state starts at `init`, then each row folds into it (its
/// output read before the row joins when `exclusive`).
#[cfg(feature = "alloc")]
#[allow(clippy::too_many_arguments)] // as `fold_each`
#[inline(always)]
fn rows<A: Accumulator, St: Copy>(
    n: usize,
    width: usize,
    exclusive: bool,
    init: St,
    mut load: impl FnMut(usize, &mut [A]),
    mut store: impl FnMut(usize, &[A]),
    step: impl Fn(St, A) -> St,
    value: impl Fn(St) -> A,
) {
    let mut state = alloc::vec![init; width];
    let (mut xs, mut ys) = (alloc::vec![A::ZERO; width], alloc::vec![A::ZERO; width]);
    for i in 0..n {
        load(i, &mut xs);
        for ((st, &x), y) in state.iter_mut().zip(&xs).zip(ys.iter_mut()) {
            let before = *st;
            *st = step(*st, x);
            *y = value(if exclusive { before } else { *st });
        }
        store(i, &ys);
    }
}
