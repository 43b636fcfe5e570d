//! `unbind` and `stack_slice`, the runtime-count cut and join: values against an index loop for every dtype, a
//! strided source, a middle axis; each other's inverse; empty axes and lists; runtime dims that disagree; traced
//! gradients landing in place (pieces read twice, pieces never read).

use crate::common::*;
use typed_tensor::autograd::Var;
use typed_tensor::prelude::*;

fn unbind_and_stack<T: WithDType, D: Device>() {
    // A (2, 3, 4) source read as a strided view of a (3, 2, 4) one.
    let base = Tensor::<T, Rank3<3, 2, 4>, D>::arange();
    let x = base.transpose::<Axis<0>, Axis<1>>(); // (2, 3, 4), x[a][b][c] = base[b][a][c]
    assert!(!x.is_contiguous());
    let want = |a: usize, b: usize, c: usize| T::from_f64(((b * 2 + a) * 4 + c) as f64);
    let pieces = x.unbind::<Axis<1>>();
    assert_eq!(pieces.len(), 3);
    for (b, piece) in pieces.iter().enumerate() {
        let expected: Vec<T> = (0..2)
            .flat_map(|a| (0..4).map(move |c| want(a, b, c)))
            .collect();
        assert_eq!(piece.to_vec(), expected, "piece {b} [{}]", T::DTYPE);
    }
    let back = Tensor::stack_slice::<Axis<1>>(&pieces);
    assert_eq!(back.dims().to_vec(), [2, 3, 4]);
    assert_eq!(back.to_vec(), x.to_vec());
    let last = Tensor::stack_slice::<Axis<2>>(&x.unbind::<Axis<2>>());
    assert_eq!(last.to_vec(), x.to_vec(), "the last axis");
    // An empty axis has no pieces; stacking none is an error, not a panic.
    let empty = Tensor::<T, (Const<2>, usize), D>::zeros_with_shape((Const, 0));
    assert!(empty.unbind::<Axis<1>>().is_empty());
    let none: Vec<Tensor<T, Rank1<2>, D>> = Vec::new();
    let err = Tensor::try_stack_slice::<Axis<0>>(&none).unwrap_err();
    assert_eq!(err.to_string(), "stack_slice: needs at least one tensor");
    assert_eq!(
        panic_message(|| Tensor::stack_slice::<Axis<0>>(&none)),
        err.to_string()
    );
    // Empty pieces stack to an empty result with the count.
    let hollow = vec![Tensor::<T, (usize,), D>::zeros_with_shape((0,)); 5];
    assert_eq!(
        Tensor::stack_slice::<Axis<1>>(&hollow).dims().to_vec(),
        [0, 5]
    );
}

fn every_dtype<D: Device>() {
    unbind_and_stack::<f32, D>();
    unbind_and_stack::<f64, D>();
    unbind_and_stack::<f16, D>();
    unbind_and_stack::<bf16, D>();
    unbind_and_stack::<i64, D>();
    unbind_and_stack::<u8, D>();
}

/// Runtime-sized parts that disagree are a named error.
fn runtime_dims_disagree<D: Device>() {
    let a = Tensor::<f32, (usize,), D>::zeros_with_shape((2,));
    let b = Tensor::<f32, (usize,), D>::zeros_with_shape((3,));
    let err = Tensor::try_stack_slice::<Axis<0>>(&[a.clone(), b]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "stack_slice: shapes [2] and [3] do not match"
    );
    let ok = Tensor::try_stack_slice::<Axis<0>>(&[a.clone(), a]).unwrap();
    assert_eq!(ok.dims().to_vec(), [2, 2]);
    // Empty but huge parts stack; a result too large to address is an error, not a panic.
    let huge = Tensor::<f32, (usize, usize), D>::zeros_with_shape((1 << 59, 0));
    let ok = Tensor::try_stack_slice::<Axis<0>>(&[huge.clone(), huge.clone()]).unwrap();
    assert_eq!(ok.dims().to_vec(), [2, 1 << 59, 0]);
    let err = Tensor::try_stack_slice::<Axis<0>>(&vec![huge; 32]).unwrap_err();
    assert!(err.to_string().contains("too large to address"), "{err}");
}

/// Traced: each piece's gradient lands in its place (a piece read twice gets both, one never read gets zeros),
/// and `stack_slice` gives each part its slice of the output's gradient.
fn gradients<D: AutogradDevice>() {
    let x = Var::new(random::<f64, Rank3<2, 4, 3>, D>(1));
    let w: Tensor<f64, Rank2<2, 3>, D> = random(2);
    let pieces = x.trace().unbind::<Axis<1>>();
    // Steps 0 and 2 once, step 3 twice, step 1 never.
    let loss = (pieces[0].clone() * &w).sum_all()
        + &(pieces[2].clone() * &w).sum_all()
        + &(pieces[3].clone() * &w).sum_all()
        + &(pieces[3].clone() * &w).sum_all();
    let g = loss.backward().get(&x).to_vec();
    let w = w.to_vec();
    for a in 0..2 {
        for step in 0..4 {
            for c in 0..3 {
                let times = [1.0, 0.0, 1.0, 2.0][step];
                let got = g[(a * 4 + step) * 3 + c];
                assert_eq!(got, times * w[a * 3 + c], "x[{a}][{step}][{c}]");
            }
        }
    }
    // stack_slice of traced parts along a middle axis.
    let parts: Vec<Var<f64, Rank2<2, 3>, D>> = (0..5).map(|i| Var::new(random(10 + i))).collect();
    let traced: Vec<_> = parts.iter().map(Var::trace).collect();
    let stacked = Traced::stack_slice::<Axis<1>>(&traced); // (2, 5, 3)
    let r: Tensor<f64, Rank3<2, 5, 3>, D> = random(20);
    let r_runtime = r.reshape_with_shape((Const::<2>, 5, Const::<3>));
    let grads = (stacked * &r_runtime).sum_all().backward();
    let r = r.to_vec();
    for (i, part) in parts.iter().enumerate() {
        let want: Vec<f64> = (0..2)
            .flat_map(|a| (0..3).map(move |c| (a, c)))
            .map(|(a, c)| r[(a * 5 + i) * 3 + c])
            .collect();
        assert_eq!(grads.get(part).to_vec(), want, "part {i}");
    }
}

device_tests! {
    unbind_and_stack_slice_every_dtype => every_dtype;
    stack_slice_runtime_dims_disagree => runtime_dims_disagree;
    unbind_and_stack_slice_gradients => gradients;
}
