//! Tiny static tensors in host memory skip the kernels.
//!
//! A kernel call costs a layout per operand, a walk over runtime dims and a dispatch to the CPU's widest vector
//! clone: tens of nanoseconds, where adding two 4x4 matrices takes two. When the shape is static and its elements
//! fit in [`INLINE_BYTES`] (a scalar, a 4-vector, a 4x4 f32 matrix), dense operands in host memory instead go
//! through a loop of constant length that the compiler unrolls into the caller, using the op's own `apply`, as
//! the CPU kernels do, so the results are the same bits. That covers unary ops, binary ops of one static shape,
//! ops with a scalar operand (`x * 2.0`), comparisons of one static shape, `where_cond`, reductions over every
//! element (`sum_all`, `mean_all`, ...: a scalar loss costs no heap buffer), reductions over some axes (the
//! kernel's walk with its accumulators on the stack) and softmax and the norms along an axis (each lane in a
//! stack buffer), and the in-place and `_into` forms of the elementwise ops (`a += &b`, `a *= 0.5`,
//! `unary_assign`, `add_into`). Other devices, views that are not dense and larger or runtime-sized shapes take
//! the kernels.

use super::Tensor;
use crate::device::{Device, INLINE_BYTES};
use crate::dtype::{Accumulator, FloatDType, WithDType};
use crate::ops::{AlongAxis, BinaryOp, CmpOp, ReduceOp, UnaryOp};
use crate::shape::{static_numel, BroadcastShapes, Shape, MAX_RANK};

/// The element count of `S` when every dim is static and that many `T` fit in [`INLINE_BYTES`].
const fn tiny_numel<T, S: Shape>() -> Option<usize> {
    match static_numel(S::STATIC_DIMS) {
        Some(n) if n * core::mem::size_of::<T>() <= INLINE_BYTES => Some(n),
        _ => None,
    }
}

/// Whether `A` and `B` are the same fully static shape (so nothing is broadcast between them).
const fn same_static_dims<A: Shape, B: Shape>() -> bool {
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

/// The most outputs [`Tensor::reduce_axes_tiny`] holds accumulators for (a 4x4 f32 reduced over one axis has 4).
const TINY_REDUCE_OUTPUTS: usize = 16;

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Whether a tensor of this type can take a tiny path: its shape is static and its elements fit in
    /// [`INLINE_BYTES`]. Every tiny call site tests it first, as `if Self::MAYBE_TINY`: a constant condition, so
    /// for every other type rustc drops the branch after monomorphisation and never generates the tiny path's
    /// code (a `const { .. }?` inside the path did not: the 49-layer MLP of tools/compile-bench instantiated
    /// `unary_tiny` 199 times for shapes that are never tiny).
    pub(crate) const MAYBE_TINY: bool = tiny_numel::<T, S>().is_some();

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

    /// [`Self::unary`] on a tiny dense host tensor; `None` sends it to the kernel.
    #[inline(always)]
    pub(crate) fn unary_tiny<Op: UnaryOp<T>>(&self, op: Op) -> Option<Self> {
        let n = const { tiny_numel::<T, S>() }?;
        let a = &self.host_dense()?[..n];
        let mut out = Self::host_output(self.shape, n)?;
        for (o, &x) in out.host_elements_mut()?[..n].iter_mut().zip(a) {
            *o = op.apply(x);
        }
        Some(out)
    }

    /// Tiny dense host operands of one static shape (the element count, both operands' elements and the
    /// output's shape); `None` sends the op to the kernel.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn tiny_operands<'a, S2: Shape>(
        &'a self,
        rhs: &'a Tensor<T, S2, D>,
    ) -> Option<(usize, &'a [T], &'a [T], <S as BroadcastShapes<S2>>::Output)>
    where
        S: BroadcastShapes<S2>,
    {
        if !const { same_static_dims::<S, S2>() } {
            return None;
        }
        let n = const { tiny_numel::<T, S>() }?;
        let (a, b) = (&self.host_dense()?[..n], &rhs.host_dense()?[..n]);
        let shape = <S as BroadcastShapes<S2>>::Output::from_dims(&self.dims())?;
        Some((n, a, b, shape))
    }

    /// [`Self::binary`] on tiny dense host operands of one static shape; `None` sends it to the kernel.
    #[inline(always)]
    pub(crate) fn binary_tiny<S2: Shape, Op: BinaryOp<T>>(
        &self,
        op: Op,
        rhs: &Tensor<T, S2, D>,
    ) -> Option<Tensor<T, <S as BroadcastShapes<S2>>::Output, D>>
    where
        S: BroadcastShapes<S2>,
    {
        let (n, a, b, shape) = self.tiny_operands(rhs)?;
        let mut out = Tensor::host_output(shape, n)?;
        for ((o, &x), &y) in out.host_elements_mut()?[..n].iter_mut().zip(a).zip(b) {
            *o = op.apply(x, y);
        }
        Some(out)
    }

    /// `op(x, value)` for every element (`op(value, x)` when `scalar_first`) of a tiny dense host tensor; `None`
    /// sends it to the kernel, which reads the scalar from a one-element buffer.
    #[inline(always)]
    pub(crate) fn scalar_tiny<Op: BinaryOp<T>>(
        &self,
        op: Op,
        value: T,
        scalar_first: bool,
    ) -> Option<Self> {
        let n = const { tiny_numel::<T, S>() }?;
        let a = &self.host_dense()?[..n];
        let mut out = Self::host_output(self.shape, n)?;
        for (o, &x) in out.host_elements_mut()?[..n].iter_mut().zip(a) {
            *o = if scalar_first {
                op.apply(value, x)
            } else {
                op.apply(x, value)
            };
        }
        Some(out)
    }

    /// A comparison of tiny dense host operands of one static shape, as a `u8` mask; `None` sends it to the
    /// kernel.
    #[inline(always)]
    pub(crate) fn compare_tiny<S2: Shape>(
        &self,
        op: CmpOp,
        rhs: &Tensor<T, S2, D>,
    ) -> Option<Tensor<u8, <S as BroadcastShapes<S2>>::Output, D>>
    where
        S: BroadcastShapes<S2>,
    {
        let (n, a, b, shape) = self.tiny_operands(rhs)?;
        let mut out = Tensor::<u8, _, D>::host_output(shape, n)?;
        for ((o, &x), &y) in out.host_elements_mut()?[..n].iter_mut().zip(a).zip(b) {
            *o = op.apply(x, y) as u8;
        }
        Some(out)
    }

    /// [`ReduceOp`] over every element of a tiny dense host tensor; `None` sends it to the kernel. The kernel
    /// folds a dense view as one run from the op's initial state, as here, so the result has the same bits.
    #[inline(always)]
    pub(crate) fn reduce_all_tiny<Op: ReduceOp<T>>(
        &self,
        op: Op,
    ) -> Option<Tensor<Op::Out, (), D>> {
        let n = const { tiny_numel::<T, S>() }?;
        let a = &self.host_dense()?[..n];
        let mut out = Tensor::<Op::Out, (), D>::host_output((), 1)?;
        out.host_elements_mut()?[0] = op.finish(op.fold_slice(op.init(), a, 0), n);
        Some(out)
    }

    /// [`ReduceOp`] over the `reduced` axes of a tiny dense host tensor into `shape` (at most
    /// [`TINY_REDUCE_OUTPUTS`] elements); `None` sends it to the kernel. It runs the kernel's own walk, with the
    /// accumulators on the stack, so the result has the same bits.
    #[inline]
    pub(crate) fn reduce_axes_tiny<Op: ReduceOp<T>, Out: Shape>(
        &self,
        op: Op,
        reduced: &[bool; MAX_RANK],
        shape: Out,
    ) -> Option<Tensor<Op::Out, Out, D>> {
        let n = const { tiny_numel::<T, S>() }?;
        let a = &self.host_dense()?[..n];
        let m = shape.dims().iter().product();
        if m > TINY_REDUCE_OUTPUTS {
            return None;
        }
        let mut out = Tensor::<Op::Out, Out, D>::host_output(shape, m)?;
        crate::ops::reduce::host::reduce_small::<T, Op, TINY_REDUCE_OUTPUTS>(
            op,
            a,
            &self.dims(),
            reduced,
            &mut out.host_elements_mut()?[..m],
        );
        Some(out)
    }

    /// The elements of a tiny tensor to write in place: dense from its start, in host memory no other tensor
    /// shares (an inline buffer never is).
    #[inline(always)]
    fn tiny_elements_mut(&mut self) -> Option<&mut [T]> {
        let n = const { tiny_numel::<T, S>() }?;
        if !self.is_dense_from_start() {
            return None;
        }
        self.host_elements_mut()?.get_mut(..n)
    }

    /// [`Self::binary_assign`] on tiny dense host operands of one static shape; `false` sends it to the kernel.
    #[inline(always)]
    pub(crate) fn binary_assign_tiny<S2: Shape, Op: BinaryOp<T>>(
        &mut self,
        op: Op,
        rhs: &Tensor<T, S2, D>,
    ) -> bool {
        if !const { same_static_dims::<S, S2>() } {
            return false;
        }
        let Some(b) = rhs.host_dense() else {
            return false;
        };
        let Some(a) = self.tiny_elements_mut() else {
            return false;
        };
        for (x, &y) in a.iter_mut().zip(b) {
            *x = op.apply(*x, y);
        }
        true
    }

    /// [`Self::unary_assign`] on a tiny dense host tensor; `false` sends it to the kernel.
    #[inline(always)]
    pub(crate) fn unary_assign_tiny<Op: UnaryOp<T>>(&mut self, op: Op) -> bool {
        let Some(a) = self.tiny_elements_mut() else {
            return false;
        };
        for x in a {
            *x = op.apply(*x);
        }
        true
    }

    /// `self = op(self, value)` on a tiny dense host tensor; `false` sends it to the kernel.
    #[inline(always)]
    pub(crate) fn scalar_assign_tiny<Op: BinaryOp<T>>(&mut self, op: Op, value: T) -> bool {
        let Some(a) = self.tiny_elements_mut() else {
            return false;
        };
        for x in a {
            *x = op.apply(*x, value);
        }
        true
    }
}

impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Softmax or a norm along `axis` of a tiny dense host tensor; `None` sends it to the kernel. Each lane is
    /// widened into a stack buffer, transformed by [`AlongAxis::apply`] and rounded, as the kernel does, so
    /// the result has the same bits.
    #[inline]
    pub(crate) fn along_axis_tiny(&self, op: AlongAxis, axis: usize) -> Option<Self> {
        let n = const { tiny_numel::<T, S>() }?;
        let a = &self.host_dense()?[..n];
        let dims = self.dims();
        let len = dims[axis];
        let stride: usize = dims[axis + 1..].iter().product();
        let mut out = Self::host_output(self.shape, n)?;
        if n == 0 {
            return Some(out);
        }
        let o = &mut out.host_elements_mut()?[..n];
        // The longest lane a tiny float tensor has: INLINE_BYTES of 2-byte elements.
        let mut lane = [T::Acc::ZERO; INLINE_BYTES / 2];
        let lane = &mut lane[..len];
        for base in (0..n).step_by(len * stride) {
            for start in base..base + stride {
                for (i, l) in lane.iter_mut().enumerate() {
                    *l = a[start + i * stride].to_acc();
                }
                op.apply(lane);
                for (i, &l) in lane.iter().enumerate() {
                    o[start + i * stride] = T::from_acc(l);
                }
            }
        }
        Some(out)
    }
}

impl<S: Shape, D: Device> Tensor<u8, S, D> {
    /// [`Self::where_cond`] on tiny dense host tensors (sized by the larger element type, `T`); `None` sends it
    /// to the kernel.
    #[inline(always)]
    pub(crate) fn where_cond_tiny<T: WithDType>(
        &self,
        on_true: &Tensor<T, S, D>,
        on_false: &Tensor<T, S, D>,
    ) -> Option<Tensor<T, S, D>> {
        let n = const { tiny_numel::<T, S>() }?;
        let mask = &self.host_dense()?[..n];
        let (t, f) = (&on_true.host_dense()?[..n], &on_false.host_dense()?[..n]);
        let mut out = Tensor::<T, S, D>::host_output(self.shape, n)?;
        for (((o, &m), &t), &f) in out.host_elements_mut()?[..n]
            .iter_mut()
            .zip(mask)
            .zip(t)
            .zip(f)
        {
            *o = if m != 0 { t } else { f };
        }
        Some(out)
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;
    use crate::device::Cpu;
    use crate::shape::{Const, Rank0, Rank1, Rank2};

    #[test]
    fn the_gate_admits_static_shapes_that_fit_inline_and_nothing_else() {
        // Checked when the test builds. 16 f32 = 64 bytes: tiny; one element more, a wider dtype or a runtime
        // dim: the kernels.
        const { assert!(Tensor::<f32, Rank2<4, 4>, Cpu>::MAYBE_TINY) };
        const { assert!(Tensor::<f32, Rank0, Cpu>::MAYBE_TINY) };
        const { assert!(Tensor::<u8, Rank1<64>, Cpu>::MAYBE_TINY) };
        const { assert!(!Tensor::<f32, Rank1<17>, Cpu>::MAYBE_TINY) };
        const { assert!(!Tensor::<f64, Rank2<4, 4>, Cpu>::MAYBE_TINY) };
        const { assert!(!Tensor::<f32, (usize, Const<4>), Cpu>::MAYBE_TINY) };
        const { assert!(!Tensor::<f32, Rank2<8, 16>, Cpu>::MAYBE_TINY) };
    }
}
