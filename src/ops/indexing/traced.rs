//! Indexing with index tensors: the gradient of a gather is the output's gradient scatter-added back to the
//! positions it was read from (repeated indices accumulate).

use crate::autograd::{record_with, Gradients, Slot, Traceable, Traced};
use crate::dtype::{FloatDType, IndexDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::Device;
use crate::shape::{AgreeExceptAxis, AppendDim, Dim, HasAxis, Shape, MAX_RANK};
use crate::tensor::{or_panic, Grad, Tensor};

/// gather's gradient: the output's gradient scatter-added into zeros of the input's dims, along `axis` of the
/// padded form, at the positions the indices name. Compiled once per element type, index type and device.
fn gather_rule<T: FloatDType, I: IndexDType, D: Device>(
    g: Grad<T, D>,
    (slot, x, indices, axis): (Slot, Grad<T, D>, Grad<I, D>, usize),
    store: &mut Gradients,
) {
    let idx = (indices.buffer(), &indices.layout());
    slot.give_padded(store, x.scatter_into_zeros("gather", idx, &g, axis));
}

/// index_select's gradient: the output's gradient scatter-added into zeros of the input's dims, along `axis` of
/// the padded form, at the entries the index vector (padded: its length on the last axis) names.
fn index_select_rule<T: FloatDType, I: IndexDType, D: Device>(
    g: Grad<T, D>,
    (slot, x, indices, axis): (Slot, Grad<T, D>, Grad<I, D>, usize),
    store: &mut Gradients,
) {
    // The index vector seen with the output's dims: it varies along `axis` only.
    let li = indices.layout();
    let mut dims = x.dims();
    dims.as_mut_slice()[axis] = li.dims()[MAX_RANK - 1];
    let mut strides = [0; MAX_RANK];
    strides[axis] = li.strides()[MAX_RANK - 1];
    let idx = Layout::from_parts(dims, &strides, li.offset());
    let grad = x.scatter_into_zeros("index_select", (indices.buffer(), &idx), &g, axis);
    slot.give_padded(store, grad);
}

/// scatter_add's gradient: the output's gradient flows unchanged to the input (each of its elements is in the
/// output once, in place) and to each source element from the position it was added at (a gather of the
/// gradient by the same indices).
fn scatter_add_rule<T: FloatDType, I: IndexDType, D: Device>(
    g: Grad<T, D>,
    ([sx, ssrc], indices, axis): ([Slot; 2], Grad<I, D>, usize),
    store: &mut Gradients,
) {
    ssrc.give_padded_with(store, || g.gather_axis(&indices, axis));
    sx.give_padded(store, g);
}

/// embedding's gradient: each output row's gradient added into the table row its id names (the table viewed as
/// the runtime `(V, E)` matrix it is).
fn embedding_rule<T: FloatDType, I: IndexDType, D: Device>(
    g: Grad<T, D>,
    (slot, table, ids): (Slot, Grad<T, D>, Grad<I, D>),
    store: &mut Gradients,
) {
    let d = table.dims();
    let table = table.unpadded((d[MAX_RANK - 2], d[MAX_RANK - 1]));
    slot.give_padded(store, table.embedding_backward(&ids, &g).padded());
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// Entries `indices` of axis `Ax` (see [`Tensor::index_select`]).
    #[track_caller]
    pub fn index_select<Ax, I: IndexDType, N: Dim>(
        &self,
        indices: &Tensor<I, (N,), D>,
    ) -> Traced<T, <S as HasAxis<Ax>>::Replaced<N>, D>
    where
        S: HasAxis<Ax>,
    {
        let value = self.value.index_select::<Ax, I, N>(indices);
        let axis = self.padded_axis::<Ax>();
        let captured = (self.slot(), self.value.padded(), indices.padded(), axis);
        record_with(value, &[&self.node], captured, index_select_rule::<T, I, D>)
    }

    /// `out[p] = self[p with its Ax coordinate replaced by indices[p]]` (see [`Tensor::gather`]).
    #[track_caller]
    pub fn gather<Ax, I: IndexDType, S2: Shape>(
        &self,
        indices: &Tensor<I, S2, D>,
    ) -> Traced<T, S2, D>
    where
        S: AgreeExceptAxis<S2, Ax>,
    {
        let value = self.value.gather::<Ax, I, S2>(indices);
        let axis = self.padded_axis::<Ax>();
        let captured = (self.slot(), self.value.padded(), indices.padded(), axis);
        record_with(value, &[&self.node], captured, gather_rule::<T, I, D>)
    }
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// A copy of this value with `src[p]` added at `p` with its `Ax` coordinate replaced by `indices[p]` (see
    /// [`Tensor::scatter_add`]); `src` is a traced value, a parameter or a plain tensor. The gradient flows to
    /// this value unchanged and to each source element from the position it was added at.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::autograd::{Traced, Var};
    /// let src = Var::new(Tensor::<f64, _, Cpu>::from_array([[1.0, 2.0, 3.0]]));
    /// let at = Tensor::<i64, _, Cpu>::from_array([[0, 1, 0]]);
    /// let x = Traced::constant(Tensor::<f64, Rank2<1, 2>, Cpu>::zeros());
    /// let y = x.scatter_add::<Axis<1>, _, _, _>(&at, &src); // [[1 + 3, 2]]
    /// let w = Tensor::<f64, _, Cpu>::from_array([[10.0, 20.0]]);
    /// let grads = (y * &w).sum_all().backward();
    /// assert_eq!(grads.get(&src).to_array(), [[10.0, 20.0, 10.0]]);
    /// ```
    #[track_caller]
    pub fn scatter_add<Ax, I: IndexDType, S2: Shape, R>(
        &self,
        indices: &Tensor<I, S2, D>,
        src: &R,
    ) -> Self
    where
        S: AgreeExceptAxis<S2, Ax>,
        R: Traceable<Elem = T, Shape = S2, Device = D>,
    {
        or_panic(self.try_scatter_add::<Ax, I, S2, R>(indices, src))
    }

    /// [`Self::scatter_add`], returning the error of [`Tensor::try_scatter_add`] (a bad index, runtime dims
    /// that disagree).
    pub fn try_scatter_add<Ax, I: IndexDType, S2: Shape, R>(
        &self,
        indices: &Tensor<I, S2, D>,
        src: &R,
    ) -> Result<Self>
    where
        S: AgreeExceptAxis<S2, Ax>,
        R: Traceable<Elem = T, Shape = S2, Device = D>,
    {
        let src = src.traced();
        let value = self
            .value
            .try_scatter_add::<Ax, I, S2>(indices, &src.value)?;
        let axis = self.padded_axis::<Ax>();
        let captured = ([self.slot(), src.slot()], indices.padded(), axis);
        Ok(record_with(
            value,
            &[&self.node, &src.node],
            captured,
            scatter_add_rule::<T, I, D>,
        ))
    }

    /// This value's elements at `indices` along the padded axis `axis` (the other axes the indices'), traced
    /// with gather's rule: the sorting family's values are read this way.
    pub(crate) fn gather_along<S2: Shape>(
        &self,
        indices: &Tensor<u32, S2, D>,
        axis: usize,
    ) -> Traced<T, S2, D> {
        let value = self.value.gather_axis(indices, axis - (MAX_RANK - S::RANK));
        let captured = (self.slot(), self.value.padded(), indices.padded(), axis);
        record_with(value, &[&self.node], captured, gather_rule::<T, u32, D>)
    }
}

impl<T: FloatDType, V: Dim, E: Dim, D: Device> Traced<T, (V, E), D> {
    /// Rows of this `(V, E)` table named by `ids` (see [`Tensor::embedding`]); the table's gradient adds each
    /// output row's gradient into the row it came from.
    #[track_caller]
    pub fn embedding<I: IndexDType, S2: AppendDim>(
        &self,
        ids: &Tensor<I, S2, D>,
    ) -> Traced<T, <S2 as AppendDim>::Output<E>, D> {
        let captured = (self.slot(), self.value.padded(), ids.padded());
        record_with(
            self.value.embedding(ids),
            &[&self.node],
            captured,
            embedding_rule::<T, I, D>,
        )
    }
}
