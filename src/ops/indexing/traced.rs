//! Indexing with index tensors: the gradient of a gather is the output's gradient scatter-added back to the
//! positions it was read from (repeated indices accumulate).

use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::device::Device;
use crate::dtype::{FloatDType, IndexDType};
use crate::layout::Layout;
use crate::shape::{AgreeExceptAxis, AppendDim, Dim, HasAxis, Shape, MAX_RANK};
use crate::tensor::{Grad, Tensor};

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
