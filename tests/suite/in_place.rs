//! In-place (`+=`, `unary_assign`) and `_into` forms of the elementwise ops: the same values as the allocating
//! ops on every view kind and dtype; buffers reused only when nothing else can observe the write; large inputs
//! (split across threads on the CPU) against element-by-element references.

use crate::common::*;
use typed_tensor::ops::{self, Exp, Neg};
use typed_tensor::prelude::*;
use typed_tensor::shape::AssignShapes;

type AssignFn<T, S, D> = fn(&mut Tensor<T, S, D>, &Tensor<T, S, D>);
type BinFn<T, S, D> = fn(&Tensor<T, S, D>, &Tensor<T, S, D>) -> Tensor<T, S, D>;
type IntoFn<T, S, D> = fn(&Tensor<T, S, D>, &Tensor<T, S, D>, &mut Tensor<T, S, D>);
/// An op's name, its `+=` form, its `_into` form and its allocating form.
type Case<T, S, D> = (
    &'static str,
    AssignFn<T, S, D>,
    IntoFn<T, S, D>,
    BinFn<T, S, D>,
);

/// The four arithmetic ops in each form, for tensors of shape `S`.
fn arithmetic<T: WithDType, S: AssignShapes<S>, D: Device>() -> [Case<T, S, D>; 4] {
    [
        (
            "add",
            |a, b| *a += b,
            |a, b, o| a.add_into(b, o),
            |a, b| a + b,
        ),
        (
            "sub",
            |a, b| *a -= b,
            |a, b, o| a.sub_into(b, o),
            |a, b| a - b,
        ),
        (
            "mul",
            |a, b| *a *= b,
            |a, b, o| a.mul_into(b, o),
            |a, b| a * b,
        ),
        (
            "div",
            |a, b| *a /= b,
            |a, b, o| a.div_into(b, o),
            |a, b| a / b,
        ),
    ]
}

/// `a op &b` with `a` by value.
fn owned_op<T: WithDType, D: Device>(
    name: &str,
    a: Tensor<T, Mat, D>,
    b: &Tensor<T, Mat, D>,
) -> Tensor<T, Mat, D> {
    match name {
        "add" => a + b,
        "sub" => a - b,
        "mul" => a * b,
        "div" => a / b,
        _ => unreachable!("{name}"),
    }
}

fn assign_and_into<T: WithDType, D: Device>() {
    let (lo, hi) = if T::DTYPE.is_int() {
        (0.0, 100.0)
    } else {
        (0.5, 8.0)
    };
    let cases = arithmetic::<T, Mat, D>();
    let lhs = views::<T, D>(31, lo, hi);
    let rhs = views::<T, D>(32, lo, hi);
    for (name, assign, into, fresh) in cases {
        for a in &lhs {
            for b in &rhs {
                let what = format!("{name} on {} x {} ({:?})", a.kind, b.kind, T::DTYPE);
                let want = fresh(&a.tensor, &b.tensor).to_vec();

                // In place on a copy the test alone holds, and on a view that shares its buffer with `a`.
                let mut owned = Tensor::<T, Mat, D>::from_vec(a.expected.clone()).unwrap();
                assign(&mut owned, &b.tensor);
                assert_eq!(owned.to_vec(), want, "{what}: assign");
                let mut shared = a.tensor.clone();
                assign(&mut shared, &b.tensor);
                assert_eq!(shared.to_vec(), want, "{what}: assign on a shared view");
                assert_eq!(a.tensor.to_vec(), a.expected, "{what}: the sharer changed");

                // The owned operator forms (`a + &b`, `a + b`), which lend an unshared dense left operand's
                // buffer to the result: on a copy the test alone holds, and on a view whose sharer must not change.
                let owned = Tensor::<T, Mat, D>::from_vec(a.expected.clone()).unwrap();
                assert_eq!(
                    owned_op(name, owned, &b.tensor).to_vec(),
                    want,
                    "{what}: owned lhs"
                );
                assert_eq!(
                    owned_op(name, a.tensor.clone(), &b.tensor).to_vec(),
                    want,
                    "{what}: owned lhs sharing its buffer"
                );
                assert_eq!(
                    a.tensor.to_vec(),
                    a.expected,
                    "{what}: the owned lhs's sharer changed"
                );

                // Into a dense output, a shared one, and a transposed view.
                let mut out = Tensor::<T, Mat, D>::zeros();
                into(&a.tensor, &b.tensor, &mut out);
                assert_eq!(out.to_vec(), want, "{what}: into");
                let mut out_shared = out.clone();
                into(&b.tensor, &a.tensor, &mut out_shared);
                assert_eq!(out.to_vec(), want, "{what}: the output's sharer changed");
                let mut out_t = Tensor::<T, Rank2<N, M>, D>::zeros().t();
                into(&a.tensor, &b.tensor, &mut out_t);
                assert_eq!(out_t.to_vec(), want, "{what}: into a transposed view");
            }
        }
    }
    // Scalars, and unary ops in place / into, checked against the allocating forms.
    for a in &lhs {
        let mut x = a.tensor.clone();
        x += T::ONE;
        x *= T::from_f64(3.0);
        assert_eq!(
            x.to_vec(),
            ((&a.tensor + T::ONE) * T::from_f64(3.0)).to_vec()
        );
        let mut y = a.tensor.clone();
        y.unary_assign(ops::Sqr);
        assert_eq!(
            y.to_vec(),
            a.tensor.sqr().to_vec(),
            "sqr in place on {}",
            a.kind
        );
        let mut out = Tensor::<T, Mat, D>::zeros();
        a.tensor.unary_into(ops::Sqr, &mut out);
        assert_eq!(
            out.to_vec(),
            a.tensor.sqr().to_vec(),
            "sqr into on {}",
            a.kind
        );
    }
}

fn assign_and_into_all<D: Device>() {
    assign_and_into::<u8, D>();
    assign_and_into::<u32, D>();
    assign_and_into::<i8, D>();
    assign_and_into::<i32, D>();
    assign_and_into::<i64, D>();
    assign_and_into::<f16, D>();
    assign_and_into::<bf16, D>();
    assign_and_into::<f32, D>();
    assign_and_into::<f64, D>();
}

/// `copy_from` writes every view kind's values: into the destination's own buffer when it alone holds it
/// (on the CPU the address stays), as a fresh copy when it shares it (the sharer keeps its values); a runtime
/// dim mismatch is an error naming the op.
fn copy_from<T: WithDType, D: Device>() {
    for src in views::<T, D>(33, 0.0, 50.0) {
        let what = format!("copy_from {} ({:?})", src.kind, T::DTYPE);
        let mut dst = Tensor::<T, Mat, D>::zeros();
        dst.copy_from(&src.tensor);
        assert_eq!(dst.to_vec(), src.expected, "{what}");
        let keep = dst.clone();
        let mut shared = dst.clone();
        shared.copy_from(&(&src.tensor + T::ONE));
        assert_eq!(keep.to_vec(), src.expected, "{what}: the sharer changed");
        assert_eq!(
            shared.to_vec(),
            (&src.tensor + T::ONE).to_vec(),
            "{what}: shared"
        );
    }
    let mut rows = Tensor::<T, (usize, Const<3>), D>::zeros_with_shape((2, Const));
    let other = Tensor::<T, (usize, Const<3>), D>::zeros_with_shape((4, Const));
    let err = rows.try_copy_from(&other).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ShapeMismatch {
                op: "copy_from",
                ..
            }
        ),
        "{err}"
    );
}

fn copy_from_all<D: Device>() {
    copy_from::<u8, D>();
    copy_from::<u32, D>();
    copy_from::<i8, D>();
    copy_from::<i32, D>();
    copy_from::<i64, D>();
    copy_from::<f16, D>();
    copy_from::<bf16, D>();
    copy_from::<f32, D>();
    copy_from::<f64, D>();
}

type Tiny = Rank2<2, 4>; // 8 elements: at most 64 bytes in every dtype, the tiny path's size

/// On tiny static tensors the in-place and `_into` forms run a loop of known length instead of the kernel: the
/// same values as the allocating ops, the sharer of the written tensor unchanged, and strided operands and
/// outputs (which take the kernel) alike.
fn tiny_assign_and_into<T: WithDType, D: Device>() {
    type T2<T, D> = Tensor<T, Tiny, D>;
    let mut rng = Rng::new(41);
    let mut draw = || -> Vec<T> {
        let (lo, hi) = if T::DTYPE.is_int() {
            (1.0, 100.0)
        } else {
            (0.5, 8.0)
        };
        rng.vec(8, lo, hi).into_iter().map(T::from_f64).collect()
    };
    let (va, vb) = (draw(), draw());
    let dense = |v: &[T]| T2::<T, D>::from_vec(v.to_vec()).unwrap();
    // The same values through a transposed view of a (4, 2) buffer.
    let strided = |v: &[T]| {
        let t =
            Tensor::<T, Rank2<4, 2>, D>::from_vec((0..8).map(|k| v[(k % 2) * 4 + k / 2]).collect())
                .unwrap()
                .t();
        assert!(t.is_contiguous() != views_share::<D>() && t.to_vec() == v);
        t
    };
    let cases = arithmetic::<T, Tiny, D>();
    let (a, a_t, b, b_t) = (dense(&va), strided(&va), dense(&vb), strided(&vb));
    for (name, assign, into, fresh) in cases {
        for (lhs, rhs, kinds) in [
            (&a, &b, "dense x dense"),
            (&a, &b_t, "dense x strided"),
            (&a_t, &b, "strided x dense"),
        ] {
            let what = format!("{name} on {kinds} ({:?})", T::DTYPE);
            let want = fresh(lhs, rhs).to_vec();
            let mut x = lhs.clone();
            let keep = x.clone();
            assign(&mut x, rhs);
            assert_eq!(x.to_vec(), want, "{what}: assign");
            assert_eq!(keep.to_vec(), va, "{what}: the sharer changed");
            let mut out = T2::<T, D>::zeros();
            into(lhs, rhs, &mut out);
            assert_eq!(out.to_vec(), want, "{what}: into");
            let mut out_t = Tensor::<T, Rank2<4, 2>, D>::zeros().t();
            into(lhs, rhs, &mut out_t);
            assert_eq!(out_t.to_vec(), want, "{what}: into a transposed view");
        }
    }
    for lhs in [&a, &a_t] {
        let mut x = lhs.clone();
        x += T::ONE;
        x *= T::from_f64(3.0);
        x -= T::ONE;
        x /= T::from_f64(2.0);
        let want = ((((lhs + T::ONE) * T::from_f64(3.0)) - T::ONE) / T::from_f64(2.0)).to_vec();
        assert_eq!(x.to_vec(), want, "scalars in place ({:?})", T::DTYPE);
        let mut y = lhs.clone();
        y.unary_assign(ops::Sqr);
        assert_eq!(
            y.to_vec(),
            lhs.sqr().to_vec(),
            "sqr in place ({:?})",
            T::DTYPE
        );
        let mut out = T2::<T, D>::zeros();
        lhs.unary_into(ops::Sqr, &mut out);
        assert_eq!(
            out.to_vec(),
            lhs.sqr().to_vec(),
            "sqr into ({:?})",
            T::DTYPE
        );
    }
    // Element by element against the values themselves (sums under 200: exact in every dtype but i8, where
    // they wrap as the cast rules say).
    let mut x = a.clone();
    x += &b;
    for ((g, &p), &q) in x.to_vec().iter().zip(&va).zip(&vb) {
        let w = p.to_f64() + q.to_f64();
        let w = if T::DTYPE.is_int() {
            T::from_i64(w as i64).to_f64()
        } else {
            w
        };
        assert!(
            (g.to_f64() - w).abs() <= 1e-2 * w.abs(),
            "add in place ({:?}): {g} vs {w}",
            T::DTYPE
        );
    }
}

fn tiny_assign_and_into_all<D: Device>() {
    tiny_assign_and_into::<u8, D>();
    tiny_assign_and_into::<u32, D>();
    tiny_assign_and_into::<i8, D>();
    tiny_assign_and_into::<i32, D>();
    tiny_assign_and_into::<i64, D>();
    tiny_assign_and_into::<f16, D>();
    tiny_assign_and_into::<bf16, D>();
    tiny_assign_and_into::<f32, D>();
    tiny_assign_and_into::<f64, D>();
}

fn broadcast_assign<D: Device>() {
    let mut a = Tensor::<f32, _, D>::from_array([[1., 2., 3.], [4., 5., 6.]]);
    a += Tensor::<f32, _, D>::from_array([10., 20., 30.]);
    assert_eq!(a.to_array(), [[11., 22., 33.], [14., 25., 36.]]);
    a -= &Tensor::<f32, Rank0, D>::full(1.0);
    assert_eq!(a.to_array(), [[10., 21., 32.], [13., 24., 35.]]);
    // Owned left operands: `rhs` broadcast onto it (its buffer can hold the result), and it broadcast onto the
    // larger `rhs` (a fresh buffer); both with the allocating form's values.
    let m = Tensor::<f32, _, D>::from_array([[1., 2., 3.], [4., 5., 6.]]);
    let row = Tensor::<f32, _, D>::from_array([10., 20., 30.]);
    assert_eq!((m.clone() * &row).to_vec(), (&m * &row).to_vec());
    assert_eq!((row.clone() - m.clone()).to_vec(), (&row - &m).to_vec());
    // Runtime dims: a mismatch is an error naming the op and both shapes.
    let mut r = Tensor::<f32, (usize,), D>::from_vec_with_shape((2,), vec![1.0, 2.0]).unwrap();
    let s = Tensor::<f32, (usize,), D>::from_vec_with_shape((3,), vec![1.0, 2.0, 3.0]).unwrap();
    let err = r.try_binary_assign(ops::Add, &s).unwrap_err().to_string();
    assert!(
        err.contains("add") && err.contains("[2]") && err.contains("[3]"),
        "{err}"
    );
    let mut o = Tensor::<f32, (usize,), D>::from_vec_with_shape((5,), vec![0.0; 5]).unwrap();
    r.try_binary_into(ops::Mul, &r.clone(), &mut o).unwrap();
    assert_eq!(
        o.to_vec(),
        [1.0, 4.0],
        "a runtime-sized output of another size is replaced"
    );
}

/// Sizes around and above the threading threshold, with a broadcast row, against per-element references.
fn large<D: Device>() {
    const R: usize = 300;
    const C: usize = 1001; // odd, so chunks do not line up with rows
    let a: Tensor<f32, Rank2<R, C>, D> = random(41);
    let b: Tensor<f32, Rank2<R, C>, D> = random(42);
    let row: Tensor<f32, Rank1<C>, D> = random(43);
    let (va, vb, vr) = (a.to_vec(), b.to_vec(), row.to_vec());
    let sum: Vec<f32> = va.iter().zip(&vb).map(|(x, y)| x + y).collect();
    assert_eq!((&a + &b).to_vec(), sum);
    let biased: Vec<f32> = va.iter().enumerate().map(|(k, x)| x * vr[k % C]).collect();
    assert_eq!((&a * &row).to_vec(), biased);
    let mut c = a.clone();
    c *= &row;
    assert_eq!(c.to_vec(), biased);
    let mut d = a.clone();
    d.unary_assign(Exp);
    assert_eq!(d.to_vec(), a.exp().to_vec());
    let mut e = Tensor::<f32, Rank2<R, C>, D>::zeros();
    a.add_into(&b, &mut e);
    assert_eq!(e.to_vec(), sum);
    // A transposed large operand goes through the strided walk.
    let at: Tensor<f32, Rank2<C, R>, D> = a.t();
    let bt: Tensor<f32, Rank2<C, R>, D> = b.t();
    let got = (&at + &bt).t().to_vec();
    assert_eq!(got, sum);
}

device_tests! {
    assign_and_into_every_view_and_dtype => assign_and_into_all;
    tiny_assign_and_into_match_the_allocating_ops => tiny_assign_and_into_all;
    assign_broadcasts_rhs_and_checks_runtime_dims => broadcast_assign;
    large_inputs_match_references => large;
    copy_from_writes_every_view_and_dtype => copy_from_all;
}

/// On the CPU a heap buffer that only its tensor holds is written in place; a shared one is not.
#[test]
fn cpu_reuses_only_unshared_buffers() {
    // 32 f32 = 128 bytes: past the inline size, so the buffer is on the heap and clones share it.
    let mut a = Tensor::<f32, Rank1<32>, Cpu>::ones();
    assert!(!a.storage().is_inline());
    let before = a.storage().as_ptr();
    a += 1.0;
    a.unary_assign(Exp);
    assert_eq!(a.storage().as_ptr(), before, "a unique buffer is reused");
    let snapshot = a.to_vec();
    a.copy_from(&Tensor::full(5.0));
    assert_eq!(
        a.storage().as_ptr(),
        before,
        "copy_from writes a unique buffer in place"
    );
    assert_eq!(a.to_vec(), [5.0; 32]);
    a.copy_from(&Tensor::from_vec(snapshot).unwrap());
    let keep = a.clone();
    a += 1.0;
    assert_ne!(
        a.storage().as_ptr(),
        before,
        "a shared buffer is not written"
    );
    assert_eq!(keep.storage().as_ptr(), before);
    assert_eq!(keep.to_vec(), [2f32.exp(); 32]);

    let mut out = Tensor::<f32, Rank1<32>, Cpu>::zeros();
    let out_ptr = out.storage().as_ptr();
    keep.mul_into(&keep, &mut out);
    assert_eq!(
        out.storage().as_ptr(),
        out_ptr,
        "an unshared output is reused"
    );
}

/// An owned left operand lends the result its heap buffer when it alone holds it densely; a shared one, a
/// transposed view or one that `rhs` broadcasts into a larger result does not.
#[test]
fn cpu_owned_operands_lend_unshared_buffers() {
    let a = Tensor::<f32, Rank2<4, 8>, Cpu>::ones();
    let b = Tensor::<f32, Rank1<8>, Cpu>::full(2.0);
    let before = a.storage().as_ptr();
    let c = a + &b;
    assert_eq!(c.storage().as_ptr(), before, "an unshared lhs is reused");
    assert_eq!(c.to_vec(), [3.0; 32]);
    let keep = c.clone();
    let d = c * &b;
    assert_ne!(d.storage().as_ptr(), before, "a shared lhs is not written");
    assert_eq!(keep.to_vec(), [3.0; 32]);
    assert_eq!(d.to_vec(), [6.0; 32]);
    let t = Tensor::<f32, Rank2<8, 4>, Cpu>::ones().t();
    let t_ptr = t.storage().as_ptr();
    let e = t + &Tensor::<f32, Rank2<4, 8>, Cpu>::ones();
    assert_ne!(
        e.storage().as_ptr(),
        t_ptr,
        "a transposed lhs is not written"
    );
    assert_eq!(e.to_vec(), [2.0; 32]);
    let row = Tensor::<f32, Rank1<8>, Cpu>::ones();
    let f = row + &Tensor::<f32, Rank2<4, 8>, Cpu>::ones();
    assert_eq!(
        f.to_vec(),
        [2.0; 32],
        "a lhs broadcast into a larger result"
    );
}

/// Small tensors keep their elements inline: a clone is a copy, so writing one never shows in the other.
#[test]
fn cpu_inline_buffers_are_never_shared() {
    let mut a = Tensor::<f32, Rank1<4>, Cpu>::from_array([1., 2., 3., 4.]);
    assert!(a.storage().is_inline());
    let keep = a.clone();
    a += 1.0;
    a.unary_assign(Neg);
    assert_eq!(a.to_vec(), [-2., -3., -4., -5.]);
    assert_eq!(keep.to_vec(), [1., 2., 3., 4.]);
    let mut out = Tensor::<f32, Rank1<4>, Cpu>::zeros();
    keep.mul_into(&keep, &mut out);
    assert_eq!(out.to_vec(), [1., 4., 9., 16.]);
    assert!(out.storage().is_inline());
}

embedded_tests! {
    assign_and_into_every_view_and_dtype => assign_and_into_all;
    tiny_assign_and_into_match_the_allocating_ops => tiny_assign_and_into_all;
}
