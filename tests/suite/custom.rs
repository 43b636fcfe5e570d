//! Ops written outside the crate (`ops::custom`): a user's kernels run on every view and dtype they implement,
//! shape-changing ops check their output type, errors come back from the `try_` forms, and the backward kernel
//! trains (finite differences, shared parameters, strided inputs). The CUDA kernels of a user crate are tested in
//! examples/custom-op.

use crate::common::{assert_close, panic_message, views};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use typed_tensor::autograd::{check_gradient, Traced, Var};
use typed_tensor::ops::custom::{
    CustomOp1, CustomOp1Backward, CustomOp2, CustomOp2Backward, HostView,
};
use typed_tensor::prelude::*;
use typed_tensor::shape::Dims;

/// `y = x * x + 1` for every element type, by `f64` (exact for the values drawn here).
#[derive(Clone, Copy)]
struct SquarePlusOne;

impl<T: WithDType> CustomOp1<T> for SquarePlusOne {
    fn name(&self) -> &'static str {
        "square_plus_one"
    }
    fn cpu_forward(&self, x: HostView<'_, T>, y: &mut [T]) -> Result<()> {
        assert_eq!(x.data.len(), x.dims.numel(), "the input is dense");
        assert_eq!(y.len(), x.data.len());
        assert!(
            y.iter().all(|v| v.to_f64() == 0.0),
            "the output starts zeroed"
        );
        for (y, &x) in y.iter_mut().zip(x.data) {
            *y = T::from_f64(x.to_f64() * x.to_f64() + 1.0);
        }
        Ok(())
    }
}

impl<T: FloatDType> CustomOp1Backward<T> for SquarePlusOne {
    fn cpu_backward(
        &self,
        x: HostView<'_, T>,
        y: HostView<'_, T>,
        dy: HostView<'_, T>,
        dx: &mut [T],
    ) -> Result<()> {
        assert_eq!((x.dims, y.dims, dy.dims), (x.dims, x.dims, x.dims));
        for ((dx, &x), &dy) in dx.iter_mut().zip(x.data).zip(dy.data) {
            *dx = T::from_f64(2.0 * x.to_f64() * dy.to_f64());
        }
        Ok(())
    }
}

fn forward_on_every_view<T: WithDType, D: Device>() {
    for view in views::<T, D>(7, -3.0, 3.0) {
        let y = view.tensor.custom_op(SquarePlusOne);
        let want: Vec<f64> = view
            .expected
            .iter()
            .map(|x| x.to_f64() * x.to_f64() + 1.0)
            .collect();
        assert_close(view.kind, &y.to_vec(), &want);
    }
}

fn forward_every_dtype<D: Device>() {
    forward_on_every_view::<f32, D>();
    forward_on_every_view::<f64, D>();
    forward_on_every_view::<f16, D>();
    forward_on_every_view::<bf16, D>();
    forward_on_every_view::<i32, D>();
    forward_on_every_view::<i64, D>();
}

/// The sum of each row, `(R, C) -> (R,)`, counting its kernel calls.
#[derive(Clone, Default)]
struct RowSum(Arc<AtomicUsize>);

impl CustomOp1<f32> for RowSum {
    fn name(&self) -> &'static str {
        "row_sum"
    }
    fn output_dims(&self, input: &Dims) -> Result<Dims> {
        Ok(Dims::from_slice(&input[..1]))
    }
    fn cpu_forward(&self, x: HostView<'_, f32>, y: &mut [f32]) -> Result<()> {
        self.0.fetch_add(1, Ordering::Relaxed);
        let cols = x.dims[1];
        for (y, row) in y.iter_mut().zip(x.data.chunks(cols)) {
            *y = row.iter().sum();
        }
        Ok(())
    }
}

fn shape_changing_ops_check_their_output_type<D: Device>() {
    let calls = RowSum::default();
    let x = Tensor::<f32, Rank2<2, 3>, D>::from_array([[1., 2., 3.], [4., 5., 6.]]);
    let y: Tensor<f32, Rank1<2>, D> = x.custom_op_to(calls.clone());
    assert_eq!(y.to_vec(), [6., 15.]);
    // Of the transposed view: rows of the (3, 2) view.
    let yt: Tensor<f32, Rank1<3>, D> = x.t().custom_op_to(calls.clone());
    assert_eq!(yt.to_vec(), [5., 7., 9.]);
    let before = calls.0.load(Ordering::Relaxed);
    assert_eq!(before, 2, "one kernel call per op");
    // A type that disagrees: the error names the op, the type's dims and the op's; the kernel never runs.
    let wrong = x
        .try_custom_op_to::<Rank1<3>, _>(calls.clone())
        .unwrap_err();
    assert_eq!(
        wrong.to_string(),
        "row_sum: shapes [3] and [2] do not match"
    );
    let rank = x
        .try_custom_op_to::<Rank2<2, 1>, _>(calls.clone())
        .unwrap_err();
    assert_eq!(
        rank.to_string(),
        "row_sum: shapes [2, 1] and [2] do not match"
    );
    // `custom_op` keeps the shape, so a shape-changing op is refused there too.
    let same = x.try_custom_op(calls.clone()).unwrap_err();
    assert_eq!(
        same.to_string(),
        "row_sum: shapes [2, 3] and [2] do not match"
    );
    assert!(panic_message(|| x.custom_op(calls.clone())).contains("row_sum: shapes [2, 3] and [2]"));
    assert_eq!(calls.0.load(Ordering::Relaxed), before);
}

#[test]
fn runtime_dims_take_the_ops_sizes() {
    let calls = RowSum::default();
    let x = Tensor::<f32, (usize, usize), Cpu>::from_vec_with_shape((2, 2), vec![1., 2., 3., 4.])
        .unwrap();
    let y: Tensor<f32, (usize,), Cpu> = x.custom_op_to(calls.clone());
    assert_eq!(
        (y.dims().as_slice(), y.to_vec()),
        ([2].as_slice(), vec![3., 7.])
    );
    let bad = x
        .try_custom_op_to::<(Const<3>,), _>(calls.clone())
        .unwrap_err();
    assert_eq!(bad.to_string(), "row_sum: shapes [3] and [2] do not match");
}

/// An op whose kernel must never run (every test hands it an empty tensor).
struct NeverCalled;

impl CustomOp1<f32> for NeverCalled {
    fn name(&self) -> &'static str {
        "never_called"
    }
    fn cpu_forward(&self, _: HostView<'_, f32>, _: &mut [f32]) -> Result<()> {
        panic!("a kernel ran on an empty output");
    }
}

#[test]
fn empty_and_empty_but_huge_inputs_run_no_kernel() {
    let x = Tensor::<f32, (usize, usize), Cpu>::zeros_with_shape((0, 1 << 40));
    let y = x.custom_op(NeverCalled);
    assert_eq!(y.dims().as_slice(), [0, 1 << 40]);
    let z = Tensor::<f32, Rank2<0, 3>, Cpu>::zeros()
        .t()
        .custom_op(NeverCalled);
    assert_eq!(z.to_vec(), Vec::<f32>::new());
    // Two inputs, both empty but huge.
    let y2 = x.custom_op2(&x, NeverCalled);
    assert_eq!(y2.dims().as_slice(), [0, 1 << 40]);
}

impl CustomOp2<f32> for NeverCalled {
    fn name(&self) -> &'static str {
        "never_called"
    }
    fn cpu_forward(&self, _: HostView<'_, f32>, _: HostView<'_, f32>, _: &mut [f32]) -> Result<()> {
        panic!("a kernel ran on an empty output");
    }
}

/// An op whose kernels fail: negative inputs are refused by the forward, and its backward always fails.
struct Refuses;

impl CustomOp1<f64> for Refuses {
    fn name(&self) -> &'static str {
        "refuses"
    }
    fn cpu_forward(&self, x: HostView<'_, f64>, y: &mut [f64]) -> Result<()> {
        if x.data.iter().any(|&v| v < 0.0) {
            return Err(Error::InvalidArgument {
                op: "refuses",
                reason: "negative input",
            });
        }
        y.copy_from_slice(x.data);
        Ok(())
    }
}

impl CustomOp1Backward<f64> for Refuses {
    fn cpu_backward(
        &self,
        _: HostView<'_, f64>,
        _: HostView<'_, f64>,
        _: HostView<'_, f64>,
        _: &mut [f64],
    ) -> Result<()> {
        Err(Error::InvalidArgument {
            op: "refuses",
            reason: "no gradient today",
        })
    }
}

#[test]
fn kernel_errors_come_back_from_the_try_forms() {
    let x = Tensor::<f64, _, Cpu>::from_array([1.0, -1.0]);
    let e = x.try_custom_op(Refuses).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { op: "refuses", .. }),
        "{e}"
    );
    assert_eq!(
        panic_message(|| x.custom_op(Refuses)),
        "refuses: negative input"
    );
    let w = Var::new(x.clone());
    assert!(w.trace().try_custom_op(Refuses).is_err());
    // The backward kernel's error panics in `backward()` with its message.
    let ok = Var::new(Tensor::<f64, _, Cpu>::from_array([1.0, 2.0]));
    let loss = ok.trace().custom_op(Refuses).sum::<Axis<0>>();
    assert!(panic_message(|| loss.backward()).contains("refuses: no gradient today"));
}

fn gradient_matches_finite_differences<D: AutogradDevice>() {
    let x = Var::new(Tensor::<f64, Rank2<2, 3>, D>::from_array([
        [0.5, -1.0, 2.0],
        [1.5, 0.25, -0.75],
    ]));
    // Through a transposed view (the op sees it dense), then a weighting so every element's gradient differs.
    let weights = Tensor::<f64, Rank2<3, 2>, D>::from_array([[1., 2.], [3., 4.], [5., 6.]]);
    let worst = check_gradient(&x, 1e-6, || {
        (x.trace().t().custom_op(SquarePlusOne) * &weights).sum_all()
    });
    assert!(worst.error < 1e-7, "{worst:?}");
    // A shared parameter: both uses add into its gradient, d/dx (x^2 + 1)(x^2 + 1) = 4 x (x^2 + 1).
    let g = {
        let y = x.trace().custom_op(SquarePlusOne);
        (&y * &y).sum_all().backward().get(&x).to_vec()
    };
    let want: Vec<f64> = x
        .value()
        .to_vec()
        .iter()
        .map(|v| 4.0 * v * (v * v + 1.0))
        .collect();
    assert_close("shared", &g, &want);
    // On a constant nothing is recorded, so the backward kernel is never asked for.
    let c = Traced::constant(x.value()).custom_op(PanickingBackward);
    assert!(!c.requires_grad());
}

/// The identity, whose backward panics: constants must record nothing.
struct PanickingBackward;

impl<T: FloatDType> CustomOp1<T> for PanickingBackward {
    fn name(&self) -> &'static str {
        "panicking_backward"
    }
    fn cpu_forward(&self, x: HostView<'_, T>, y: &mut [T]) -> Result<()> {
        y.copy_from_slice(x.data);
        Ok(())
    }
}

impl<T: FloatDType> CustomOp1Backward<T> for PanickingBackward {
    fn cpu_backward(
        &self,
        _: HostView<'_, T>,
        _: HostView<'_, T>,
        _: HostView<'_, T>,
        _: &mut [T],
    ) -> Result<()> {
        panic!("a constant's backward ran");
    }
}

/// What an op without a CUDA kernel does on each device: runs on the host ones, `Unsupported` on `Cuda`.
fn host_only_op_on_each_device<D: Device>() {
    let x = Tensor::<f32, Rank1<3>, D>::from_array([1., 2., 3.]);
    match x.try_custom_op(SquarePlusOne) {
        Ok(y) => assert_eq!(y.to_vec(), [2., 5., 10.]),
        Err(e) => {
            assert_eq!(D::NAME, "cuda", "{e}");
            assert!(matches!(
                e,
                Error::Unsupported {
                    op: "square_plus_one",
                    device: "cuda",
                    ..
                }
            ));
        }
    }
}

device_tests! {
    forward2_every_dtype => forward2_every_dtype;
    gradients2_match_finite_differences => gradients2_match_finite_differences;
    forward_every_dtype => forward_every_dtype;
    shape_changing_ops_check_their_output_type => shape_changing_ops_check_their_output_type;
    gradient_matches_finite_differences => gradient_matches_finite_differences;
    host_only_op_on_each_device => host_only_op_on_each_device;
}

embedded_tests! {
    forward2_every_dtype => forward2_every_dtype;
    forward_every_dtype => forward_every_dtype;
    shape_changing_ops_check_their_output_type => shape_changing_ops_check_their_output_type;
    host_only_op_on_each_device => host_only_op_on_each_device;
}

/// `y = a * a + b` for every element type (two inputs of one shape, the default `output_dims`).
#[derive(Clone, Copy)]
struct SquareAdd;

impl<T: WithDType> CustomOp2<T> for SquareAdd {
    fn name(&self) -> &'static str {
        "square_add"
    }
    fn cpu_forward(&self, a: HostView<'_, T>, b: HostView<'_, T>, y: &mut [T]) -> Result<()> {
        assert_eq!(
            (a.data.len(), b.data.len()),
            (y.len(), y.len()),
            "dense inputs"
        );
        for ((y, &a), &b) in y.iter_mut().zip(a.data).zip(b.data) {
            *y = T::from_f64(a.to_f64() * a.to_f64() + b.to_f64());
        }
        Ok(())
    }
}

impl<T: FloatDType> CustomOp2Backward<T> for SquareAdd {
    fn cpu_backward(
        &self,
        [a, _, _, dy]: [HostView<'_, T>; 4],
        da: &mut [T],
        db: &mut [T],
    ) -> Result<()> {
        for (i, &g) in dy.data.iter().enumerate() {
            da[i] = T::from_f64(2.0 * a.data[i].to_f64() * g.to_f64());
            db[i] = g;
        }
        Ok(())
    }
}

fn forward2_on_every_view<T: WithDType, D: Device>() {
    for (a, b) in views::<T, D>(8, -3.0, 3.0)
        .into_iter()
        .zip(views::<T, D>(9, -3.0, 3.0).into_iter().rev())
    {
        let y = a.tensor.custom_op2(&b.tensor, SquareAdd);
        let want: Vec<f64> = a
            .expected
            .iter()
            .zip(&b.expected)
            .map(|(a, b)| a.to_f64() * a.to_f64() + b.to_f64())
            .collect();
        assert_close(&format!("{} with {}", a.kind, b.kind), &y.to_vec(), &want);
    }
}

fn forward2_every_dtype<D: Device>() {
    forward2_on_every_view::<f32, D>();
    forward2_on_every_view::<f64, D>();
    forward2_on_every_view::<bf16, D>();
    forward2_on_every_view::<i32, D>();
    // Two shapes the default `output_dims` refuses: the op's error, naming both.
    let a = Tensor::<f32, Rank2<2, 3>, D>::zeros();
    let b = Tensor::<f32, Rank2<3, 2>, D>::zeros();
    let e = a.try_custom_op2(&b, SquareAdd).unwrap_err();
    assert_eq!(
        e.to_string(),
        "square_add: shapes [2, 3] and [3, 2] do not match"
    );
}

/// The outer product `(N,) x (M,) -> (N, M)`, counting its backward calls.
#[derive(Clone, Default)]
struct Outer(Arc<AtomicUsize>);

impl CustomOp2<f64> for Outer {
    fn name(&self) -> &'static str {
        "outer"
    }
    fn output_dims(&self, a: &Dims, b: &Dims) -> Result<Dims> {
        Ok(Dims::from_slice(&[a[0], b[0]]))
    }
    fn cpu_forward(&self, a: HostView<'_, f64>, b: HostView<'_, f64>, y: &mut [f64]) -> Result<()> {
        for (row, &a) in y.chunks_mut(b.data.len()).zip(a.data) {
            for (y, &b) in row.iter_mut().zip(b.data) {
                *y = a * b;
            }
        }
        Ok(())
    }
}

impl CustomOp2Backward<f64> for Outer {
    fn cpu_backward(
        &self,
        [a, b, _, dy]: [HostView<'_, f64>; 4],
        da: &mut [f64],
        db: &mut [f64],
    ) -> Result<()> {
        self.0.fetch_add(1, Ordering::Relaxed);
        let m = b.data.len();
        for (i, da) in da.iter_mut().enumerate() {
            *da = (0..m).map(|j| dy.data[i * m + j] * b.data[j]).sum();
        }
        for (j, db) in db.iter_mut().enumerate() {
            *db = (0..a.data.len())
                .map(|i| dy.data[i * m + j] * a.data[i])
                .sum();
        }
        Ok(())
    }
}

fn gradients2_match_finite_differences<D: AutogradDevice>() {
    let a = Var::new(Tensor::<f64, Rank2<2, 3>, D>::from_array([
        [0.5, -1.0, 2.0],
        [1.5, 0.25, -0.75],
    ]));
    let b = Var::new(Tensor::<f64, Rank2<2, 3>, D>::from_array([
        [1.0, 2.0, -3.0],
        [0.1, -0.2, 0.3],
    ]));
    let weights = Tensor::<f64, Rank2<2, 3>, D>::from_array([[1., 2., 3.], [4., 5., 6.]]);
    let f = || (a.trace().custom_op2(&b, SquareAdd) * &weights).sum_all();
    assert!(check_gradient(&a, 1e-6, f).error < 1e-7);
    assert!(check_gradient(&b, 1e-6, f).error < 1e-7);
    // A transposed left input (the op sees it dense) and a plain tensor on the right: only the left's gradient.
    let c = Tensor::<f64, Rank2<3, 2>, D>::from_array([[1., 2.], [3., 4.], [5., 6.]]);
    let g = a
        .trace()
        .t()
        .custom_op2(&c, SquareAdd)
        .sum_all()
        .backward()
        .get(&a)
        .to_vec();
    let want: Vec<f64> = a.value().to_vec().iter().map(|v| 2.0 * v).collect();
    assert_close("transposed", &g, &want);
    // One parameter in both places: d/dx (x^2 + x) = 2 x + 1.
    let g = a
        .trace()
        .custom_op2(&a, SquareAdd)
        .sum_all()
        .backward()
        .get(&a)
        .to_vec();
    let want: Vec<f64> = a.value().to_vec().iter().map(|v| 2.0 * v + 1.0).collect();
    assert_close("shared", &g, &want);
    // Inputs of two shapes, to a third.
    let (u, v) = (
        Var::new(Tensor::<f64, Rank1<2>, D>::from_array([1.0, -2.0])),
        Var::new(Tensor::<f64, Rank1<3>, D>::from_array([0.5, 3.0, -1.0])),
    );
    let probe = Tensor::<f64, Rank2<2, 3>, D>::from_array([[1., -1., 2.], [0.5, 3., -2.]]);
    let f = || {
        (u.trace()
            .custom_op2_to::<Rank2<2, 3>, _, _>(&v, Outer::default())
            * &probe)
            .sum_all()
    };
    assert!(check_gradient(&u, 1e-6, f).error < 1e-7);
    assert!(check_gradient(&v, 1e-6, f).error < 1e-7);
}

#[test]
fn empty_inputs_of_two_input_ops() {
    // The forward of an empty output runs no kernel; the backward runs once while either gradient has elements.
    let outer = Outer::default();
    let u = Var::new(Tensor::<f64, (usize,), Cpu>::zeros_with_shape((0,)));
    let v = Var::new(
        Tensor::<f64, (usize,), Cpu>::from_vec_with_shape((3,), vec![1., 2., 3.]).unwrap(),
    );
    let y = u
        .trace()
        .custom_op2_to::<(usize, usize), _, _>(&v, outer.clone());
    assert_eq!(y.value().dims().as_slice(), [0, 3]);
    let grads = y.sum_all().backward();
    assert_eq!(outer.0.load(Ordering::Relaxed), 1);
    assert_eq!(
        (grads.get(&u).to_vec(), grads.get(&v).to_vec()),
        (vec![], vec![0.0; 3])
    );
    // Both empty: no call.
    let w = Var::new(Tensor::<f64, (usize,), Cpu>::zeros_with_shape((0,)));
    let grads = w
        .trace()
        .custom_op2_to::<(usize, usize), _, _>(&w, outer.clone())
        .sum_all()
        .backward();
    assert_eq!(outer.0.load(Ordering::Relaxed), 1);
    assert_eq!(grads.get(&w).to_vec(), Vec::<f64>::new());
}

/// The identity of one or two inputs (the first), for the edge sweeps (edges.rs).
pub struct Identity;

impl CustomOp1<f32> for Identity {
    fn name(&self) -> &'static str {
        "identity"
    }
    fn cpu_forward(&self, x: HostView<'_, f32>, y: &mut [f32]) -> Result<()> {
        y.copy_from_slice(x.data);
        Ok(())
    }
}

impl CustomOp1Backward<f32> for Identity {
    fn cpu_backward(
        &self,
        _: HostView<'_, f32>,
        _: HostView<'_, f32>,
        dy: HostView<'_, f32>,
        dx: &mut [f32],
    ) -> Result<()> {
        dx.copy_from_slice(dy.data);
        Ok(())
    }
}

impl CustomOp2Backward<f32> for Identity {
    fn cpu_backward(
        &self,
        [_, _, _, dy]: [HostView<'_, f32>; 4],
        da: &mut [f32],
        _: &mut [f32],
    ) -> Result<()> {
        da.copy_from_slice(dy.data);
        Ok(())
    }
}

impl CustomOp2<f32> for Identity {
    fn name(&self) -> &'static str {
        "identity"
    }
    fn cpu_forward(&self, x: HostView<'_, f32>, _: HostView<'_, f32>, y: &mut [f32]) -> Result<()> {
        y.copy_from_slice(x.data);
        Ok(())
    }
}

/// An op whose output, `(2^62, 4)` elements, is too large to allocate (edges.rs): its kernel never runs.
pub struct Huge;

impl CustomOp1<f32> for Huge {
    fn name(&self) -> &'static str {
        "huge"
    }
    fn output_dims(&self, _: &Dims) -> Result<Dims> {
        Ok(Dims::from_slice(&[1 << 62, 4]))
    }
    fn cpu_forward(&self, _: HostView<'_, f32>, _: &mut [f32]) -> Result<()> {
        panic!("a kernel ran for an output that cannot exist");
    }
}

impl CustomOp2<f32> for Huge {
    fn name(&self) -> &'static str {
        "huge"
    }
    fn output_dims(&self, _: &Dims, _: &Dims) -> Result<Dims> {
        Ok(Dims::from_slice(&[1 << 62, 4]))
    }
    fn cpu_forward(&self, _: HostView<'_, f32>, _: HostView<'_, f32>, _: &mut [f32]) -> Result<()> {
        panic!("a kernel ran for an output that cannot exist");
    }
}
