//! The user crate's op against the library's own composition `x * sigmoid(x)`: values on strided views, the
//! gradient by finite differences and against the composed gradient, and (with `cuda`, on a GPU) the CUDA kernels
//! against the CPU's.

use custom_op_example::Swish;
use typed_tensor::autograd::{check_gradient, Traced, Var};
use typed_tensor::prelude::*;

fn close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

fn to_f64<T: WithDType>(v: Vec<T>) -> Vec<f64> {
    v.into_iter().map(WithDType::to_f64).collect()
}

#[test]
fn forward_matches_the_composed_op_on_strided_views() {
    let x =
        Tensor::<f64, Rank2<3, 4>, Cpu>::from_vec((0..12).map(|i| i as f64 * 0.7 - 4.0).collect())
            .unwrap();
    let t = x.t(); // strided: the op sees it dense
    close(
        "f64",
        &t.custom_op(Swish).to_vec(),
        &(&t * &t.sigmoid()).to_vec(),
        1e-15,
    );
    let x32 = x.to_dtype::<f32>();
    let want = to_f64((&x32 * &x32.sigmoid()).to_vec());
    close("f32", &to_f64(x32.custom_op(Swish).to_vec()), &want, 1e-6);
}

#[test]
fn gradient_matches_finite_differences_and_the_composition() {
    let x = Var::new(Tensor::<f64, Rank2<2, 3>, Cpu>::from_array([
        [-2.0, -0.5, 0.0],
        [0.25, 1.0, 3.0],
    ]));
    let weights = Tensor::<f64, Rank2<2, 3>, Cpu>::from_array([[1., 2., 3.], [4., 5., 6.]]);
    let worst = check_gradient(&x, 1e-6, || {
        (x.trace().custom_op(Swish) * &weights).sum_all()
    });
    assert!(worst.error < 1e-8, "{worst:?}");
    let ours = x
        .trace()
        .custom_op(Swish)
        .sum_all()
        .backward()
        .get(&x)
        .to_vec();
    let composed = {
        let t = x.trace();
        (&t * &t.sigmoid()).sum_all().backward().get(&x).to_vec()
    };
    close("gradient", &ours, &composed, 1e-14);
}

#[cfg(feature = "cuda")]
#[test]
fn cuda_kernels_match_the_cpu() {
    use typed_tensor::device::Cuda;
    if let Err(e) = Cuda::init() {
        eprintln!("skipped cuda_kernels_match_the_cpu: {e}");
        return;
    }
    // More elements than one launch's blocks of 256 threads cover in one pass of a small grid, and a strided view.
    let host: Vec<f32> = (0..300_001)
        .map(|i| ((i % 997) as f32 - 498.0) / 50.0)
        .collect();
    let cpu =
        Tensor::<f32, (usize,), Cpu>::from_vec_with_shape((host.len(),), host.clone()).unwrap();
    let gpu = Tensor::<f32, (usize,), Cuda>::from_vec_with_shape((host.len(),), host).unwrap();
    close(
        "forward",
        &to_f64(gpu.custom_op(Swish).to_vec()),
        &to_f64(cpu.custom_op(Swish).to_vec()),
        1e-6,
    );
    let m = Tensor::<f64, Rank2<3, 5>, Cuda>::from_vec((0..15).map(|i| i as f64 - 7.0).collect())
        .unwrap();
    let want = (&m.t() * &m.t().sigmoid()).to_vec();
    close(
        "strided f64",
        &m.t().custom_op(Swish).to_vec(),
        &want,
        1e-14,
    );
    // The gradient on the GPU against the CPU's.
    let w = Var::new(m.clone());
    let wc = Var::new(m.to_device::<Cpu>().unwrap());
    let g = w
        .trace()
        .t()
        .custom_op(Swish)
        .sum_all()
        .backward()
        .get(&w)
        .to_vec();
    let gc = wc
        .trace()
        .t()
        .custom_op(Swish)
        .sum_all()
        .backward()
        .get(&wc)
        .to_vec();
    close("gradient", &g, &gc, 1e-14);
    // An empty tensor launches nothing.
    let empty = Tensor::<f32, (usize,), Cuda>::zeros_with_shape((0,));
    assert_eq!(empty.custom_op(Swish).to_vec(), Vec::<f32>::new());
}

/// Training with the op gives the parameters that training with the library's own `x * sigmoid(x)` gives.
#[test]
fn training_with_the_op_matches_training_with_the_composition() {
    use typed_tensor::optim::{Optimizer, Sgd, SgdConfig};
    let x = Tensor::<f64, Rank2<4, 3>, Cpu>::from_array([
        [0.5, -1.0, 2.0],
        [1.5, 0.25, -0.75],
        [-0.3, 0.8, 0.1],
        [2.0, -2.0, 0.6],
    ]);
    let target =
        Tensor::<f64, Rank2<4, 2>, Cpu>::from_array([[1., 0.], [0., 1.], [0.5, 0.5], [1., 1.]]);
    let train = |custom: bool| {
        let w = Var::new(Tensor::<f64, Rank2<3, 2>, Cpu>::from_array([
            [0.1, -0.2],
            [0.3, 0.4],
            [-0.5, 0.6],
        ]));
        let mut opt = Sgd::new(
            &w,
            SgdConfig {
                lr: 0.1,
                ..Default::default()
            },
        );
        let mut losses = Vec::new();
        for _ in 0..50 {
            let h = Traced::constant(x.clone()).matmul(&w.trace());
            let y = if custom {
                h.custom_op(Swish)
            } else {
                &h * &h.sigmoid()
            };
            let loss = y.mse(&target).mean_all();
            losses.push(loss.value().to_scalar());
            opt.step(&loss.backward());
        }
        (w.value().to_vec(), losses)
    };
    let (ours, our_losses) = train(true);
    let (composed, composed_losses) = train(false);
    close("parameters", &ours, &composed, 1e-12);
    close("losses", &our_losses, &composed_losses, 1e-12);
    assert!(our_losses[49] < 0.5 * our_losses[0], "{our_losses:?}");
}
