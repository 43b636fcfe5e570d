//! Indexing with index tensors: the gradient of a gather is the output's gradient scatter-added back to the
//! positions it was read from (repeated indices accumulate).

use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::device::Device;
use crate::dtype::{FloatDType, IndexDType};
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
        let (x, idx) = (self.value.clone(), indices.clone());
        self.unary_op(self.value.index_select::<Ax, I, N>(indices), move |g| {
            x.index_select_backward::<Ax, I, N, _>(&idx, &g)
        })
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
        let axis = MAX_RANK - S::RANK + <S as HasAxis<Ax>>::INDEX;
        let captured = (self.slot(), self.value.padded(), indices.padded(), axis);
        record_with(value, &[&self.node], captured, gather_rule::<T, I, D>)
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
        let (table, idx) = (self.value.clone(), ids.clone());
        self.unary_op(self.value.embedding(ids), move |g| {
            table.embedding_backward(&idx, &g)
        })
    }
}
