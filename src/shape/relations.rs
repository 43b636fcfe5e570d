//! Relations between shapes, checked by the compiler.
//!
//! Each relation is a trait implemented (by the macros below) exactly for the shapes that satisfy it, so a
//! mistake is an unsatisfied bound. `#[diagnostic::on_unimplemented]` turns that into one error that names both
//! shapes, and `#[diagnostic::do_not_recommend]` on the generated impls keeps rustc from listing them.
//!
//! Arithmetic that stable Rust cannot do in types (reshape keeps the element count, a narrow stays in bounds,
//! a size-1 dim broadcasts) is checked by `const` assertions in the tensor methods, with the `const fn`s here.
//! Those fire at `cargo build`/`cargo test`, not at `cargo check`.

use super::dims::{Dim, Shape, MAX_RANK};

/// Names axis `I` of a shape: `Axis<0>` is the outermost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Axis<const I: usize>;

/// The shape has an axis `Ax`: its dim, the shape without it, the shape with it replaced.
#[diagnostic::on_unimplemented(
    message = "shape `{Self}` has no axis `{Ax}`",
    label = "axis out of range for this shape",
    note = "axes count from 0: a rank-N shape has Axis<0> .. Axis<N-1>, or from the end: FromEnd<1> (the last, `Last`) .. FromEnd<N>"
)]
pub trait HasAxis<Ax>: Shape {
    /// The position of the axis.
    const INDEX: usize;
    /// The dim at that axis.
    type Dim: Dim;
    /// The shape with the axis removed (reductions, select).
    type Removed: Shape;
    /// The shape with the axis replaced by `New` (narrow, concat).
    type Replaced<New: Dim>: Shape;
}

/// `Self` and `Rhs` have the same rank and agree on every axis but `Ax`: what concatenation along `Ax` needs, and
/// what `gather`/`scatter_add` need of their index tensor.
#[diagnostic::on_unimplemented(
    message = "shapes `{Self}` and `{Rhs}` must agree on every axis but `{Ax}`",
    label = "same rank, and every other dim equal",
    note = "concatenation, gather and scatter_add pair two shapes that may differ only on the chosen axis"
)]
pub trait AgreeExceptAxis<Rhs: Shape, Ax>: HasAxis<Ax> {}

macro_rules! axis_impls {
    ($ax:literal; [$($pre:ident)*] $d:ident [$($post:ident)*]) => {
        #[diagnostic::do_not_recommend]
        impl<$($pre: Dim,)* $d: Dim, $($post: Dim,)*> HasAxis<Axis<$ax>> for ($($pre,)* $d, $($post,)*) {
            const INDEX: usize = $ax;
            type Dim = $d;
            type Removed = ($($pre,)* $($post,)*);
            type Replaced<New: Dim> = ($($pre,)* New, $($post,)*);
        }
        #[diagnostic::do_not_recommend]
        impl<$($pre: Dim,)* $d: Dim, Other: Dim, $($post: Dim,)*>
            AgreeExceptAxis<($($pre,)* Other, $($post,)*), Axis<$ax>> for ($($pre,)* $d, $($post,)*) {}
    };
}
axis_impls!(0; [] A []);
axis_impls!(0; [] A [B]);
axis_impls!(1; [A] B []);
axis_impls!(0; [] A [B C]);
axis_impls!(1; [A] B [C]);
axis_impls!(2; [A B] C []);
axis_impls!(0; [] A [B C D]);
axis_impls!(1; [A] B [C D]);
axis_impls!(2; [A B] C [D]);
axis_impls!(3; [A B C] D []);
axis_impls!(0; [] A [B C D E]);
axis_impls!(1; [A] B [C D E]);
axis_impls!(2; [A B] C [D E]);
axis_impls!(3; [A B C] D [E]);
axis_impls!(4; [A B C D] E []);
axis_impls!(0; [] A [B C D E F]);
axis_impls!(1; [A] B [C D E F]);
axis_impls!(2; [A B] C [D E F]);
axis_impls!(3; [A B C] D [E F]);
axis_impls!(4; [A B C D] E [F]);
axis_impls!(5; [A B C D E] F []);

/// A new axis can be inserted at position `Ax` (0 ..= rank; rank appends): `unsqueeze`, `stack`.
#[diagnostic::on_unimplemented(
    message = "cannot insert an axis at `{Ax}` into shape `{Self}`",
    label = "a new axis goes before an existing one or right after the last, and the result has rank 6 at most"
)]
pub trait InsertAxis<Ax>: Shape {
    /// Where the new axis goes.
    const INDEX: usize;
    /// The shape with a new axis of size `New` at `Ax`.
    type Output<New: Dim>: Shape;
}

macro_rules! insert_impls {
    ($ax:literal; [$($pre:ident)*] [$($post:ident)*]) => {
        #[diagnostic::do_not_recommend]
        impl<$($pre: Dim,)* $($post: Dim,)*> InsertAxis<Axis<$ax>> for ($($pre,)* $($post,)*) {
            const INDEX: usize = $ax;
            type Output<New: Dim> = ($($pre,)* New, $($post,)*);
        }
    };
}
insert_impls!(0; [] []);
insert_impls!(0; [] [A]);
insert_impls!(1; [A] []);
insert_impls!(0; [] [A B]);
insert_impls!(1; [A] [B]);
insert_impls!(2; [A B] []);
insert_impls!(0; [] [A B C]);
insert_impls!(1; [A] [B C]);
insert_impls!(2; [A B] [C]);
insert_impls!(3; [A B C] []);
insert_impls!(0; [] [A B C D]);
insert_impls!(1; [A] [B C D]);
insert_impls!(2; [A B] [C D]);
insert_impls!(3; [A B C] [D]);
insert_impls!(4; [A B C D] []);
insert_impls!(0; [] [A B C D E]);
insert_impls!(1; [A] [B C D E]);
insert_impls!(2; [A B] [C D E]);
insert_impls!(3; [A B C] [D E]);
insert_impls!(4; [A B C D] [E]);
insert_impls!(5; [A B C D E] []);

/// A shape with one more axis at the end: `embedding` turns ids of shape `S` into `S + (E,)`.
#[diagnostic::on_unimplemented(
    message = "shape `{Self}` has no room for another axis",
    label = "tensors have at most 6 axes"
)]
pub trait AppendDim: Shape {
    /// The shape with `New` appended.
    type Output<New: Dim>: Shape;
}
macro_rules! append_dim {
    ($($d:ident)*) => {
        #[diagnostic::do_not_recommend]
        impl<$($d: Dim),*> AppendDim for ($($d,)*) {
            type Output<New: Dim> = ($($d,)* New,);
        }
    };
}
append_dim!();
append_dim!(A);
append_dim!(A B);
append_dim!(A B C);
append_dim!(A B C D);
append_dim!(A B C D E);

/// Axes `I` and `J` of the shape can be swapped (transpose).
#[diagnostic::on_unimplemented(
    message = "cannot swap axes `{I}` and `{J}` of shape `{Self}`",
    label = "both axes must exist in this shape"
)]
pub trait SwapAxes<I, J>: Shape {
    /// The shape with the two dims exchanged.
    type Output: Shape;
    /// Positions of the two axes.
    const AXES: (usize, usize);
}

// One impl per (rank, I, J), generated rather than blanket, so a bad axis gives a single error.
macro_rules! swap_impl {
    ([$($d:ident)*] $i:literal $j:literal => [$($o:ident)*]) => {
        #[diagnostic::do_not_recommend]
        impl<$($d: Dim),*> SwapAxes<Axis<$i>, Axis<$j>> for ($($d,)*) {
            type Output = ($($o,)*);
            const AXES: (usize, usize) = ($i, $j);
        }
    };
}
swap_impl!([A B] 0 1 => [B A]);
swap_impl!([A B] 1 0 => [B A]);
swap_impl!([A B C] 0 1 => [B A C]);
swap_impl!([A B C] 0 2 => [C B A]);
swap_impl!([A B C] 1 0 => [B A C]);
swap_impl!([A B C] 1 2 => [A C B]);
swap_impl!([A B C] 2 0 => [C B A]);
swap_impl!([A B C] 2 1 => [A C B]);
swap_impl!([A B C D] 0 1 => [B A C D]);
swap_impl!([A B C D] 0 2 => [C B A D]);
swap_impl!([A B C D] 0 3 => [D B C A]);
swap_impl!([A B C D] 1 0 => [B A C D]);
swap_impl!([A B C D] 1 2 => [A C B D]);
swap_impl!([A B C D] 1 3 => [A D C B]);
swap_impl!([A B C D] 2 0 => [C B A D]);
swap_impl!([A B C D] 2 1 => [A C B D]);
swap_impl!([A B C D] 2 3 => [A B D C]);
swap_impl!([A B C D] 3 0 => [D B C A]);
swap_impl!([A B C D] 3 1 => [A D C B]);
swap_impl!([A B C D] 3 2 => [A B D C]);
swap_impl!([A B C D E] 0 1 => [B A C D E]);
swap_impl!([A B C D E] 0 2 => [C B A D E]);
swap_impl!([A B C D E] 0 3 => [D B C A E]);
swap_impl!([A B C D E] 0 4 => [E B C D A]);
swap_impl!([A B C D E] 1 0 => [B A C D E]);
swap_impl!([A B C D E] 1 2 => [A C B D E]);
swap_impl!([A B C D E] 1 3 => [A D C B E]);
swap_impl!([A B C D E] 1 4 => [A E C D B]);
swap_impl!([A B C D E] 2 0 => [C B A D E]);
swap_impl!([A B C D E] 2 1 => [A C B D E]);
swap_impl!([A B C D E] 2 3 => [A B D C E]);
swap_impl!([A B C D E] 2 4 => [A B E D C]);
swap_impl!([A B C D E] 3 0 => [D B C A E]);
swap_impl!([A B C D E] 3 1 => [A D C B E]);
swap_impl!([A B C D E] 3 2 => [A B D C E]);
swap_impl!([A B C D E] 3 4 => [A B C E D]);
swap_impl!([A B C D E] 4 0 => [E B C D A]);
swap_impl!([A B C D E] 4 1 => [A E C D B]);
swap_impl!([A B C D E] 4 2 => [A B E D C]);
swap_impl!([A B C D E] 4 3 => [A B C E D]);
swap_impl!([A B C D E F] 0 1 => [B A C D E F]);
swap_impl!([A B C D E F] 0 2 => [C B A D E F]);
swap_impl!([A B C D E F] 0 3 => [D B C A E F]);
swap_impl!([A B C D E F] 0 4 => [E B C D A F]);
swap_impl!([A B C D E F] 0 5 => [F B C D E A]);
swap_impl!([A B C D E F] 1 0 => [B A C D E F]);
swap_impl!([A B C D E F] 1 2 => [A C B D E F]);
swap_impl!([A B C D E F] 1 3 => [A D C B E F]);
swap_impl!([A B C D E F] 1 4 => [A E C D B F]);
swap_impl!([A B C D E F] 1 5 => [A F C D E B]);
swap_impl!([A B C D E F] 2 0 => [C B A D E F]);
swap_impl!([A B C D E F] 2 1 => [A C B D E F]);
swap_impl!([A B C D E F] 2 3 => [A B D C E F]);
swap_impl!([A B C D E F] 2 4 => [A B E D C F]);
swap_impl!([A B C D E F] 2 5 => [A B F D E C]);
swap_impl!([A B C D E F] 3 0 => [D B C A E F]);
swap_impl!([A B C D E F] 3 1 => [A D C B E F]);
swap_impl!([A B C D E F] 3 2 => [A B D C E F]);
swap_impl!([A B C D E F] 3 4 => [A B C E D F]);
swap_impl!([A B C D E F] 3 5 => [A B C F E D]);
swap_impl!([A B C D E F] 4 0 => [E B C D A F]);
swap_impl!([A B C D E F] 4 1 => [A E C D B F]);
swap_impl!([A B C D E F] 4 2 => [A B E D C F]);
swap_impl!([A B C D E F] 4 3 => [A B C E D F]);
swap_impl!([A B C D E F] 4 5 => [A B C D F E]);
swap_impl!([A B C D E F] 5 0 => [F B C D E A]);
swap_impl!([A B C D E F] 5 1 => [A F C D E B]);
swap_impl!([A B C D E F] 5 2 => [A B F D E C]);
swap_impl!([A B C D E F] 5 3 => [A B C F E D]);
swap_impl!([A B C D E F] 5 4 => [A B C D F E]);

/// `Self` can be permuted by `Axes` (a tuple of `Axis<_>`, one per axis). That every axis appears exactly once
/// is a `const` assertion in `permute`.
#[diagnostic::on_unimplemented(
    message = "cannot permute shape `{Self}` by `{Axes}`",
    label = "give one `Axis<_>` per axis of the shape, each an axis of it",
    note = "a rank-3 shape takes `(Axis<a>, Axis<b>, Axis<c>)`, a permutation of 0, 1, 2"
)]
pub trait PermuteTo<Axes>: Shape {
    /// The permuted shape.
    type Output: Shape;
    /// The source axis of each output axis.
    const PERM: [usize; MAX_RANK];
}

macro_rules! permute_impls {
    ($($d:ident $n:ident $i:tt),*) => {
        #[diagnostic::do_not_recommend]
        impl<$($d: Dim,)* $(const $n: usize),*> PermuteTo<($(Axis<$n>,)*)> for ($($d,)*)
        where
            $(Self: HasAxis<Axis<$n>>,)*
        {
            type Output = ($(<Self as HasAxis<Axis<$n>>>::Dim,)*);
            const PERM: [usize; MAX_RANK] = {
                #[allow(unused_mut)]
                let mut p = [0; MAX_RANK];
                $(p[$i] = $n;)*
                p
            };
        }
    };
}
permute_impls!(A NA 0);
permute_impls!(A NA 0, B NB 1);
permute_impls!(A NA 0, B NB 1, C NC 2);
permute_impls!(A NA 0, B NB 1, C NC 2, D ND 3);
permute_impls!(A NA 0, B NB 1, C NC 2, D ND 3, E NE 4);
permute_impls!(A NA 0, B NB 1, C NC 2, D ND 3, E NE 4, F NF 5);

/// True when `perm[..rank]` names every axis below `rank` exactly once.
pub const fn is_permutation(perm: [usize; MAX_RANK], rank: usize) -> bool {
    let mut seen = [false; MAX_RANK];
    let mut i = 0;
    while i < rank {
        if perm[i] >= rank || seen[perm[i]] {
            return false;
        }
        seen[perm[i]] = true;
        i += 1;
    }
    true
}

/// The shapes of a binary op's operands: equal, or one is a suffix of the other (NumPy's right-aligned rule
/// with the missing leading axes broadcast). `Output` is the larger shape.
///
/// Size-1 dims do not broadcast implicitly (on stable Rust that rule overlaps with "equal dims"); broadcast
/// them explicitly with `broadcast::<Dst>()`.
#[diagnostic::on_unimplemented(
    message = "shapes `{Self}` and `{Rhs}` are not broadcast-compatible",
    label = "the shapes must be equal, or one must end with the other",
    note = "broadcasting aligns shapes on the right: (2, 3) combines with (3,) and (), not with (2,) or (3, 2)",
    note = "to stretch a size-1 dim, call `.broadcast::<Dst>()` first"
)]
pub trait BroadcastShapes<Rhs: Shape>: Shape {
    /// The shape of the result.
    type Output: Shape;
}

macro_rules! suffix_impls {
    ([$($all:ident)*] []) => {};
    ([$($all:ident)*] [$head:ident $($tail:ident)*]) => {
        #[diagnostic::do_not_recommend]
        impl<$($all: Dim),*> BroadcastShapes<($($tail,)*)> for ($($all,)*) {
            type Output = ($($all,)*);
        }
        #[diagnostic::do_not_recommend]
        impl<$($all: Dim),*> BroadcastShapes<($($all,)*)> for ($($tail,)*) {
            type Output = ($($all,)*);
        }
        suffix_impls!([$($all)*] [$($tail)*]);
    };
}
macro_rules! broadcast_impls {
    ($($d:ident)*) => {
        #[diagnostic::do_not_recommend]
        impl<$($d: Dim),*> BroadcastShapes<($($d,)*)> for ($($d,)*) {
            type Output = ($($d,)*);
        }
        suffix_impls!([$($d)*] [$($d)*]);
    };
}
broadcast_impls!();
broadcast_impls!(A);
broadcast_impls!(A B);
broadcast_impls!(A B C);
broadcast_impls!(A B C D);
broadcast_impls!(A B C D E);
broadcast_impls!(A B C D E F);

/// `Rhs` broadcasts onto `Self` and the result keeps `Self`'s shape, as an in-place op (`+=`, `add_assign`)
/// needs: `Rhs` is `Self` or a suffix of it.
#[diagnostic::on_unimplemented(
    message = "an in-place op keeps the left operand's shape `{Self}`, and `{Rhs}` does not broadcast onto it",
    label = "the right operand must be `{Self}` or end it",
    note = "`a += b` writes into `a`: only `b` may be broadcast; to grow `a`, write `let a = &a + &b;`"
)]
pub trait AssignShapes<Rhs: Shape>: BroadcastShapes<Rhs, Output = Self> {}

macro_rules! assign_suffix_impls {
    ([$($all:ident)*] []) => {};
    ([$($all:ident)*] [$head:ident $($tail:ident)*]) => {
        #[diagnostic::do_not_recommend]
        impl<$($all: Dim),*> AssignShapes<($($tail,)*)> for ($($all,)*) {}
        assign_suffix_impls!([$($all)*] [$($tail)*]);
    };
}
macro_rules! assign_impls {
    ($($d:ident)*) => {
        #[diagnostic::do_not_recommend]
        impl<$($d: Dim),*> AssignShapes<($($d,)*)> for ($($d,)*) {}
        assign_suffix_impls!([$($d)*] [$($d)*]);
    };
}
assign_impls!();
assign_impls!(A);
assign_impls!(A B);
assign_impls!(A B C);
assign_impls!(A B C D);
assign_impls!(A B C D E);
assign_impls!(A B C D E F);

/// `Self` can be broadcast to `Dst` explicitly: `Dst` has at least as many axes. That each right-aligned dim
/// of `Self` equals `Dst`'s or is 1 is a `const` assertion for static dims and a run-time check otherwise.
#[diagnostic::on_unimplemented(
    message = "shape `{Self}` cannot be broadcast to `{Dst}`",
    label = "the target shape has fewer axes",
    note = "broadcasting only adds leading axes and stretches size-1 dims"
)]
pub trait BroadcastTo<Dst: Shape>: Shape {}

// One impl per (source rank, target rank) with the target at least as long: `[src] => [target] ...`. (The
// ranks used to be paired wrongly, a rank-r source reaching ranks 1 to 7 - r: a rank-4 keep-dim result could not
// be broadcast back to rank 4, and fewer axes failed late, in the `const` check, instead of at this trait.)
macro_rules! broadcast_to_impls {
    ($src:tt => $($dst:tt)*) => {$(
        broadcast_to_impls!(@one $src $dst);
    )*};
    (@one [$($src:ident)*] [$($dst:ident)*]) => {
        #[diagnostic::do_not_recommend]
        impl<$($src: Dim,)* $($dst: Dim),*> BroadcastTo<($($dst,)*)> for ($($src,)*) {}
    };
}
broadcast_to_impls!([] => [Z0] [Z0 Z1] [Z0 Z1 Z2] [Z0 Z1 Z2 Z3] [Z0 Z1 Z2 Z3 Z4] [Z0 Z1 Z2 Z3 Z4 Z5]);
broadcast_to_impls!([A] => [Z0] [Z0 Z1] [Z0 Z1 Z2] [Z0 Z1 Z2 Z3] [Z0 Z1 Z2 Z3 Z4] [Z0 Z1 Z2 Z3 Z4 Z5]);
broadcast_to_impls!([A B] => [Z0 Z1] [Z0 Z1 Z2] [Z0 Z1 Z2 Z3] [Z0 Z1 Z2 Z3 Z4] [Z0 Z1 Z2 Z3 Z4 Z5]);
broadcast_to_impls!([A B C] => [Z0 Z1 Z2] [Z0 Z1 Z2 Z3] [Z0 Z1 Z2 Z3 Z4] [Z0 Z1 Z2 Z3 Z4 Z5]);
broadcast_to_impls!([A B C D] => [Z0 Z1 Z2 Z3] [Z0 Z1 Z2 Z3 Z4] [Z0 Z1 Z2 Z3 Z4 Z5]);
broadcast_to_impls!([A B C D E] => [Z0 Z1 Z2 Z3 Z4] [Z0 Z1 Z2 Z3 Z4 Z5]);
broadcast_to_impls!([A B C D E F] => [Z0 Z1 Z2 Z3 Z4 Z5]);

/// `true` unless a right-aligned pair of static dims differs with the source dim not 1. Runtime dims pass here
/// and are checked when the op runs.
pub const fn broadcast_static_ok(
    src: [Option<usize>; MAX_RANK],
    src_rank: usize,
    dst: [Option<usize>; MAX_RANK],
    dst_rank: usize,
) -> bool {
    if src_rank > dst_rank {
        return false;
    }
    let mut i = 0;
    while i < src_rank {
        let s = src[src_rank - 1 - i];
        let d = dst[dst_rank - 1 - i];
        if let (Some(s), Some(d)) = (s, d)
            && s != d
            && s != 1
        {
            return false;
        }
        i += 1;
    }
    true
}

/// `true` unless both element counts are static and differ.
pub const fn numel_static_eq(a: Option<usize>, b: Option<usize>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

/// `true` unless the dim is static and `start + len` runs past it.
pub const fn narrow_static_ok(dim: Option<usize>, start: usize, len: usize) -> bool {
    match dim {
        Some(d) => start <= d && len <= d - start,
        None => true,
    }
}

/// `true` unless the three dims are static and `out != a + b` (concatenation).
pub const fn concat_static_ok(a: Option<usize>, b: Option<usize>, out: Option<usize>) -> bool {
    match (a, b, out) {
        (Some(a), Some(b), Some(o)) => a + b == o,
        _ => true,
    }
}

/// Matrix products: `(M, K) x (K, N) -> (M, N)`, batched `(B, M, K) x (B, K, N)` (and rank 4), batched times a
/// shared matrix `(B, M, K) x (K, N)`, matrix-vector `(M, K) x (K,)`, vector-matrix `(K,) x (K, N)`, and the
/// dot product `(K,) x (K,) -> ()`. The inner dims must be the same `Dim` type.
#[diagnostic::on_unimplemented(
    message = "cannot matrix-multiply shapes `{Self}` and `{Rhs}`",
    label = "the inner dims must agree (left's last, right's first matrix dim), and so must batch dims",
    note = "supported: (M, K) x (K, N), (B, M, K) x (B, K, N), (B1, B2, M, K) x (B1, B2, K, N), a matrix shared by a batch on either side ((B, M, K) x (K, N), (B1, B2, M, K) x (K, N), (M, K) x (B, K, N), (M, K) x (B1, B2, K, N)), vectors ((M, K) x (K,), (B, M, K) x (K,), (K,) x (K, N), (K,) x (B, K, N), (K,) x (K,))"
)]
pub trait MatMulShape<Rhs: Shape>: Shape {
    /// The product's shape.
    type Output: Shape;
}

macro_rules! matmul_impl {
    ([$($g:ident),*] $lhs:ty, $rhs:ty => $out:ty) => {
        #[diagnostic::do_not_recommend]
        impl<$($g: Dim),*> MatMulShape<$rhs> for $lhs {
            type Output = $out;
        }
    };
}
matmul_impl!([M, K, N] (M, K), (K, N) => (M, N));
matmul_impl!([B, M, K, N] (B, M, K), (B, K, N) => (B, M, N));
matmul_impl!([B, M, K, N] (B, M, K), (K, N) => (B, M, N));
matmul_impl!([B, C, M, K, N] (B, C, M, K), (B, C, K, N) => (B, C, M, N));
// A matrix or vector shared by every entry of the other operand's batch (PyTorch broadcasts the missing
// leading batch axes the same way).
matmul_impl!([B, C, M, K, N] (B, C, M, K), (K, N) => (B, C, M, N));
matmul_impl!([B, M, K, N] (M, K), (B, K, N) => (B, M, N));
matmul_impl!([B, C, M, K, N] (M, K), (B, C, K, N) => (B, C, M, N));
matmul_impl!([B, M, K] (B, M, K), (K,) => (B, M));
matmul_impl!([B, K, N] (K,), (B, K, N) => (B, N));
matmul_impl!([M, K] (M, K), (K,) => (M,));
matmul_impl!([K, N] (K,), (K, N) => (N,));
matmul_impl!([K] (K,), (K,) => ());

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::{Const, Rank2, Rank3};

    fn same<A: 'static, B: 'static>() -> bool {
        core::any::TypeId::of::<A>() == core::any::TypeId::of::<B>()
    }

    #[test]
    fn type_level_results() {
        assert!(same::<
            <Rank3<2, 3, 4> as HasAxis<Axis<1>>>::Removed,
            Rank2<2, 4>,
        >());
        assert!(same::<
            <Rank3<2, 3, 4> as HasAxis<Axis<2>>>::Replaced<Const<9>>,
            Rank3<2, 3, 9>,
        >());
        assert!(same::<
            <Rank3<2, 3, 4> as SwapAxes<Axis<0>, Axis<2>>>::Output,
            Rank3<4, 3, 2>,
        >());
        assert!(same::<
            <Rank3<2, 3, 4> as PermuteTo<(Axis<2>, Axis<0>, Axis<1>)>>::Output,
            Rank3<4, 2, 3>,
        >());
        assert!(same::<
            <(Const<3>,) as BroadcastShapes<Rank2<2, 3>>>::Output,
            Rank2<2, 3>,
        >());
        assert!(same::<
            <Rank3<5, 2, 3> as MatMulShape<Rank2<3, 7>>>::Output,
            Rank3<5, 2, 7>,
        >());
        assert!(same::<
            <(Const<1>,) as InsertAxis<Axis<1>>>::Output<Const<4>>,
            Rank2<1, 4>,
        >());
    }

    #[test]
    fn const_helpers() {
        let p = [2, 0, 1, 0, 0, 0];
        assert!(is_permutation(p, 3));
        assert!(!is_permutation([0, 0, 1, 0, 0, 0], 3));
        assert!(broadcast_static_ok(
            [Some(1), Some(3), Some(1), Some(1), Some(1), Some(1)],
            2,
            [Some(4), Some(3), Some(1), Some(1), Some(1), Some(1)],
            2
        ));
        assert!(!broadcast_static_ok(
            [Some(2), Some(1), Some(1), Some(1), Some(1), Some(1)],
            1,
            [Some(4), Some(3), Some(1), Some(1), Some(1), Some(1)],
            2
        ));
        assert!(narrow_static_ok(Some(5), 3, 2));
        assert!(!narrow_static_ok(Some(5), 4, 2));
        assert!(concat_static_ok(Some(2), Some(3), Some(5)));
        assert!(!concat_static_ok(Some(2), Some(3), Some(6)));
    }
}
