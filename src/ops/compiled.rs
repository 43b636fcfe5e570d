//! Host kernels compiled in the library, once per element type, instead of in every crate that uses them.
//!
//! Release builds share no generic code between crates: every (element type, op) loop a model reaches is compiled
//! again in the model's crate, with its AVX-512 and AVX2 clones, its strided walks and its thread split. For `f32`
//! the library compiles the ones nearly every model runs here (add, sub, mul, div, ReLU's gradient, neg, sqr, ReLU,
//! affine, the comparisons and the CPU matmul; the core `copy` has its own, in `device::host::kernels`), into a
//! table of plain function pointers held by a `static`
//! ([`F32`]). The `Cpu`'s kernel entry asks a constant, whether `T` has a table ([`has_table`]) and the op's place
//! in the table (`COMPILED`), and then either calls the table's entry (read at run time, so the user's crate links the
//! library's code) or runs its own loop; the branch not taken is never compiled. Other element types, and ops
//! outside the lists below, compile where they are used, as before; `Embedded` keeps every loop inline, where its
//! static shapes fold into straight-line code.
//!
//! Each entry costs the library's own build about 0.2 s of CPU whether a model uses it or not, and saves about as
//! much in each model that does (benches/README.md, "Compile time of a statically shaped model"): hence the short
//! list, and `f32` only.
//!
//! Adding an op to a table: list it in `compiled_tables!` below and give its `UnaryOp` / `BinaryOp` impl
//! `const COMPILED = compiled::unary_index(NAME)` (the op macros in `ops/elementwise` do this for theirs). A test
//! checks every entry against the op it is listed as.

use crate::device::Operand;
use crate::dtype::{FloatDType, WithDType};
use crate::layout::Layout;
use crate::ops::elementwise::host;
use crate::ops::{Affine, BinaryOp, CmpOp, UnaryOp};
use core::mem::MaybeUninit;

/// A unary op's loop: the op's scalar parameters ([`UnaryOp::params`]), its operand, its output.
pub(crate) type UnaryFn<T> = fn([T; 2], Operand<'_, [T]>, &mut [MaybeUninit<T>]);
/// A parameterless binary op's loop.
pub(crate) type BinaryFn<T> = fn(Operand<'_, [T]>, (&[T], &Layout), &mut [MaybeUninit<T>]);
/// A comparison's loop.
pub(crate) type CompareFn<T> = fn(CmpOp, (&[T], &Layout), (&[T], &Layout), &mut [MaybeUninit<u8>]);
/// The CPU's matmul (`[B, M, K] x [B, K, N]`).
pub(crate) type MatmulFn<T> = fn(&[T], &Layout, &[T], &Layout, &mut [MaybeUninit<T>]);

/// A unary op rebuilt from its scalar parameters, so that one function-pointer type serves every op in a table.
pub(crate) trait FromParams<T: WithDType>: UnaryOp<T> {
    fn from_params(params: [T; 2]) -> Self;
}

fn unary_of<T: WithDType, Op: FromParams<T>>(
    params: [T; 2],
    src: Operand<'_, [T]>,
    out: &mut [MaybeUninit<T>],
) {
    host::unary(Op::from_params(params), src, out)
}

fn binary_of<T: WithDType, Op: BinaryOp<T> + Default>(
    lhs: Operand<'_, [T]>,
    rhs: (&[T], &Layout),
    out: &mut [MaybeUninit<T>],
) {
    host::binary(Op::default(), lhs, rhs, out)
}

/// Defines [`Compiled`] with a table entry for each op listed, the ops' [`FromParams`] impls, and the lookups
/// of an op's place by name.
macro_rules! compiled_tables {
    (
        unary: $($u:ident),* ;
        unary with params: $($p:ty => |$pp:ident| $rebuild:expr),* ;
        binary: $($b:ident),* $(;)?
    ) => {
        /// The host kernels the library compiles for one element type (see the module docs). Reached through
        /// [`table`].
        #[doc(hidden)]
        pub struct Compiled<T: 'static> {
            pub(crate) unary: [UnaryFn<T>; [$(stringify!($u),)* $(stringify!($p)),*].len()],
            pub(crate) binary: [BinaryFn<T>; [$(stringify!($b)),*].len()],
            pub(crate) compare: CompareFn<T>,
            pub(crate) matmul: MatmulFn<T>,
        }

        impl<T: FloatDType> Compiled<T> {
            /// The table of a float type: every entry compiled for `T`.
            const FLOAT: Self = Compiled {
                unary: [$(unary_of::<T, crate::ops::$u>,)* $(unary_of::<T, $p>),*],
                binary: [$(binary_of::<T, crate::ops::$b>),*],
                compare: host::compare::<T>,
                matmul: crate::ops::matmul::cpu::matmul_loop::<T>,
            };
            /// The names of the unary ops in the tables, in table order.
            const UNARY_NAMES: &[&str] = &[
                $(<crate::ops::$u as UnaryOp<T>>::NAME,)*
                $(<$p as UnaryOp<T>>::NAME),*
            ];
            /// The names of the binary ops in the tables, in table order.
            const BINARY_NAMES: &[&str] = &[$(<crate::ops::$b as BinaryOp<T>>::NAME),*];
        }

        $(
            impl<T: FloatDType> FromParams<T> for crate::ops::$u {
                #[inline(always)]
                fn from_params(_: [T; 2]) -> Self {
                    crate::ops::$u
                }
            }
        )*
        $(
            impl<T: FloatDType> FromParams<T> for $p {
                #[inline(always)]
                fn from_params($pp: [T; 2]) -> Self {
                    $rebuild
                }
            }
        )*
    };
}

compiled_tables! {
    unary: Neg, Sqr, Relu;
    unary with params: Affine<T> => |p| Affine { mul: p[0], add: p[1] };
    binary: Add, Sub, Mul, Div, ReluBackward;
}

/// `f32`'s table.
pub(crate) static F32: Compiled<f32> = Compiled::FLOAT;

/// Where the unary op named `name` sits in the tables (`None`: compiled where it is used).
pub(crate) const fn unary_index(name: &str) -> Option<usize> {
    position(Compiled::<f32>::UNARY_NAMES, name)
}

/// Where the binary op named `name` sits in the tables (`None`: compiled where it is used).
pub(crate) const fn binary_index(name: &str) -> Option<usize> {
    position(Compiled::<f32>::BINARY_NAMES, name)
}

const fn position(names: &[&str], name: &str) -> Option<usize> {
    let mut i = 0;
    while i < names.len() {
        if same(names[i].as_bytes(), name.as_bytes()) {
            return Some(i);
        }
        i += 1;
    }
    None
}

const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

// The `Cpu`'s loops: each calls the library's compiled copy where `T`'s table has one (a constant condition, so
// the other branch is not compiled at all), else runs the loop of `ops::elementwise::host` in the caller's crate.

#[inline]
pub(crate) fn unary<T: WithDType, Op: UnaryOp<T>>(
    op: Op,
    src: Operand<'_, [T]>,
    out: &mut [MaybeUninit<T>],
) {
    if const { has_table::<T>() && Op::COMPILED.is_some() } {
        (table::<T>().unary[index(Op::COMPILED)])(op.params(), src, out)
    } else {
        host::unary(op, src, out)
    }
}

#[inline]
pub(crate) fn binary<T: WithDType, Op: BinaryOp<T>>(
    op: Op,
    lhs: Operand<'_, [T]>,
    rhs: (&[T], &Layout),
    out: &mut [MaybeUninit<T>],
) {
    if const { has_table::<T>() && Op::COMPILED.is_some() } {
        (table::<T>().binary[index(Op::COMPILED)])(lhs, rhs, out)
    } else {
        host::binary(op, lhs, rhs, out)
    }
}

#[inline]
pub(crate) fn compare<T: WithDType>(
    op: CmpOp,
    lhs: (&[T], &Layout),
    rhs: (&[T], &Layout),
    out: &mut [MaybeUninit<u8>],
) {
    if const { has_table::<T>() } {
        (table::<T>().compare)(op, lhs, rhs, out)
    } else {
        host::compare(op, lhs, rhs, out)
    }
}

/// `where` has no compiled copy: it is rare in a model and cheap to compile.
pub(crate) use host::where_cond;

/// True when the library compiles a table for `T` (`f32`): a constant, so the branch not taken is not compiled.
/// The element types know nothing of it, so `dtype` stays a leaf below the devices.
pub(crate) const fn has_table<T: WithDType>() -> bool {
    matches!(T::DTYPE, crate::dtype::DType::F32)
}

/// `T`'s table; only reached under [`has_table`], where `T` is `f32` (the types are sealed: one per tag).
#[inline(always)]
pub(crate) fn table<T: WithDType>() -> &'static Compiled<T> {
    match (&F32 as &dyn core::any::Any).downcast_ref::<Compiled<T>>() {
        Some(table) => table,
        None => unreachable!("typed-tensor internal error: no compiled host kernels for this type"),
    }
}

/// An op's place; only reached under `Op::COMPILED.is_some()`.
#[inline(always)]
fn index(compiled: Option<usize>) -> usize {
    match compiled {
        Some(i) => i,
        None => unreachable!("typed-tensor internal error: no compiled kernel for this op"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops;

    /// The `Cpu`'s f32 loops reach the library's table, and no other type asks for one.
    #[test]
    fn f32_alone_has_the_table() {
        assert!(const { has_table::<f32>() });
        assert!(core::ptr::eq(table::<f32>(), &F32));
        assert!(!has_table::<f64>() && !has_table::<half::f16>() && !has_table::<i64>());
    }

    fn unary_entry<Op: UnaryOp<f32>>(op: Op, xs: &[f32]) {
        let i = Op::COMPILED.unwrap_or_else(|| panic!("{} is not in the table", Op::NAME));
        assert_eq!(Compiled::<f32>::UNARY_NAMES[i], Op::NAME);
        let dims = crate::shape::Dims::from_slice(&[xs.len()]);
        // Every other element through a strided view (column 0 of a (4, 2) layout), and in place.
        let strided = Layout::contiguous(crate::shape::Dims::from_slice(&[xs.len() / 2, 2]))
            .narrow("test", 1, 0, 1)
            .unwrap();
        let mut out = [MaybeUninit::new(0.0f32); 8];
        (F32.unary[i])(op.params(), Operand::View(xs, &strided), &mut out);
        let every_other: alloc::vec::Vec<f32> = xs.iter().step_by(2).copied().collect();
        let mut in_place = [MaybeUninit::new(0.0f32); 8];
        for (o, &x) in in_place.iter_mut().zip(xs) {
            o.write(x);
        }
        (F32.unary[i])(op.params(), Operand::Out(&dims), &mut in_place);
        for (out, xs, form) in [
            (&out[..4], &every_other[..], "strided"),
            (&in_place[..], xs, "in place"),
        ] {
            for (o, &x) in out.iter().zip(xs) {
                // SAFETY: the kernel wrote (or, in place, kept) every element.
                let (got, want) = (unsafe { o.assume_init() }, op.apply(x));
                assert!(
                    got == want || (got.is_nan() && want.is_nan()),
                    "{} {form}({x}): {got} != {want}",
                    Op::NAME
                );
            }
        }
    }

    fn binary_entry<Op: BinaryOp<f32>>(op: Op, xs: &[f32], ys: &[f32]) {
        let i = Op::COMPILED.unwrap_or_else(|| panic!("{} is not in the table", Op::NAME));
        assert_eq!(Compiled::<f32>::BINARY_NAMES[i], Op::NAME);
        let dims = crate::shape::Dims::from_slice(&[xs.len()]);
        let layout = Layout::contiguous(dims);
        let check = |out: &[MaybeUninit<f32>], ys: &mut dyn Iterator<Item = f32>, form: &str| {
            for (o, (&x, y)) in out.iter().zip(xs.iter().zip(ys)) {
                // SAFETY: the kernel wrote (or, in place, kept) every element.
                let (got, want) = (unsafe { o.assume_init() }, op.apply(x, y));
                assert!(
                    got == want || (got.is_nan() && want.is_nan()),
                    "{} {form}({x}, {y}): {got} != {want}",
                    Op::NAME
                );
            }
        };
        let mut out = [MaybeUninit::new(0.0f32); 8];
        (F32.binary[i])(Operand::View(xs, &layout), (ys, &layout), &mut out);
        check(&out, &mut ys.iter().copied(), "");
        // In place, over a broadcast operand (one value read with stride 0): the loops `+=` with a scalar runs.
        let one = Layout::contiguous(crate::shape::Dims::from_slice(&[1]))
            .broadcast_as("test", &dims)
            .unwrap();
        let mut out = [MaybeUninit::new(0.0f32); 8];
        for (o, &x) in out.iter_mut().zip(xs) {
            o.write(x);
        }
        (F32.binary[i])(Operand::Out(&dims), (&ys[..1], &one), &mut out);
        check(&out, &mut core::iter::repeat(ys[0]), "in place");
    }

    /// Each entry computes the op whose name it is listed under (a slip in the lists would call another op).
    #[test]
    fn entries_are_their_ops() {
        let xs = [-2.5f32, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, f32::NAN];
        let ys = [1.5f32, -3.0, 2.0, -0.5, 0.25, 1.0, -4.0, 2.0];
        unary_entry(ops::Neg, &xs);
        unary_entry(ops::Sqr, &xs);
        unary_entry(ops::Relu, &xs);
        unary_entry(
            Affine {
                mul: 2.0,
                add: -1.0,
            },
            &xs,
        );
        assert_eq!(
            Compiled::<f32>::UNARY_NAMES.len(),
            4,
            "a listed unary op without a check here"
        );
        binary_entry(ops::Add, &xs, &ys);
        binary_entry(ops::Sub, &xs, &ys);
        binary_entry(ops::Mul, &xs, &ys);
        binary_entry(ops::Div, &xs, &ys);
        binary_entry(ops::ReluBackward, &xs, &ys);
        assert_eq!(
            Compiled::<f32>::BINARY_NAMES.len(),
            5,
            "a listed binary op without a check here"
        );
        // Ops left out of the tables say so.
        assert_eq!(<ops::Sin as UnaryOp<f32>>::COMPILED, None);
        assert_eq!(<ops::Clamp<f32> as UnaryOp<f32>>::COMPILED, None);
        assert_eq!(<ops::Maximum as BinaryOp<f32>>::COMPILED, None);
    }
}
