//! Ops written outside the crate (`ops::custom`): a user's kernels run on every view and dtype they implement,
//! shape-changing ops check their output type, errors come back from the `try_` forms, and the backward kernel
//! trains (finite differences, shared parameters, strided inputs). The CUDA kernels of a user crate are tested in
//! examples/custom-op.

use crate::common::{assert_close, panic_message, views};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use typed_tensor::autograd::{check_gradient, Traced, Var};
use typed_tensor::ops::custom::{CustomOp1, CustomOp1Backward, HostView};
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
    let loss = ok.trace().custom_op(Refuses).sum();
    assert!(panic_message(|| loss.backward()).contains("refuses: no gradient today"));
}

fn gradient_matches_finite_differences<D: Device>() {
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
    forward_every_dtype => forward_every_dtype;
    shape_changing_ops_check_their_output_type => shape_changing_ops_check_their_output_type;
    gradient_matches_finite_differences => gradient_matches_finite_differences;
    host_only_op_on_each_device => host_only_op_on_each_device;
}

embedded_tests! {
    forward_every_dtype => forward_every_dtype;
    shape_changing_ops_check_their_output_type => shape_changing_ops_check_their_output_type;
    host_only_op_on_each_device => host_only_op_on_each_device;
}
