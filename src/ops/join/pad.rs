//! Padding by the tensor's own entries (PyTorch's `F.pad` modes `reflect`, `replicate` and `circular`): the
//! padded axis is an `index_select` by a vector of source positions, so every device runs it with its gather
//! kernel and the gradient is `index_select`'s (entries read twice get both gradients).

use super::tensor::PadSizes;
use crate::dtype::WithDType;
use crate::error::{Error, Result};
use crate::ops::Device;
use crate::shape::{Const, HasAxis, Shape};
use crate::tensor::{or_panic, Tensor};

/// Where [`Tensor::pad_mode`] takes the new entries from, along an axis of `n` entries (PyTorch's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    /// The entries mirrored about the first and last, which are not repeated: `[c b | a b c | b a]`. Each side
    /// must be shorter than the axis.
    Reflect,
    /// The first and last entries repeated: `[a a | a b c | c c]`. The axis must not be empty.
    Replicate,
    /// The axis wrapped around: `[b c | a b c | a b]`. Each side must be at most the axis's length.
    Circular,
}

impl PadMode {
    /// The source of output position `i` when `before` entries are added in front of `n`.
    fn source(self, i: usize, before: usize, n: usize) -> usize {
        let j = i as isize - before as isize;
        let last = n as isize - 1;
        let k = match self {
            PadMode::Reflect if j < 0 => -j,
            PadMode::Reflect if j > last => 2 * last - j,
            PadMode::Replicate => j.clamp(0, last),
            PadMode::Circular => j.rem_euclid(n as isize),
            PadMode::Reflect => j,
        };
        k as usize
    }

    /// `Error::InvalidArgument` when `before`/`after` entries cannot be taken from an axis of `n`.
    fn check(self, before: usize, after: usize, n: usize) -> Result<()> {
        let reason = match self {
            PadMode::Reflect if before.max(after) >= n => {
                "reflect padding must be shorter than the axis on each side"
            }
            PadMode::Circular if before.max(after) > n => {
                "circular padding must not be longer than the axis on each side"
            }
            PadMode::Replicate if n == 0 => "replicate padding needs a non-empty axis",
            _ => return Ok(()),
        };
        Err(Error::InvalidArgument { op: "pad", reason })
    }
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// `BEFORE` entries, the tensor, `AFTER` entries along `Ax`, the new ones taken from the tensor as `mode`
    /// says; `OUT` is the padded size (a `const` assertion for a static axis). Panics when the axis is too short
    /// for the mode (see [`Self::try_pad_mode`]).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::ops::PadMode;
    /// let a = Tensor::<f32, _, Cpu>::from_array([1., 2., 3.]);
    /// let pad = |mode| a.pad_mode::<Axis<0>, 2, 2, 7>(mode).to_array();
    /// assert_eq!(pad(PadMode::Reflect), [3., 2., 1., 2., 3., 2., 1.]);
    /// assert_eq!(pad(PadMode::Replicate), [1., 1., 1., 2., 3., 3., 3.]);
    /// assert_eq!(pad(PadMode::Circular), [2., 3., 1., 2., 3., 1., 2.]);
    /// ```
    #[track_caller]
    pub fn pad_mode<Ax, const BEFORE: usize, const AFTER: usize, const OUT: usize>(
        &self,
        mode: PadMode,
    ) -> Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
    where
        S: HasAxis<Ax>,
    {
        let () = PadSizes::<S, Ax, BEFORE, AFTER, OUT>::OK;
        or_panic(self.try_pad_mode::<Ax, BEFORE, AFTER, OUT>(mode))
    }

    /// [`Self::pad_mode`], returning `Error::AxisSize` when a runtime-sized axis is not `OUT - BEFORE - AFTER`
    /// long and `Error::InvalidArgument` when it is too short for the mode.
    pub fn try_pad_mode<Ax, const BEFORE: usize, const AFTER: usize, const OUT: usize>(
        &self,
        mode: PadMode,
    ) -> Result<Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>>
    where
        S: HasAxis<Ax>,
    {
        let () = PadSizes::<S, Ax, BEFORE, AFTER, OUT>::OK;
        let sources = pad_sources::<D, OUT>(mode, BEFORE, AFTER, self.dims()[S::INDEX], S::INDEX)?;
        self.try_index_select::<Ax, u32, Const<OUT>>(&sources)
    }
}

/// The source position of each of the `OUT` entries along `axis` (of `n`), checked.
fn pad_sources<D: Device, const OUT: usize>(
    mode: PadMode,
    before: usize,
    after: usize,
    n: usize,
    axis: usize,
) -> Result<Tensor<u32, (Const<OUT>,), D>> {
    let out = OUT;
    if n + before + after != out {
        return Err(Error::AxisSize {
            op: "pad",
            axis,
            expected: out - before - after,
            found: n,
        });
    }
    mode.check(before, after, n)?;
    let mut fill = |slots: &mut [u32]| {
        for (i, s) in slots.iter_mut().enumerate() {
            *s = mode.source(i, before, n) as u32;
        }
    };
    Ok(Tensor::filled_with("pad", (Const,), &mut fill))
}

#[cfg(feature = "std")]
mod traced {
    use super::*;
    use crate::autograd::Traced;
    use crate::dtype::FloatDType;

    impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
        /// Padding by the tensor's own entries (see [`Tensor::pad_mode`]); an entry that fills several
        /// positions gets the sum of their gradients.
        #[track_caller]
        pub fn pad_mode<Ax, const BEFORE: usize, const AFTER: usize, const OUT: usize>(
            &self,
            mode: PadMode,
        ) -> Traced<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
        where
            S: HasAxis<Ax>,
        {
            let () = PadSizes::<S, Ax, BEFORE, AFTER, OUT>::OK;
            let n = self.value().dims()[S::INDEX];
            let sources = or_panic(pad_sources::<D, OUT>(mode, BEFORE, AFTER, n, S::INDEX));
            self.index_select::<Ax, u32, Const<OUT>>(&sources)
        }
    }
}
