//! Dimensions ([`Const`], `usize`), shapes as tuples of dimensions, and the shape-erased [`Dims`] list.

use crate::dtype::Plain;
use crate::error::{Error, Result};
use core::fmt::{self, Debug};

/// The largest rank a tensor can have.
pub const MAX_RANK: usize = 6;

/// One dimension of a shape: a compile-time [`Const<N>`] or a runtime `usize`.
pub trait Dim: Copy + Debug + PartialEq + Send + Sync + 'static {
    /// `Some(N)` for `Const<N>`, `None` for a runtime-sized dim.
    const STATIC_SIZE: Option<usize>;
    /// The size of this dimension.
    fn size(&self) -> usize;
    /// Builds the dimension from a size; `None` when a `Const<N>` is asked for another size.
    fn from_size(size: usize) -> Option<Self>;
    /// An array of `E` along this dim: `[E; N]` for `Const<N>`, empty for a runtime dim (no type can hold it).
    type Array<E: Plain>: Plain;
}

/// A dimension whose size is known at compile time.
pub trait ConstDim: Dim + Default {
    /// The size.
    const SIZE: usize;
}

/// A compile-time dimension of size `N`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Const<const N: usize>;

impl<const N: usize> Debug for Const<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Const<{N}>")
    }
}

impl<const N: usize> Dim for Const<N> {
    const STATIC_SIZE: Option<usize> = Some(N);
    #[inline(always)]
    fn size(&self) -> usize {
        N
    }
    #[inline]
    fn from_size(size: usize) -> Option<Self> {
        (size == N).then_some(Const)
    }
    type Array<E: Plain> = [E; N];
}

impl<const N: usize> ConstDim for Const<N> {
    const SIZE: usize = N;
}

/// A runtime-sized dimension (a variable batch, say). Shapes mixing `usize` and `Const` dims are checked at run
/// time where the types cannot prove agreement.
impl Dim for usize {
    const STATIC_SIZE: Option<usize> = None;
    #[inline(always)]
    fn size(&self) -> usize {
        *self
    }
    #[inline]
    fn from_size(size: usize) -> Option<Self> {
        Some(size)
    }
    type Array<E: Plain> = [E; 0];
}

/// The runtime list of a shape's sizes (at most [`MAX_RANK`]), used below the typed API.
#[derive(Clone, Copy, Eq, Default)]
pub struct Dims {
    len: usize,
    /// Zero past `len` (nothing writes there), so whole arrays compare and hash as the lists do.
    buf: [usize; MAX_RANK],
}

impl core::hash::Hash for Dims {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

impl PartialEq for Dims {
    /// Branch-free over the whole array: the shape-free op bodies compare operand dims on every call, and the
    /// derived comparison was a `memcmp` call there.
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        let differ = self
            .buf
            .iter()
            .zip(&other.buf)
            .fold(self.len ^ other.len, |acc, (a, b)| acc | (a ^ b));
        differ == 0
    }
}

impl Dims {
    /// Builds from a slice. Panics past [`MAX_RANK`] (the typed API never gets there).
    #[inline]
    pub fn from_slice(dims: &[usize]) -> Self {
        assert!(
            dims.len() <= MAX_RANK,
            "rank {} exceeds MAX_RANK {MAX_RANK}",
            dims.len()
        );
        let mut buf = [0; MAX_RANK];
        buf[..dims.len()].copy_from_slice(dims);
        Dims {
            len: dims.len(),
            buf,
        }
    }
    /// The sizes.
    #[inline]
    pub fn as_slice(&self) -> &[usize] {
        &self.buf[..self.len]
    }
    /// The sizes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [usize] {
        &mut self.buf[..self.len]
    }
    /// Number of elements (1 for rank 0). Panics if the shape is too large to address (see
    /// [`Self::checked_numel`]); the library checks every shape where it enters (constructors, reshapes, op
    /// outputs that can grow), so this panic is a backstop, never a wrapped count.
    #[inline]
    #[track_caller]
    pub fn numel(&self) -> usize {
        match self.checked_numel() {
            Some(n) => n,
            None => panic!(
                "{}",
                Error::ShapeOverflow {
                    op: "numel",
                    dims: *self
                }
            ),
        }
    }

    /// Number of elements, or `None` when the shape is too large to address: the product of its non-zero dims
    /// exceeds [`MAX_ELEMENTS`]. Zero dims are left out of that product because the other dims' products are
    /// the strides of the dense layout (`(0, 2^40, 2^40)` has no elements, but a stride of 2^80).
    ///
    /// ```
    /// use typed_tensor::shape::Dims;
    /// assert_eq!(Dims::from_slice(&[2, 3]).checked_numel(), Some(6));
    /// assert_eq!(Dims::from_slice(&[3, 0x5555_5555_5555_5556]).checked_numel(), None); // 2 when wrapped
    /// assert_eq!(Dims::from_slice(&[0, 1 << 40, 1 << 40]).checked_numel(), None);
    /// assert_eq!(Dims::from_slice(&[0, 1 << 20]).checked_numel(), Some(0));
    /// ```
    #[inline]
    pub fn checked_numel(&self) -> Option<usize> {
        let mut product = 1usize;
        let mut empty = false;
        for &d in self.as_slice() {
            if d == 0 {
                empty = true;
            } else {
                product = product.checked_mul(d).filter(|&p| p <= MAX_ELEMENTS)?;
            }
        }
        Some(if empty { 0 } else { product })
    }

    /// [`Self::checked_numel`], or `Error::ShapeOverflow` naming `op`.
    #[inline]
    pub fn try_numel(&self, op: &'static str) -> Result<usize> {
        self.checked_numel()
            .ok_or(Error::ShapeOverflow { op, dims: *self })
    }

    /// The byte size of a dense buffer of this shape's elements of `elem_size` bytes, or `Error::ShapeOverflow`
    /// naming `op` when it (or the element count) exceeds `isize::MAX`, the most a Rust allocation can hold.
    #[inline]
    pub fn try_bytes(&self, op: &'static str, elem_size: usize) -> Result<usize> {
        let overflow = || Error::ShapeOverflow { op, dims: *self };
        let n = self.checked_numel().ok_or_else(overflow)?;
        n.checked_mul(elem_size)
            .filter(|&b| b <= MAX_ELEMENTS)
            .ok_or_else(overflow)
    }
}

/// The most elements a shape may have, and the most bytes a buffer may take: `isize::MAX`, as for any Rust
/// allocation (and every stride and offset then fits the `isize` that pointer arithmetic and `gemm` take).
pub const MAX_ELEMENTS: usize = isize::MAX as usize;

/// `a + b` for sizes computed from runtime dims (a concatenation's length, a padded size): `None` past
/// [`MAX_ELEMENTS`].
#[inline]
pub(crate) fn checked_size_add(a: usize, b: usize) -> Option<usize> {
    a.checked_add(b).filter(|&s| s <= MAX_ELEMENTS)
}

impl core::ops::Deref for Dims {
    type Target = [usize];
    #[inline]
    fn deref(&self) -> &[usize] {
        self.as_slice()
    }
}

impl Debug for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for (i, d) in self.as_slice().iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{d}")?;
        }
        write!(f, "]")
    }
}

impl fmt::Display for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Debug::fmt(self, f)
    }
}

/// A tensor shape: a tuple of [`Dim`]s, `()` for a scalar. Use the [`Rank0`]..[`Rank6`] aliases for static
/// shapes, or spell the tuple to mix in runtime dims: `(usize, Const<784>)`.
pub trait Shape: Copy + Debug + PartialEq + Send + Sync + 'static {
    /// Number of axes.
    const RANK: usize;
    /// The compile-time size of each axis, `None` for a runtime dim; padded with `Some(1)` past `RANK`.
    const STATIC_DIMS: [Option<usize>; MAX_RANK];
    /// What a tensor of this shape stores of its view into a buffer: the stride of each axis, then the offset,
    /// padded with one unused word to an even count (`[usize; 4]` for rank 2). Sized by rank, so a small tensor
    /// does not carry room for [`MAX_RANK`] strides; in whole 16-byte units, so that no padding of the tensor
    /// follows the offset: the compiler then stores the offset with its neighbour as one 16-byte piece, which a
    /// move of the tensor right after can read back from the store (it stalled on the offset alone).
    type View: Copy
        + Debug
        + Default
        + PartialEq
        + Send
        + Sync
        + AsRef<[usize]>
        + AsMut<[usize]>
        + 'static;
    /// True when every dim is a `Const`: all values of the type then have the same sizes.
    const IS_STATIC: bool = all_static(Self::STATIC_DIMS);
    /// The sizes of the axes.
    fn dims(&self) -> Dims;
    /// Builds the shape from sizes; `None` when the rank differs or a `Const` dim disagrees.
    fn from_dims(dims: &[usize]) -> Option<Self>;
    /// The nested array holding one tensor of this shape: `[[T; 3]; 2]` for `Rank2<2, 3>`, `T` for `Rank0`. A
    /// shape with a runtime dim has an empty one (its size is not a type-level fact).
    type Array<T: Plain>: Plain;
    /// Number of elements.
    fn numel(&self) -> usize {
        self.dims().numel()
    }
}

/// A shape whose every dim is a `Const`: its size is a compile-time fact and its [`Shape::Array`] holds a tensor.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has a runtime-sized dim (`usize`), and this needs every dim a `Const`",
    label = "a shape with a runtime-sized dim",
    note = "a target with runtime-sized dims is given as a value, to the op's `try_..._with_shape` form; the `Embedded` device holds static shapes only"
)]
pub trait ConstShape: Shape + Default {
    /// Number of elements.
    const NUMEL: usize;
    /// The shape's value (`Default::default()` in `const` code).
    const SHAPE: Self;
}

/// True when no entry is a runtime dim.
pub const fn all_static(dims: [Option<usize>; MAX_RANK]) -> bool {
    let mut i = 0;
    while i < MAX_RANK {
        if dims[i].is_none() {
            return false;
        }
        i += 1;
    }
    true
}

/// The product of the static sizes, `None` if any is a runtime dim (for `const` assertions).
pub const fn static_numel(dims: [Option<usize>; MAX_RANK]) -> Option<usize> {
    let mut n = 1;
    let mut i = 0;
    while i < MAX_RANK {
        match dims[i] {
            Some(d) => n *= d,
            None => return None,
        }
        i += 1;
    }
    Some(n)
}

/// Scalar shape.
pub type Rank0 = ();
/// Vector of `A` elements.
pub type Rank1<const A: usize> = (Const<A>,);
/// `A x B` matrix.
pub type Rank2<const A: usize, const B: usize> = (Const<A>, Const<B>);
/// Rank-3 shape.
pub type Rank3<const A: usize, const B: usize, const C: usize> = (Const<A>, Const<B>, Const<C>);
/// Rank-4 shape (NCHW images, say).
pub type Rank4<const A: usize, const B: usize, const C: usize, const D: usize> =
    (Const<A>, Const<B>, Const<C>, Const<D>);
/// Rank-5 shape.
pub type Rank5<const A: usize, const B: usize, const C: usize, const D: usize, const E: usize> =
    (Const<A>, Const<B>, Const<C>, Const<D>, Const<E>);
/// Rank-6 shape.
pub type Rank6<
    const A: usize,
    const B: usize,
    const C: usize,
    const D: usize,
    const E: usize,
    const F: usize,
> = (Const<A>, Const<B>, Const<C>, Const<D>, Const<E>, Const<F>);

macro_rules! shape_impls {
    ($rank:literal; $($d:ident $n:ident $i:tt),*) => {
        impl<$($d: Dim),*> Shape for ($($d,)*) {
            const RANK: usize = $rank;
            const STATIC_DIMS: [Option<usize>; MAX_RANK] = {
                #[allow(unused_mut)]
                let mut s = [Some(1); MAX_RANK];
                $(s[$i] = $d::STATIC_SIZE;)*
                s
            };
            type View = [usize; ($rank + 1usize).next_multiple_of(2)];
            #[inline]
            fn dims(&self) -> Dims {
                Dims::from_slice(&[$(self.$i.size()),*])
            }
            #[inline]
            fn from_dims(dims: &[usize]) -> Option<Self> {
                if dims.len() != $rank {
                    return None;
                }
                Some(($($d::from_size(dims[$i])?,)*))
            }
            type Array<T: Plain> = shape_impls!(@array T; $($d)*);
        }
        #[diagnostic::do_not_recommend]
        impl<$(const $n: usize),*> ConstShape for ($(Const<$n>,)*) {
            const NUMEL: usize = 1 $(* $n)*;
            const SHAPE: Self = ($(Const::<$n>,)*);
        }
    };
    (@array $t:ty;) => { $t };
    (@array $t:ty; $d:ident $($rest:ident)*) => { $d::Array<shape_impls!(@array $t; $($rest)*)> };
}

shape_impls!(0;);
shape_impls!(1; A NA 0);
shape_impls!(2; A NA 0, B NB 1);
shape_impls!(3; A NA 0, B NB 1, C NC 2);
shape_impls!(4; A NA 0, B NB 1, C NC 2, D ND 3);
shape_impls!(5; A NA 0, B NB 1, C NC 2, D ND 3, E NE 4);
shape_impls!(6; A NA 0, B NB 1, C NC 2, D ND 3, E NE 4, F NF 5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_compare_and_hash_as_lists() {
        use std::hash::{BuildHasher, RandomState};
        let d = Dims::from_slice;
        assert!(d(&[2, 3]) == d(&[2, 3]));
        assert!(d(&[]) == d(&[]));
        assert!(d(&[2, 3]) != d(&[3, 2]));
        assert!(d(&[2, 3]) != d(&[2, 3, 1]));
        // Same array (zero past the length), other lengths: not equal.
        assert!(d(&[2, 0]) != d(&[2]));
        assert!(d(&[0]) != d(&[]));
        let h = RandomState::new();
        assert_eq!(h.hash_one(d(&[4, 5, 6])), h.hash_one(d(&[4, 5, 6])));
        assert_ne!(h.hash_one(d(&[2, 0])), h.hash_one(d(&[2])));
    }

    #[test]
    fn dims_and_numel() {
        let s: Rank3<2, 3, 4> = Default::default();
        assert_eq!(s.dims().as_slice(), &[2, 3, 4]);
        assert_eq!(<Rank3<2, 3, 4> as ConstShape>::NUMEL, 24);
        assert_eq!(static_numel(<Rank3<2, 3, 4>>::STATIC_DIMS), Some(24));
        assert_eq!(static_numel(<(usize, Const<3>)>::STATIC_DIMS), None);
        assert_eq!(<()>::from_dims(&[]), Some(()));
        assert_eq!(<(usize, Const<3>)>::from_dims(&[7, 3]), Some((7, Const)));
        assert_eq!(<(usize, Const<3>)>::from_dims(&[7, 4]), None);
        assert_eq!(format!("{:?}", Dims::from_slice(&[2, 3])), "[2, 3]");
    }

    #[test]
    fn nested_array_type() {
        let a: <Rank2<2, 3> as Shape>::Array<f32> = [[0.0; 3]; 2];
        assert_eq!(core::mem::size_of_val(&a), 24);
        let b: <(usize, Const<3>) as Shape>::Array<f32> = [];
        assert_eq!(core::mem::size_of_val(&b), 0);
    }
}
