//! The tiny path: tiny static tensors in host memory skip the kernels, decided in one place ([`run`]).
//!
//! A kernel call costs a layout per operand, a walk over runtime dims and a dispatch to the CPU's widest vector
//! clone: tens of nanoseconds, where adding two 4x4 matrices takes two. When the shape is static and its elements
//! fit in [`INLINE_BYTES`] (a scalar, a 4-vector, a 4x4 f32 matrix), dense operands in host memory instead go
//! through a loop of constant length that the compiler unrolls into the caller, using the op's own `apply`, as
//! the CPU kernels do, so the results are the same bits.
//!
//! Each entry form of an op with a tiny path describes one call as an [`OpCall`] (its operands and arguments)
//! with both ways of computing it, and hands it to [`run`], which alone chooses between them. The families'
//! calls sit beside their entry forms: unary and binary ops, ops with a scalar operand (`x * 2.0`), comparisons
//! and `where_cond` (ops/elementwise/tensor.rs), their in-place and `_into` forms (`a += &b`, `a *= 0.5`,
//! `unary_assign`, `add_into`; ops/elementwise/in_place.rs), reductions over every element (a scalar loss costs
//! no heap buffer) and over some axes (the kernel's walk with its accumulators on the stack; ops/reduce/tensor.rs),
//! softmax and the norms along an axis (each lane in a stack buffer; ops/along_axis/tensor.rs) and the unrolled
//! product of small static matrices (ops/matmul/tensor.rs, which admits up to 16 x 16 operands by its own
//! constant). Other devices, views that are not dense and larger or runtime-sized shapes take the kernels.

use super::Tensor;
use crate::device::INLINE_BYTES;
use crate::dtype::WithDType;
use crate::ops::Device;
use crate::shape::{static_numel, BroadcastShapes, Shape, MAX_RANK};

/// One call of an op that has a tiny path: its operands and arguments, and the two ways of computing it. Only
/// [`run`] chooses between them.
pub(crate) trait OpCall: Sized {
    /// The element type of the tensor that sizes the tiny path (the larger operand's, or the result's).
    type T: WithDType;
    /// The shape of that tensor.
    type S: Shape;
    /// The call's result.
    type Output;
    /// Whether a call of these types can take the tiny path: by default, when `S` is static and that many `T`
    /// fit in [`INLINE_BYTES`] ([`tiny_numel`]). A constant, tested by [`run`] as an `if` condition, so for every
    /// other type rustc drops the branch after monomorphisation and never generates the tiny path's code (a
    /// `const { .. }?` inside the path did not: the 49-layer MLP of tools/compile-bench instantiated the unary
    /// tiny path 199 times for shapes that are never tiny).
    const MAYBE_TINY: bool = tiny_numel::<Self::T, Self::S>().is_some();

    /// The op on tiny dense operands in host memory, a loop of constant length inlined into the caller; `None`
    /// when an operand is not dense or not in host memory (the call then takes [`Self::kernel`]).
    fn tiny(&mut self) -> Option<Self::Output>;

    /// The op through the device's kernels. Its work is out of line (`#[inline(never)]` here, or in the
    /// shape-free body it calls), so that the tiny path stays a few instructions in the caller. A fallible call
    /// keeps only the unwrap of the out-of-line result inline ([`OnError`]): a tiny path that joins the kernel
    /// path after that unwrap keeps its result in registers (in a loop, a 4x4 add: 3.8 ns against 9.5 with the
    /// unwrap out of line; a 4x4 matmul: 7.1 against 8.7).
    fn kernel(self) -> Self::Output;
}

/// Computes `call`: through its tiny path when its types admit one and its operands are dense in host memory,
/// through the device's kernels otherwise.
#[inline(always)]
#[track_caller]
pub(crate) fn run<C: OpCall>(mut call: C) -> C::Output {
    if C::MAYBE_TINY
        && let Some(out) = call.tiny()
    {
        return out;
    }
    call.kernel()
}

/// How a fallible call reports an error: returned ([`Checked`], the `try_` forms) or as a panic at the caller's
/// line ([`Panics`]). The kernel path applies it, so a tiny path, which cannot fail, returns its value as it is
/// rather than through a `Result` and an unwrap in the caller.
pub(crate) trait OnError: Copy {
    /// What the call returns for a result of type `X`.
    type Out<X>;
    /// A value computed without error.
    fn ok<X>(self, value: X) -> Self::Out<X>;
    /// A result of the kernel path, its error returned or raised as a panic.
    fn report<X>(self, result: crate::error::Result<X>) -> Self::Out<X>;
}

/// Errors are returned: the `try_` forms.
#[derive(Clone, Copy)]
pub(crate) struct Checked;

impl OnError for Checked {
    type Out<X> = crate::error::Result<X>;
    #[inline(always)]
    fn ok<X>(self, value: X) -> Self::Out<X> {
        Ok(value)
    }
    #[inline(always)]
    fn report<X>(self, result: crate::error::Result<X>) -> Self::Out<X> {
        result
    }
}

/// Errors panic with their message at the caller's line: the infallible forms.
#[derive(Clone, Copy)]
pub(crate) struct Panics;

impl OnError for Panics {
    type Out<X> = X;
    #[inline(always)]
    fn ok<X>(self, value: X) -> X {
        value
    }
    #[inline(always)]
    #[track_caller]
    fn report<X>(self, result: crate::error::Result<X>) -> X {
        super::device_ok(result)
    }
}

/// The element count of `S` when every dim is static and that many `T` fit in [`INLINE_BYTES`].
pub(crate) const fn tiny_numel<T, S: Shape>() -> Option<usize> {
    match static_numel(S::STATIC_DIMS) {
        Some(n) if n * core::mem::size_of::<T>() <= INLINE_BYTES => Some(n),
        _ => None,
    }
}

/// Whether `A` and `B` are the same fully static shape (so nothing is broadcast between them).
pub(crate) const fn same_static_dims<A: Shape, B: Shape>() -> bool {
    if A::RANK != B::RANK {
        return false;
    }
    let mut i = 0;
    while i < MAX_RANK {
        match (A::STATIC_DIMS[i], B::STATIC_DIMS[i]) {
            (Some(a), Some(b)) if a == b => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

/// The operand access every tiny path shares.
impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// The elements of a dense view, in order, when the device's memory is the host's.
    #[inline(always)]
    pub(crate) fn host_dense(&self) -> Option<&[T]> {
        let range = self.contiguous_range()?;
        D::host_slice(self.buffer())?.get(range)
    }

    /// A fresh tensor of `shape` (`n` zeros) and its elements to write, on the host (`None` off the host). The
    /// caller writes the result into the assembled tensor: that measured faster than assembling the tensor
    /// around a filled buffer (a 4x4 matmul: 15 against 22 ns), and a fill closure handed in here was not
    /// always inlined (39 ns).
    #[inline(always)]
    pub(crate) fn host_output(shape: S, n: usize) -> Option<Self> {
        Some(Tensor::from_storage(shape, D::host_zeros(n)?))
    }

    /// The elements of a tensor made by [`Self::host_output`], to write.
    #[inline(always)]
    pub(crate) fn host_elements_mut(&mut self) -> Option<&mut [T]> {
        D::host_slice_mut(&mut self.storage)
    }

    /// The elements of a tiny tensor, `n` of them: dense, in host memory.
    #[inline(always)]
    pub(crate) fn tiny_elements(&self) -> Option<&[T]> {
        let n = const { tiny_numel::<T, S>() }?;
        self.host_dense()?.get(..n)
    }

    /// The elements of a tiny tensor to write in place: dense from its start, in host memory no other tensor
    /// shares (an inline buffer never is).
    #[inline(always)]
    pub(crate) fn tiny_elements_mut(&mut self) -> Option<&mut [T]> {
        let n = const { tiny_numel::<T, S>() }?;
        if !self.is_dense_from_start() {
            return None;
        }
        self.host_elements_mut()?.get_mut(..n)
    }

    /// Tiny dense host operands of one static shape: both operands' elements and the output's shape.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    pub(crate) fn tiny_pair<'a, S2: Shape>(
        &'a self,
        rhs: &'a Tensor<T, S2, D>,
    ) -> Option<(&'a [T], &'a [T], <S as BroadcastShapes<S2>>::Output)>
    where
        S: BroadcastShapes<S2>,
    {
        if !const { same_static_dims::<S, S2>() } {
            return None;
        }
        let (a, b) = (self.tiny_elements()?, rhs.tiny_elements()?);
        let shape = <S as BroadcastShapes<S2>>::Output::from_dims(&self.dims())?;
        Some((a, b, shape))
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;
    use crate::device::Cpu;
    use crate::shape::{Const, Rank0, Rank1, Rank2};

    /// A call that records which path [`run`] took.
    struct Probe<'a, S: Shape>(&'a Tensor<f32, S, Cpu>);
    impl<S: Shape> OpCall for Probe<'_, S> {
        type T = f32;
        type S = S;
        type Output = &'static str;
        fn tiny(&mut self) -> Option<&'static str> {
            // Any dense host operand, so that the gate alone keeps larger types out.
            self.0.host_dense().map(|_| "tiny")
        }
        fn kernel(self) -> &'static str {
            "kernel"
        }
    }

    #[test]
    fn the_gate_admits_static_shapes_that_fit_inline_and_nothing_else() {
        // Checked when the test builds. 16 f32 = 64 bytes: tiny; one element more, a wider dtype or a runtime
        // dim: the kernels.
        const { assert!(tiny_numel::<f32, Rank2<4, 4>>().is_some()) };
        const { assert!(tiny_numel::<f32, Rank0>().is_some()) };
        const { assert!(tiny_numel::<u8, Rank1<64>>().is_some()) };
        const { assert!(tiny_numel::<f32, Rank1<17>>().is_none()) };
        const { assert!(tiny_numel::<f64, Rank2<4, 4>>().is_none()) };
        const { assert!(tiny_numel::<f32, (usize, Const<4>)>().is_none()) };
        const { assert!(tiny_numel::<f32, Rank2<8, 16>>().is_none()) };
        const { assert!(same_static_dims::<Rank2<2, 3>, Rank2<2, 3>>()) };
        const { assert!(!same_static_dims::<Rank2<2, 3>, Rank1<3>>()) };
        const { assert!(!same_static_dims::<(usize, Const<3>), (usize, Const<3>)>()) };
    }

    #[test]
    fn run_takes_the_tiny_path_for_dense_tiny_operands_only() {
        let x = Tensor::<f32, Rank2<4, 4>, Cpu>::ones();
        assert_eq!(run(Probe(&x)), "tiny");
        // A strided view of a tiny type: the kernels.
        assert_eq!(run(Probe(&x.t())), "kernel");
        // A static type too large to be tiny: the kernels, without asking.
        let big = Tensor::<f32, Rank2<8, 8>, Cpu>::ones();
        assert_eq!(run(Probe(&big)), "kernel");
    }
}
