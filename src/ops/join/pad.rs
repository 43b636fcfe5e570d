//! Padding by the tensor's own entries (PyTorch's `F.pad` modes `reflect`, `replicate` and `circular`): the
//! padded axis is an `index_select` by a vector of source positions, so every device runs it with its gather
//! kernel and the gradient is `index_select`'s (entries read twice get both gradients).

use super::tensor::PadSizes;
use crate::dtype::WithDType;
use crate::error::{Error, Result};
use crate::ops::Device;
use crate::shape::size_check::{self, n as n_, t};
use crate::shape::{Const, Dim, HasAxis, Shape};
use crate::tensor::{or_panic, Tensor};
use core::marker::PhantomData;

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

/// A padding mode as [`Tensor::pad_mode`] takes it: a [`PadMode`] value, chosen when the program runs and
/// checked then, or one of the unit types [`Reflect`], [`Replicate`], [`Circular`], whose rule on the axis's
/// length is checked when the program is built (a static axis too short for it does not compile).
pub trait PadModeArg: Copy {
    /// The mode when the type fixes it.
    const FIXED: Option<PadMode>;
    /// The mode.
    fn mode(self) -> PadMode;
}

impl PadModeArg for PadMode {
    const FIXED: Option<PadMode> = None;
    fn mode(self) -> PadMode {
        self
    }
}

/// Declares a unit type standing for one [`PadMode`] (see [`PadModeArg`]).
macro_rules! fixed_modes {
    ($($(#[$doc:meta])* $name:ident),*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name;
        impl PadModeArg for $name {
            const FIXED: Option<PadMode> = Some(PadMode::$name);
            fn mode(self) -> PadMode {
                PadMode::$name
            }
        }
    )*};
}
fixed_modes!(
    /// [`PadMode::Reflect`], checked at build time: each side shorter than a static axis.
    ///
    /// ```compile_fail
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::ops::Reflect;
    /// let x = Tensor::<f32, Rank1<3>, Cpu>::zeros();
    /// let _ = x.pad_mode::<Axis<0>, 3, 0, 6>(Reflect); // 3 entries cannot mirror 3 more
    /// ```
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::ops::Reflect;
    /// let x = Tensor::<f32, _, Cpu>::from_array([1., 2., 3.]);
    /// assert_eq!(x.pad_mode::<Axis<0>, 2, 0, 5>(Reflect).to_array(), [3., 2., 1., 2., 3.]);
    /// ```
    Reflect,
    /// [`PadMode::Replicate`], checked at build time: a static axis not empty.
    Replicate,
    /// [`PadMode::Circular`], checked at build time: each side at most a static axis's length.
    Circular
);

/// The build-time check of a padding mode fixed by its type on a static axis.
struct ModeFits<S, Ax, M, const BEFORE: usize, const AFTER: usize>(PhantomData<(S, Ax, M)>);
impl<S: HasAxis<Ax>, Ax, M: PadModeArg, const BEFORE: usize, const AFTER: usize>
    ModeFits<S, Ax, M, BEFORE, AFTER>
{
    const OK: () = if let (Some(mode), Some(n)) =
        (M::FIXED, <<S as HasAxis<Ax>>::Dim as Dim>::STATIC_SIZE)
        && let Some(reason) = mode.refusal(BEFORE, AFTER, n)
    {
        let axis = <S as HasAxis<Ax>>::INDEX;
        let sides = [
            t(": "),
            n_(BEFORE),
            t(" before and "),
            n_(AFTER),
            t(" after, on axis "),
        ];
        size_check::concat_panic(&[
            &[t("pad: "), t(reason)],
            &sides,
            &[n_(axis), t(" of size "), n_(n)],
        ]);
    };
}

/// Names [`ModeFits`] for a mode given as `impl PadModeArg`.
fn mode_fits<S: HasAxis<Ax>, Ax, M: PadModeArg, const BEFORE: usize, const AFTER: usize>(_: &M) {
    let () = ModeFits::<S, Ax, M, BEFORE, AFTER>::OK;
}

impl PadMode {
    /// Why `before`/`after` entries cannot be taken from an axis of `n` in this mode, if they cannot.
    const fn refusal(self, before: usize, after: usize, n: usize) -> Option<&'static str> {
        let longest = if before > after { before } else { after };
        match self {
            PadMode::Reflect if longest >= n => {
                Some("reflect padding must be shorter than the axis on each side")
            }
            PadMode::Circular if longest > n => {
                Some("circular padding must not be longer than the axis on each side")
            }
            PadMode::Replicate if n == 0 => Some("replicate padding needs a non-empty axis"),
            _ => None,
        }
    }

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
        match self.refusal(before, after, n) {
            Some(reason) => Err(Error::InvalidArgument { op: "pad", reason }),
            None => Ok(()),
        }
    }
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// `BEFORE` entries, the tensor, `AFTER` entries along `Ax`, the new ones taken from the tensor as `mode`
    /// says; `OUT` is the padded size (checked at build time for a static axis). A [`PadMode`] value panics when
    /// the axis is too short for it (see [`Self::try_pad_mode`]); a mode given as its type ([`Reflect`],
    /// [`Replicate`], [`Circular`]) is checked at build time on a static axis.
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
        mode: impl PadModeArg,
    ) -> Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
    where
        S: HasAxis<Ax>,
    {
        or_panic(self.try_pad_mode::<Ax, BEFORE, AFTER, OUT>(mode))
    }

    /// [`Self::pad_mode`], returning `Error::AxisSize` when a runtime-sized axis is not `OUT - BEFORE - AFTER`
    /// long and `Error::InvalidArgument` when it is too short for the mode.
    pub fn try_pad_mode<Ax, const BEFORE: usize, const AFTER: usize, const OUT: usize>(
        &self,
        mode: impl PadModeArg,
    ) -> Result<Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>>
    where
        S: HasAxis<Ax>,
    {
        let () = PadSizes::<S, Ax, BEFORE, AFTER, OUT>::OK;
        mode_fits::<S, Ax, _, BEFORE, AFTER>(&mode);
        let sources =
            pad_sources::<D, OUT>(mode.mode(), BEFORE, AFTER, self.dims()[S::INDEX], S::INDEX)?;
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
            mode: impl PadModeArg,
        ) -> Traced<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
        where
            S: HasAxis<Ax>,
        {
            let () = PadSizes::<S, Ax, BEFORE, AFTER, OUT>::OK;
            mode_fits::<S, Ax, _, BEFORE, AFTER>(&mode);
            let n = self.value().dims()[S::INDEX];
            let sources = or_panic(pad_sources::<D, OUT>(
                mode.mode(),
                BEFORE,
                AFTER,
                n,
                S::INDEX,
            ));
            self.index_select::<Ax, u32, Const<OUT>>(&sources)
        }
    }
}
