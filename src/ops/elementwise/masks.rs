//! Masking and mask-building ops: `masked_fill` (a broadcast mask), `where_scalar` (a scalar branch), `tril` and
//! `triu` (over the last two axes, with a diagonal offset) and `one_hot` (the classes in the type). Each is the
//! `where` kernel or a comparison over views (a broadcast mask, a stride-0 scalar, an index read once per
//! class), so every device runs them with its existing kernels; `tril`/`triu` build their mask on the host.

use crate::dtype::{IndexDType, WithDType};
use crate::error::{Error, Result};
use crate::ops::CmpOp;
use crate::ops::Device;
use crate::shape::{AppendDim, BroadcastShapes, Const, Dims, Matrices, Shape, MAX_RANK};
use crate::tensor::{check_output, or_panic, Tensor};

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// `value` where the mask is non-zero, this tensor elsewhere (PyTorch's `masked_fill`); the mask broadcasts
    /// to this tensor's shape (suffix rules).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let scores = Tensor::<f32, _, Cpu>::from_array([[1., 2., 3.], [4., 5., 6.]]);
    /// let padding = Tensor::<u8, _, Cpu>::from_array([0, 0, 1]); // the last column, in every row
    /// let masked = scores.masked_fill(&padding, f32::NEG_INFINITY);
    /// assert_eq!(masked.to_array(), [[1., 2., f32::NEG_INFINITY], [4., 5., f32::NEG_INFINITY]]);
    /// ```
    #[track_caller]
    pub fn masked_fill<S2: Shape>(&self, mask: &Tensor<u8, S2, D>, value: T) -> Self
    where
        S: BroadcastShapes<S2, Output = S>,
    {
        let lm = or_panic(mask.layout().broadcast_as("masked_fill", &self.dims()));
        let (scalar, ls) = self.scalar_operand("masked_fill", value);
        self.select(
            (mask.buffer(), &lm),
            (D::buffer(&scalar), &ls),
            (self.buffer(), &self.layout()),
        )
    }

    /// The lower triangle over the last two axes (PyTorch's `tril`): elements `(i, j)` with `j - i <= diagonal`
    /// kept, the rest zero; `diagonal` 0 is the main diagonal, positive values keep more, negative fewer.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<i64, Rank2<3, 3>, Cpu>::ones();
    /// assert_eq!(x.tril(0).to_array(), [[1, 0, 0], [1, 1, 0], [1, 1, 1]]);
    /// assert_eq!(x.triu(1).to_array(), [[0, 1, 1], [0, 0, 1], [0, 0, 0]]);
    /// ```
    #[track_caller]
    pub fn tril(&self, diagonal: i64) -> Self
    where
        S: Matrices,
    {
        self.triangle("tril", move |i, j| j - i <= diagonal)
    }

    /// The upper triangle over the last two axes (PyTorch's `triu`): elements with `j - i >= diagonal` kept.
    #[track_caller]
    pub fn triu(&self, diagonal: i64) -> Self
    where
        S: Matrices,
    {
        self.triangle("triu", move |i, j| j - i >= diagonal)
    }

    /// This tensor where `keep(row, column)` holds over the last two axes, zero elsewhere.
    #[track_caller]
    fn triangle(&self, op: &'static str, keep: impl Fn(i64, i64) -> bool) -> Self {
        let dims = self.dims();
        let (rows, cols) = (dims[dims.len() - 2], dims[dims.len() - 1]);
        let mask = Tensor::<u8, S, D>::filled_with(op, self.shape(), &mut |out: &mut [u8]| {
            for (k, m) in out.iter_mut().enumerate() {
                let (i, j) = ((k / cols.max(1)) % rows.max(1), k % cols.max(1));
                *m = keep(i as i64, j as i64) as u8;
            }
        });
        let (zero, lz) = self.scalar_operand(op, T::ZERO);
        self.select(
            (mask.buffer(), &mask.layout()),
            (self.buffer(), &self.layout()),
            (D::buffer(&zero), &lz),
        )
    }
}

impl<S: Shape, D: Device> Tensor<u8, S, D> {
    /// `on_true` where the mask is non-zero and `on_false` elsewhere (`torch.where(mask, x, scalar)`).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([-1., 2., -3.]);
    /// let positive = x.gt(&Tensor::<f32, Rank1<3>, Cpu>::zeros());
    /// assert_eq!(positive.where_scalar(&x, 0.5).to_array(), [0.5, 2., 0.5]);
    /// ```
    #[track_caller]
    pub fn where_scalar<T: WithDType>(
        &self,
        on_true: &Tensor<T, S, D>,
        on_false: T,
    ) -> Tensor<T, S, D> {
        let (scalar, ls) = on_true.scalar_operand("where_scalar", on_false);
        on_true.select(
            (self.buffer(), &self.layout()),
            (on_true.buffer(), &on_true.layout()),
            (D::buffer(&scalar), &ls),
        )
    }
}

impl<I: IndexDType, S: AppendDim, D: Device> Tensor<I, S, D> {
    /// Each index as a row of `C` classes, 1 at the index and 0 elsewhere, in element type `U` (PyTorch's
    /// `one_hot`, with the class count in the type): `(B,)` labels give `(B, C)`. An index outside `0..C`
    /// panics (see [`Self::try_one_hot`]); checking it reads the indices' range back to the host.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let labels = Tensor::<u32, _, Cpu>::from_array([2, 0]);
    /// let targets: Tensor<f32, Rank2<2, 3>, Cpu> = labels.one_hot::<3, f32>();
    /// assert_eq!(targets.to_array(), [[0., 0., 1.], [1., 0., 0.]]);
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::indexing_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let labels = Tensor::<u32, _, Cpu>::from_array([2, 0]);
    /// let none: Tensor<f32, Rank2<2, 0>, Cpu> = labels.one_hot::<0, f32>(); // no class to be one of
    /// ```
    #[track_caller]
    pub fn one_hot<const C: usize, U: WithDType>(&self) -> Tensor<U, S::Output<Const<C>>, D> {
        let () = SomeClasses::<C>::OK;
        or_panic(self.try_one_hot::<C, U>())
    }

    /// [`Self::one_hot`], returning `Error::IndexOutOfRange` for an index outside `0..C`.
    pub fn try_one_hot<const C: usize, U: WithDType>(
        &self,
    ) -> Result<Tensor<U, S::Output<Const<C>>, D>> {
        self.try_one_hot_with::<C, U>(U::ONE, U::ZERO)
    }

    /// Each index as a row of `C` classes, `on` at the index and `off` elsewhere (TensorFlow's `on_value` and
    /// `off_value`; label smoothing's targets). The class count and element type come from the output's type or
    /// a turbofish. An index outside `0..C` panics (see [`Self::try_one_hot_with`]).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let labels = Tensor::<u32, _, Cpu>::from_array([2, 0]);
    /// // Label smoothing with eps = 0.3 over 3 classes: 1 - eps + eps / 3 on the label, eps / 3 elsewhere.
    /// let targets: Tensor<f32, Rank2<2, 3>, Cpu> = labels.one_hot_with(0.8, 0.1);
    /// assert_eq!(targets.to_array(), [[0.1, 0.1, 0.8], [0.8, 0.1, 0.1]]);
    /// ```
    #[track_caller]
    pub fn one_hot_with<const C: usize, U: WithDType>(
        &self,
        on: U,
        off: U,
    ) -> Tensor<U, S::Output<Const<C>>, D> {
        let () = SomeClasses::<C>::OK;
        or_panic(self.try_one_hot_with::<C, U>(on, off))
    }

    /// [`Self::one_hot_with`], returning `Error::IndexOutOfRange` for an index outside `0..C`.
    pub fn try_one_hot_with<const C: usize, U: WithDType>(
        &self,
        on: U,
        off: U,
    ) -> Result<Tensor<U, S::Output<Const<C>>, D>> {
        let () = SomeClasses::<C>::OK;
        if self.numel() > 0 {
            // Unchecked reductions: a static shape with no elements never gets here, and must still build.
            let (lo, hi) = (
                self.reduce_all(crate::ops::Min)?.to_scalar(),
                self.reduce_all(crate::ops::Max)?.to_scalar(),
            );
            for index in [lo, hi] {
                if index.to_i64() < 0 || index.to_i64() as u64 >= C as u64 {
                    let index = index.to_i64() as i128;
                    let axis = S::RANK;
                    return Err(Error::IndexOutOfRange {
                        op: "one_hot",
                        axis,
                        index,
                        size: C,
                    });
                }
            }
        }
        // Compare each index, read once per class (stride 0 on the new axis), with the classes 0..C read along
        // the new axis only.
        let rank = S::RANK;
        let mut out_dims = [C; MAX_RANK];
        out_dims[..rank].copy_from_slice(&self.dims());
        let out_dims = Dims::from_slice(&out_dims[..rank + 1]);
        check_output::<U>("one_hot", &out_dims)?;
        let indices = self
            .layout()
            .unsqueeze(rank)
            .broadcast_as("one_hot", &out_dims)?;
        let indices: Tensor<I, S::Output<Const<C>>, D> = self.view_as(indices);
        let classes = Tensor::<I, (Const<C>,), D>::arange();
        let lc = classes.layout().broadcast_as("one_hot", &out_dims)?;
        let hits = indices.compare_view(CmpOp::Eq, (classes.buffer(), &lc));
        if (on, off) == (U::ONE, U::ZERO) {
            return Ok(hits.to_dtype::<U>());
        }
        // The `where` kernel between two stride-0 scalars.
        let on = Tensor::<U, (), D>::full(on);
        let lon = on.layout().broadcast_as("one_hot", &out_dims)?;
        let on = Tensor::<U, S::Output<Const<C>>, D>::from_view(hits.shape(), lon, on.storage());
        let (off, lo) = on.scalar_operand("one_hot", off);
        let mask = (hits.buffer(), &hits.layout());
        Ok(on.select(mask, (on.buffer(), &on.layout()), (D::buffer(&off), &lo)))
    }
}

/// The build-time check of `one_hot`: at least one class.
struct SomeClasses<const C: usize>;
impl<const C: usize> SomeClasses<C> {
    const OK: () = assert!(C > 0, "one_hot needs at least one class: C is 0");
}

#[cfg(feature = "std")]
mod traced {
    use crate::autograd::{record_with, Gradients, Slot, Traced};
    use crate::dtype::FloatDType;
    use crate::ops;
    use crate::ops::Device;
    use crate::shape::{BroadcastShapes, Shape};
    use crate::tensor::{Grad, Tensor};

    /// The gradient through a mask: `g` where the input was kept, 0 where it was replaced.
    fn kept_rule<T: FloatDType, D: Device>(
        g: Grad<T, D>,
        (slot, kept): (Slot, Grad<T, D>),
        store: &mut Gradients,
    ) {
        slot.give_padded(store, g.zip_same(ops::Mul, &kept));
    }

    /// `tril`'s and `triu`'s gradient: the same triangle of `g` (the padded form keeps the last two axes).
    fn triangle_rule<T: FloatDType, D: Device>(
        g: Grad<T, D>,
        (slot, lower, diagonal): (Slot, bool, i64),
        store: &mut Gradients,
    ) {
        slot.give_padded(
            store,
            if lower {
                g.tril(diagonal)
            } else {
                g.triu(diagonal)
            },
        );
    }

    impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
        /// `value` where the mask is non-zero (see [`Tensor::masked_fill`]); the gradient flows where it is zero.
        #[track_caller]
        pub fn masked_fill<S2: Shape>(&self, mask: &Tensor<u8, S2, D>, value: T) -> Self
        where
            S: BroadcastShapes<S2, Output = S>,
        {
            let y = self.value.masked_fill(mask, value);
            let kept = self.value.ones_like().masked_fill(mask, T::ZERO);
            record_with(
                y,
                &[&self.node],
                (self.slot(), kept.padded()),
                kept_rule::<T, D>,
            )
        }

        /// The lower triangle over the last two axes (see [`Tensor::tril`]); the gradient is `g`'s.
        #[track_caller]
        pub fn tril(&self, diagonal: i64) -> Self
        where
            S: crate::shape::Matrices,
        {
            let captured = (self.slot(), true, diagonal);
            record_with(
                self.value.tril(diagonal),
                &[&self.node],
                captured,
                triangle_rule::<T, D>,
            )
        }

        /// The upper triangle over the last two axes (see [`Tensor::triu`]); the gradient is `g`'s.
        #[track_caller]
        pub fn triu(&self, diagonal: i64) -> Self
        where
            S: crate::shape::Matrices,
        {
            let captured = (self.slot(), false, diagonal);
            record_with(
                self.value.triu(diagonal),
                &[&self.node],
                captured,
                triangle_rule::<T, D>,
            )
        }
    }
}
