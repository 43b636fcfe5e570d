//! [`ArrayStorage`]: an embedded tensor's elements, in the nested array of its static shape, held by value.

use crate::dtype::WithDType;
use crate::shape::size_check::{self, of, t};
use crate::shape::{static_numel, Shape};
use core::fmt;

/// The buffer of an [`Embedded`](super::Embedded) tensor: its elements in row-major order, as the nested array
/// of its shape (`[[f32; 4]; 4]` for a `Rank2<4, 4>` f32 tensor), held by value. Its size is
/// `size_of::<S::Array<T>>()`, a compile-time fact; copying the tensor copies it.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::device::ArrayStorage;
/// let t = Tensor::<f32, _, Embedded>::from_array([[1., 2.], [3., 4.]]);
/// let s: &ArrayStorage<f32, Rank2<2, 2>> = t.storage();
/// assert_eq!(s.as_slice(), &[1., 2., 3., 4.]);
/// assert_eq!(core::mem::size_of_val(&t), 16); // the four elements, nothing else
/// ```
#[repr(transparent)]
pub struct ArrayStorage<T: WithDType, S: Shape> {
    array: S::Array<T>,
}

impl<T: WithDType, S: Shape> Clone for ArrayStorage<T, S> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: WithDType, S: Shape> Copy for ArrayStorage<T, S> {}

impl<T: WithDType, S: Shape> ArrayStorage<T, S> {
    /// Number of elements.
    pub const LEN: usize = core::mem::size_of::<S::Array<T>>() / core::mem::size_of::<T>();

    /// The storage holding `array`.
    pub const fn new(array: S::Array<T>) -> Self {
        ArrayStorage { array }
    }

    /// The nested array.
    pub const fn array(&self) -> &S::Array<T> {
        &self.array
    }

    /// The elements in row-major order.
    #[inline(always)]
    pub fn as_slice(&self) -> &[T] {
        if Self::LEN == 0 {
            return &[]; // an empty shape: nothing to view
        }
        crate::dtype::cast_slice(core::slice::from_ref(&self.array))
    }

    /// The elements in row-major order, mutably.
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        if Self::LEN == 0 {
            return &mut [];
        }
        crate::dtype::cast_slice_mut(core::slice::from_mut(&mut self.array))
    }

    /// All zeros. A shape with a runtime dim has no array type that could hold it: using one on the embedded
    /// device fails the build here.
    #[inline(always)]
    pub(super) fn zeroed() -> Self {
        const { runtime_dims_refused::<S>() };
        ArrayStorage {
            array: crate::dtype::zeroed(),
        }
    }
}

impl<T: WithDType, S: Shape> core::ops::Deref for ArrayStorage<T, S> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: WithDType, S: Shape> fmt::Debug for ArrayStorage<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// Panics, showing the shape, unless every dim of `S` is static: an array type holds only those.
const fn runtime_dims_refused<S: Shape>() {
    if static_numel(S::STATIC_DIMS).is_none() {
        let (dims, rank) = of::<S>();
        size_check::concat_panic(&[
            &[t(
                "the Embedded device holds tensors of static shapes only, and ",
            )],
            &size_check::shape(dims, rank),
            &[t(
                " has a runtime-sized dim (`usize`): give every dim as a `Const`",
            )],
        ]);
    }
}
