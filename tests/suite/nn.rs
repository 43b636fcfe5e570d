//! Layers: forward values against the functional ops, traced and plain forward passes agreeing, gradients of
//! parameters by finite differences, parameter names, dropout statistics.

use crate::common::*;
use typed_tensor::autograd::{check_gradient, Traced, Var};
use typed_tensor::nn::{
    AvgPool2d, Conv2d, Dropout, Embedding, Flatten, LayerNorm, Linear, MaxPool2d, Module, PReLU,
    ParamVisitor, Parameters, RMSNorm, ReLU, Tanh,
};
use typed_tensor::prelude::*;
use typed_tensor::tensor::{Conv, Pool2d};

struct Names(Vec<String>);
impl ParamVisitor for Names {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, _: &Var<T, S, D>) {
        self.0.push(name.to_string());
    }
}

type Cnn<D> = (
    Conv2d<f64, 1, 4, 3, 8, 8, D, 1, 1>,
    ReLU,
    MaxPool2d<2, 2, 0, 4, 4>,
    Conv2d<f64, 4, 4, 3, 2, 2, D, 2, 1>,
    Tanh,
    AvgPool2d<2, 2, 0, 1, 1>,
    Flatten<4>,
    Linear<f64, 4, 3, D>,
);

fn cnn<D: Device>() -> Cnn<D> {
    (
        Conv2d::new(1),
        ReLU,
        MaxPool2d,
        Conv2d::new(2),
        Tanh,
        AvgPool2d,
        Flatten,
        Linear::new(3),
    )
}

fn layers_match_functional_ops<D: AutogradDevice>() {
    let x: Tensor<f64, Rank4<2, 1, 8, 8>, D> = random(1);
    let conv = Conv2d::<f64, 1, 4, 3, 8, 8, D, 1, 1>::new(5);
    let y = conv.forward(x.clone());
    let bias = conv.bias.value().to_vec();
    let plain: Tensor<f64, Rank4<2, 4, 8, 8>, D> =
        x.conv2d(&conv.weight.value(), Conv::<1, 1, 1, 1>);
    let want: Vec<f64> = plain
        .to_vec()
        .iter()
        .enumerate()
        .map(|(k, v)| v + bias[(k / 64) % 4])
        .collect();
    assert_within("conv2d layer", &y.to_vec(), &want, 1e-12);
    let pooled: Tensor<f64, Rank4<2, 4, 4, 4>, D> = MaxPool2d::<2, 2, 0, 4, 4>.forward(y.clone());
    let direct: Tensor<f64, Rank4<2, 4, 4, 4>, D> = y.max_pool2d(Pool2d::<2, 2, 0>);
    assert_eq!(pooled.to_vec(), direct.to_vec());

    // The whole CNN: plain and traced forward passes agree.
    let model = cnn::<D>();
    let plain = model.forward(x.clone());
    let traced = model.forward(Traced::constant(x.clone()));
    assert_within("cnn", &plain.to_vec(), &traced.into_value().to_vec(), 1e-12);

    let norm = LayerNorm::<f64, 8, D>::new(1e-5);
    norm.weight.set(Tensor::from_array([2.0; 8]));
    let z: Tensor<f64, Rank2<3, 8>, D> = random(2);
    let want = (z.layer_norm::<Axis<1>>(1e-5) * 2.0).to_vec();
    assert_within(
        "layer norm",
        &norm.forward(z.clone()).to_vec(),
        &want,
        1e-12,
    );

    let rms = RMSNorm::<f64, 8, D>::new(1e-6);
    rms.weight.set(Tensor::from_array([0.5; 8]));
    let want = (z.rms_norm::<Axis<1>>(1e-6) * 0.5).to_vec();
    assert_within("rms norm", &rms.forward(z.clone()).to_vec(), &want, 1e-12);
    let traced = rms.forward(Traced::constant(z.clone())).into_value();
    assert_within("rms norm, traced", &traced.to_vec(), &want, 1e-12);

    let emb = Embedding::<f64, 5, 3, D>::new(4);
    let ids = Tensor::<u32, _, D>::from_array([4, 0, 4]);
    let rows = emb.forward(ids.clone()).to_vec();
    let table = emb.weight.value().to_vec();
    assert_eq!(rows[..3], table[12..15]);
    assert_eq!(emb.lookup(&ids).into_value().to_vec(), rows);
}

fn parameter_gradients_match_finite_differences<D: AutogradDevice>() {
    let model = cnn::<D>();
    let x: Tensor<f64, Rank4<2, 1, 8, 8>, D> = random(7);
    let labels = Tensor::<u32, _, D>::from_array([2, 0]);
    let loss = || {
        model
            .forward(Traced::constant(x.clone()))
            .cross_entropy(&labels)
            .mean_all()
    };
    for (what, worst) in [
        ("conv 1 weight", check_gradient(&model.0.weight, 1e-5, loss)),
        ("conv 1 bias", check_gradient(&model.0.bias, 1e-5, loss)),
        ("conv 2 weight", check_gradient(&model.3.weight, 1e-5, loss)),
        ("linear weight", check_gradient(&model.7.weight, 1e-5, loss)),
        ("linear bias", check_gradient(&model.7.bias, 1e-5, loss)),
    ] {
        assert!(worst.error < 1e-6, "{what}: {worst:?}");
    }
    let norm = LayerNorm::<f64, 8, D>::new(1e-5);
    let z: Tensor<f64, Rank3<2, 3, 8>, D> = random(8);
    let w: Tensor<f64, Rank3<2, 3, 8>, D> = random(9);
    let f = || (norm.forward(Traced::constant(z.clone())) * &w).sum_all();
    assert!(check_gradient(&norm.weight, 1e-5, f).error < 1e-6);
    let rms = RMSNorm::<f64, 8, D>::new(1e-6);
    let f = || (rms.forward(Traced::constant(z.clone())) * &w).sum_all();
    assert!(check_gradient(&rms.weight, 1e-5, f).error < 1e-6);
    assert!(check_gradient(&norm.bias, 1e-5, f).error < 1e-6);
    let emb = Embedding::<f64, 5, 3, D>::new(4);
    let ids = Tensor::<u32, _, D>::from_array([[4, 0], [4, 4]]);
    let v: Tensor<f64, Rank3<2, 2, 3>, D> = random(10);
    let g = || (emb.lookup(&ids) * &v).sum_all();
    assert!(check_gradient(&emb.weight, 1e-5, g).error < 1e-6);
}

/// Conv1d, ConvTranspose2d and ConvTranspose1d are their functional ops plus a bias per output channel, plain and traced; their
/// parameters get gradients; the initial weights are in PyTorch's bounds.
fn conv1d_and_conv_transpose2d_layers<D: AutogradDevice>() {
    use typed_tensor::nn::{Conv1d, ConvTranspose2d};
    let conv = Conv1d::<f64, 2, 3, 3, 5, D, 2, 1>::new(1);
    let x: Tensor<f64, Rank3<4, 2, 10>, D> = random(20);
    let plain: Tensor<f64, Rank3<4, 3, 5>, D> = x.conv1d(&conv.weight.value(), Conv::<2, 1, 1, 1>);
    let bias = conv.bias.value().to_vec();
    let want: Vec<f64> = plain
        .to_vec()
        .iter()
        .enumerate()
        .map(|(k, v)| v + bias[(k / 5) % 3])
        .collect();
    assert_within(
        "conv1d layer",
        &conv.forward(x.clone()).to_vec(),
        &want,
        1e-12,
    );
    let traced = conv.forward(Traced::constant(x.clone())).into_value();
    assert_within("conv1d layer, traced", &traced.to_vec(), &want, 1e-12);
    let bound = 1.0 / 6f64.sqrt();
    assert!(conv.weight.value().to_vec().iter().all(|w| w.abs() < bound));

    let up = ConvTranspose2d::<f64, 3, 2, 4, 8, 8, D, 2, 1>::new(2);
    let z: Tensor<f64, Rank4<1, 3, 4, 4>, D> = random(21);
    let plain: Tensor<f64, Rank4<1, 2, 8, 8>, D> =
        z.conv_transpose2d(&up.weight.value(), Conv::<2, 1, 1, 1>);
    let bias = up.bias.value().to_vec();
    let want: Vec<f64> = plain
        .to_vec()
        .iter()
        .enumerate()
        .map(|(k, v)| v + bias[k / 64])
        .collect();
    assert_within(
        "conv_transpose2d layer",
        &up.forward(z.clone()).to_vec(),
        &want,
        1e-12,
    );
    let bound = 1.0 / 32f64.sqrt();
    assert!(up.weight.value().to_vec().iter().all(|w| w.abs() < bound));

    let probe: Tensor<f64, Rank3<4, 3, 5>, D> = random(22);
    let loss = || (conv.forward(Traced::constant(x.clone())) * &probe).sum_all();
    assert!(check_gradient(&conv.weight, 1e-5, loss).error < 1e-7);
    assert!(check_gradient(&conv.bias, 1e-5, loss).error < 1e-7);
    let probe: Tensor<f64, Rank4<1, 2, 8, 8>, D> = random(23);
    let loss = || (up.forward(Traced::constant(z.clone())) * &probe).sum_all();
    assert!(check_gradient(&up.weight, 1e-5, loss).error < 1e-7);
    assert!(check_gradient(&up.bias, 1e-5, loss).error < 1e-7);
    let mut names = Names(Vec::new());
    (conv, up).visit_params("", &mut names);
    assert_eq!(names.0, ["0.weight", "0.bias", "1.weight", "1.bias"]);

    // ConvTranspose1d: length 5 -> (5 - 1) 2 - 2 + 4 = 10, weight (C_IN, C_OUT, K), fan-in C_OUT K = 8.
    let up1 = typed_tensor::nn::ConvTranspose1d::<f64, 3, 2, 4, 10, D, 2, 1>::new(4);
    let z: Tensor<f64, Rank3<2, 3, 5>, D> = random(26);
    let plain: Tensor<f64, Rank3<2, 2, 10>, D> =
        z.conv_transpose1d(&up1.weight.value(), Conv::<2, 1, 1, 1>);
    let bias = up1.bias.value().to_vec();
    let want: Vec<f64> = plain
        .to_vec()
        .iter()
        .enumerate()
        .map(|(k, v)| v + bias[(k / 10) % 2])
        .collect();
    assert_within(
        "conv_transpose1d layer",
        &up1.forward(z.clone()).to_vec(),
        &want,
        1e-12,
    );
    let traced = up1.forward(Traced::constant(z.clone())).into_value();
    assert_within(
        "conv_transpose1d layer, traced",
        &traced.to_vec(),
        &want,
        1e-12,
    );
    assert_eq!(up1.weight.value().dims().as_slice(), [3, 2, 4]);
    let bound = 1.0 / 8f64.sqrt();
    let w = up1.weight.value().to_vec();
    assert!(w.iter().all(|w| w.abs() < bound));
    assert!(
        w.iter().any(|w| w.abs() > 1.0 / 12f64.sqrt()),
        "drawn from the whole bound"
    );
    let probe: Tensor<f64, Rank3<2, 2, 10>, D> = random(27);
    let loss = || (up1.forward(Traced::constant(z.clone())) * &probe).sum_all();
    assert!(check_gradient(&up1.weight, 1e-5, loss).error < 1e-7);
    assert!(check_gradient(&up1.bias, 1e-5, loss).error < 1e-7);
}

/// Conv layers with PyTorch's `dilation` and `groups`: each is its functional op with the same geometry plus the
/// bias, plain and traced; the weight has PyTorch's grouped shape (`CG` channels per group) and fan-in
/// (`CG K^d`); the parameters get gradients.
fn grouped_and_dilated_conv_layers<D: AutogradDevice>() {
    use typed_tensor::nn::{Conv1d, ConvTranspose2d};
    fn with_bias<const C: usize>(plain: Vec<f64>, bias: Vec<f64>, per_channel: usize) -> Vec<f64> {
        plain
            .iter()
            .enumerate()
            .map(|(k, v)| v + bias[(k / per_channel) % C])
            .collect()
    }
    // 4 -> 6 channels in 2 groups of 2, 3x3 dilated by 2, padding 2: 7x7 stays.
    let conv = Conv2d::<f64, 4, 6, 3, 7, 7, D, 1, 2, 2, 2, 2>::new(5);
    assert_eq!(conv.weight.value().dims().as_slice(), [6, 2, 3, 3]);
    let bound = 1.0 / 18f64.sqrt();
    assert!(conv.weight.value().to_vec().iter().all(|w| w.abs() < bound));
    let x: Tensor<f64, Rank4<2, 4, 7, 7>, D> = random(30);
    let plain: Tensor<f64, Rank4<2, 6, 7, 7>, D> =
        x.conv2d(&conv.weight.value(), Conv::<1, 2, 2, 2>);
    let want = with_bias::<6>(plain.to_vec(), conv.bias.value().to_vec(), 49);
    assert_within(
        "grouped dilated conv2d layer",
        &conv.forward(x.clone()).to_vec(),
        &want,
        1e-12,
    );
    let traced = conv.forward(Traced::constant(x.clone())).into_value();
    assert_within(
        "grouped dilated conv2d layer, traced",
        &traced.to_vec(),
        &want,
        1e-12,
    );
    let probe: Tensor<f64, Rank4<2, 6, 7, 7>, D> = random(31);
    let loss = || (conv.forward(Traced::constant(x.clone())) * &probe).sum_all();
    assert!(check_gradient(&conv.weight, 1e-5, loss).error < 1e-7);
    assert!(check_gradient(&conv.bias, 1e-5, loss).error < 1e-7);

    // Depthwise transposed: 4 groups of one channel, weight (C_IN, C_OUT / GROUPS, K, K) = (4, 1, 2, 2), 3x3 -> 6x6.
    let up = ConvTranspose2d::<f64, 4, 4, 2, 6, 6, D, 2, 0, 1, 4, 1>::new(6);
    assert_eq!(up.weight.value().dims().as_slice(), [4, 1, 2, 2]);
    assert!(up.weight.value().to_vec().iter().all(|w| w.abs() < 0.5)); // fan-in 1 · 2 · 2
    let z: Tensor<f64, Rank4<1, 4, 3, 3>, D> = random(32);
    let plain: Tensor<f64, Rank4<1, 4, 6, 6>, D> =
        z.conv_transpose2d(&up.weight.value(), Conv::<2, 0, 1, 4>);
    let want = with_bias::<4>(plain.to_vec(), up.bias.value().to_vec(), 36);
    assert_within(
        "depthwise conv_transpose2d layer",
        &up.forward(z.clone()).to_vec(),
        &want,
        1e-12,
    );
    let probe: Tensor<f64, Rank4<1, 4, 6, 6>, D> = random(33);
    let loss = || (up.forward(Traced::constant(z.clone())) * &probe).sum_all();
    assert!(check_gradient(&up.weight, 1e-5, loss).error < 1e-7);

    // Dilated 1-D: kernel 3 dilated by 2 and padding 2 keep the length 6.
    let seq = Conv1d::<f64, 2, 2, 3, 6, D, 1, 2, 2>::new(7);
    let s: Tensor<f64, Rank3<3, 2, 6>, D> = random(34);
    let plain: Tensor<f64, Rank3<3, 2, 6>, D> = s.conv1d(&seq.weight.value(), Conv::<1, 2, 2, 1>);
    let want = with_bias::<2>(plain.to_vec(), seq.bias.value().to_vec(), 6);
    assert_within(
        "dilated conv1d layer",
        &seq.forward(s.clone()).to_vec(),
        &want,
        1e-12,
    );
    let traced = seq.forward(Traced::constant(s)).into_value();
    assert_within(
        "dilated conv1d layer, traced",
        &traced.to_vec(),
        &want,
        1e-12,
    );
}

/// Layers without a bias (PyTorch's `bias=False`): the functional op alone, plain and traced, gradients for the
/// weight, and only `weight` among the parameters.
fn layers_without_bias<D: AutogradDevice>() {
    use typed_tensor::nn::{ConvTranspose1d, NoBias};
    let proj = Linear::<f64, 4, 3, D, NoBias>::new(1);
    let x: Tensor<f64, Rank2<5, 4>, D> = random(40);
    let want = x.matmul(&proj.weight.value().t()).to_vec();
    assert_eq!(proj.forward(x.clone()).to_vec(), want);
    assert_eq!(
        proj.forward(Traced::constant(x.clone()))
            .into_value()
            .to_vec(),
        want
    );
    let bound = 0.5; // 1 / sqrt(4)
    assert!(proj.weight.value().to_vec().iter().all(|w| w.abs() < bound));
    let probe: Tensor<f64, Rank2<5, 3>, D> = random(41);
    let loss = || (proj.forward(Traced::constant(x.clone())) * &probe).sum_all();
    assert!(check_gradient(&proj.weight, 1e-5, loss).error < 1e-7);

    let conv = Conv2d::<f64, 2, 3, 3, 4, 4, D, 1, 1, 1, 1, 2, NoBias>::new(2);
    let img: Tensor<f64, Rank4<1, 2, 4, 4>, D> = random(42);
    let want: Tensor<f64, Rank4<1, 3, 4, 4>, D> =
        img.conv2d(&conv.weight.value(), Conv::<1, 1, 1, 1>);
    let want = want.to_vec();
    assert_eq!(conv.forward(img.clone()).to_vec(), want);
    assert_eq!(
        conv.forward(Traced::constant(img.clone()))
            .into_value()
            .to_vec(),
        want
    );
    let up = ConvTranspose1d::<f64, 2, 2, 2, 6, D, 2, 0, 1, 1, 2, NoBias>::zeros();
    assert!(up
        .forward(random::<f64, Rank3<1, 2, 3>, D>(43))
        .to_vec()
        .iter()
        .all(|&v| v == 0.0));

    let mut names = Names(Vec::new());
    (proj, conv, up).visit_params("", &mut names);
    assert_eq!(names.0, ["0.weight", "1.weight", "2.weight"]);
}

/// Conv3d is conv3d plus a bias per output channel, plain and traced; its parameters get gradients; the initial
/// weights are in PyTorch's bounds; its parameters are named as in PyTorch.
fn conv3d_layer<D: AutogradDevice>() {
    use typed_tensor::nn::Conv3d;
    let conv = Conv3d::<f64, 2, 3, 3, 2, 3, 2, D, 2, 1>::new(3);
    let x: Tensor<f64, Rank5<2, 2, 4, 5, 4>, D> = random(24);
    let plain: Tensor<f64, Rank5<2, 3, 2, 3, 2>, D> =
        x.conv3d(&conv.weight.value(), Conv::<2, 1, 1, 1>);
    let bias = conv.bias.value().to_vec();
    let want: Vec<f64> = plain
        .to_vec()
        .iter()
        .enumerate()
        .map(|(k, v)| v + bias[(k / 12) % 3])
        .collect();
    assert_within(
        "conv3d layer",
        &conv.forward(x.clone()).to_vec(),
        &want,
        1e-12,
    );
    let traced = conv.forward(Traced::constant(x.clone())).into_value();
    assert_within("conv3d layer, traced", &traced.to_vec(), &want, 1e-12);
    let bound = 1.0 / 54f64.sqrt();
    assert!(conv.weight.value().to_vec().iter().all(|w| w.abs() < bound));
    let probe: Tensor<f64, Rank5<2, 3, 2, 3, 2>, D> = random(25);
    let loss = || (conv.forward(Traced::constant(x.clone())) * &probe).sum_all();
    assert!(check_gradient(&conv.weight, 1e-5, loss).error < 1e-7);
    assert!(check_gradient(&conv.bias, 1e-5, loss).error < 1e-7);
    let mut names = Names(Vec::new());
    conv.visit_params("conv", &mut names);
    assert_eq!(names.0, ["conv.weight", "conv.bias"]);
}

/// The window-generic pool layers are the functional pools with their window, in 1-D, 2-D and 3-D, plain and
/// traced (the gradient is the functional one), inside a tuple model whose output sizes are checked at build time.
fn window_pool_layers<D: AutogradDevice>() {
    use typed_tensor::nn::{AvgPool, MaxPool};
    use typed_tensor::tensor::{Pool1d, Pool2dAxes, Pool3d, PoolGeometry};
    // 2-D: 3x2 windows, stride (2, 1), padding (1, 0), ceil mode; then an average leaving out the padding.
    let x =
        random::<f64, Rank4<2, 7, 3, 6>, D>(40).permute::<(Axis<0>, Axis<2>, Axis<1>, Axis<3>)>();
    let window = Pool2dAxes::<3, 2, 2, 1, 1, 0>.ceil_mode();
    let model = (
        MaxPool::<_, Rank2<4, 5>>::new(window),
        AvgPool::<_, Rank2<3, 3>>::new(Pool2d::<2, 2, 1>.exclude_padding()),
    );
    let y = model.forward(x.clone());
    let direct: Tensor<f64, Rank4<2, 3, 4, 5>, D> = x.max_pool2d(window);
    let direct: Tensor<f64, Rank4<2, 3, 3, 3>, D> =
        direct.avg_pool2d(Pool2d::<2, 2, 1>.exclude_padding());
    assert_eq!(y.to_vec(), direct.to_vec());
    let xv = Var::new(x.clone());
    let gy: Tensor<f64, Rank4<2, 3, 3, 3>, D> = random(41);
    let layer_grad = model
        .forward(xv.trace())
        .mul(&Traced::constant(gy.clone()))
        .sum_all()
        .backward()
        .get(&xv)
        .to_vec();
    let m: Traced<f64, Rank4<2, 3, 4, 5>, D> = xv.trace().max_pool2d(window);
    let a: Traced<f64, Rank4<2, 3, 3, 3>, D> = m.avg_pool2d(Pool2d::<2, 2, 1>.exclude_padding());
    let direct_grad = a
        .mul(&Traced::constant(gy))
        .sum_all()
        .backward()
        .get(&xv)
        .to_vec();
    assert_eq!(layer_grad, direct_grad);
    assert!(layer_grad.iter().any(|&g| g != 0.0));

    // 1-D and 3-D, dilated max and ceil-mode average.
    let s: Tensor<f64, Rank3<2, 3, 9>, D> = random(42);
    let y: Tensor<f64, Rank3<2, 3, 3>, D> =
        MaxPool::new(Pool1d::<2, 3, 1>.dilation::<2>()).forward(s.clone());
    let direct: Tensor<f64, Rank3<2, 3, 3>, D> = s.max_pool1d(Pool1d::<2, 3, 1>.dilation::<2>());
    assert_eq!(y.to_vec(), direct.to_vec());
    let v: Tensor<f64, Rank5<1, 2, 5, 4, 4>, D> = random(43);
    let pool = AvgPool::<_, Rank3<3, 2, 2>>::new(Pool3d::<2, 2, 0>.ceil_mode());
    let direct: Tensor<f64, Rank5<1, 2, 3, 2, 2>, D> = v.avg_pool3d(Pool3d::<2, 2, 0>.ceil_mode());
    assert_eq!(pool.forward(v.clone()).to_vec(), direct.to_vec());
    let traced = pool.forward(Traced::constant(v));
    assert_eq!(traced.into_value().to_vec(), direct.to_vec());
}

#[test]
fn parameters_are_named_by_position() {
    let mut names = Names(Vec::new());
    cnn::<Cpu>().visit_params("", &mut names);
    assert_eq!(
        names.0,
        ["0.weight", "0.bias", "3.weight", "3.bias", "7.weight", "7.bias"]
    );
    let mut names = Names(Vec::new());
    (
        LayerNorm::<f32, 2, Cpu>::new(1e-5),
        Embedding::<f32, 3, 2, Cpu>::new(0),
        PReLU::<f32, 2, Cpu>::new(),
    )
        .visit_params("model", &mut names);
    assert_eq!(
        names.0,
        [
            "model.0.weight",
            "model.0.bias",
            "model.1.weight",
            "model.2.weight"
        ]
    );
}

#[test]
fn dropout_masks_and_scales_while_training_only() {
    let drop = Dropout::new(0.25, 3);
    let x = Tensor::<f32, Rank2<100, 100>, Cpu>::ones();
    let w = Var::new(x.clone());
    let y = drop.forward(w.trace());
    let kept = y.value().to_vec();
    let zeros = kept.iter().filter(|&&v| v == 0.0).count();
    assert!(
        (2200..2800).contains(&zeros),
        "{zeros} of 10000 dropped at p = 0.25"
    );
    assert!(kept
        .iter()
        .all(|&v| v == 0.0 || (v - 1.0 / 0.75).abs() < 1e-6));
    // The gradient is the same mask, scaled.
    let g = y.sum_all().backward().get(&w).to_vec();
    assert_eq!(g, kept);
    // Fresh masks per call; none when not training or on plain tensors.
    assert_ne!(drop.forward(w.trace()).into_value().to_vec(), kept);
    assert_eq!(drop.forward(x.clone()).to_vec(), x.to_vec());
    drop.eval();
    assert_eq!(drop.forward(w.trace()).into_value().to_vec(), x.to_vec());
}

/// The activation layers apply their functions with PyTorch's default parameters (or the ones given), on plain
/// and traced values alike.
fn activation_layers_are_their_functions<D: AutogradDevice>() {
    use typed_tensor::nn::{
        GeLUErf, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, Mish, ReLU6, Softplus,
        Softsign, CELU, ELU, SELU,
    };
    let x: Tensor<f64, Rank2<3, 5>, D> = random(9);
    fn same<M, D: AutogradDevice>(
        name: &str,
        layer: M,
        x: &Tensor<f64, Rank2<3, 5>, D>,
        want: Tensor<f64, Rank2<3, 5>, D>,
    ) where
        M: Module<Tensor<f64, Rank2<3, 5>, D>, Output = Tensor<f64, Rank2<3, 5>, D>>
            + Module<Traced<f64, Rank2<3, 5>, D>, Output = Traced<f64, Rank2<3, 5>, D>>,
    {
        assert_eq!(layer.forward(x.clone()).to_vec(), want.to_vec(), "{name}");
        let traced = layer.forward(Traced::constant(x.clone())).into_value();
        assert_eq!(traced.to_vec(), want.to_vec(), "{name}, traced");
    }
    same("GeLUErf", GeLUErf, &x, x.gelu_erf());
    same("Mish", Mish, &x, x.mish());
    same("Hardswish", Hardswish, &x, x.hardswish());
    same("Hardsigmoid", Hardsigmoid, &x, x.hardsigmoid());
    same("ReLU6", ReLU6, &x, x.relu6());
    same("Softsign", Softsign, &x, x.softsign());
    same("LogSigmoid", LogSigmoid, &x, x.log_sigmoid());
    same("SELU", SELU, &x, x.selu());
    same("LeakyReLU", LeakyReLU::default(), &x, x.leaky_relu(0.01));
    same(
        "LeakyReLU(0.2)",
        LeakyReLU { slope: 0.2 },
        &x,
        x.leaky_relu(0.2),
    );
    same("ELU", ELU::default(), &x, x.elu(1.0));
    same("CELU", CELU { alpha: 0.5 }, &x, x.celu(0.5));
    same("Softplus", Softplus::default(), &x, x.softplus(1.0, 20.0));
    same("Hardtanh", Hardtanh::default(), &x, x.hardtanh(-1.0, 1.0));
}

/// The losses on plain tensors (evaluation) against the naive formulas and the traced forms' values: logits read
/// through a transpose, f32 and f64, a NaN logit that stays in its row, large logits, an empty batch.
fn plain_losses_match_the_traced_ones<D: AutogradDevice>() {
    fn for_type<T: FloatDType, D: AutogradDevice>(tol: f64) {
        let cols: Tensor<T, Rank2<3, 4>, D> = random::<T, _, D>(1).affine(4.0, 0.0);
        let logits = cols.t(); // (4, 3), strided
        let labels = Tensor::<u32, _, D>::from_array([2, 0, 1, 2]);
        let (v, lab) = (to_f64s(&logits.to_vec()), labels.to_vec());
        let want: Vec<f64> = (0..4)
            .map(|b| {
                let row = &v[b * 3..b * 3 + 3];
                row.iter().map(|x| x.exp()).sum::<f64>().ln() - row[lab[b] as usize]
            })
            .collect();
        let plain = logits.cross_entropy(&labels);
        assert_within("cross_entropy", &to_f64s(&plain.to_vec()), &want, tol);
        let traced = Traced::constant(logits.clone()).cross_entropy(&labels);
        assert_eq!(
            plain.to_vec(),
            traced.into_value().to_vec(),
            "cross_entropy, plain and traced"
        );
        let log_probs = logits.log_softmax::<Axis<1>>();
        assert_eq!(
            log_probs.nll(&labels).to_vec(),
            Traced::constant(log_probs.clone())
                .nll(&labels)
                .into_value()
                .to_vec(),
            "nll"
        );
        let target: Tensor<T, Rank2<4, 3>, D> = random(2);
        let want: Vec<f64> = v
            .iter()
            .zip(to_f64s(&target.to_vec()))
            .map(|(p, t)| (p - t) * (p - t))
            .collect();
        assert_within("mse", &to_f64s(&logits.mse(&target).to_vec()), &want, tol);
        assert_eq!(
            logits.mse(&target).to_vec(),
            Traced::constant(logits.clone())
                .mse(&target)
                .into_value()
                .to_vec()
        );
        let probs = target.affine(0.5, 0.5); // in [0, 1]
        let want: Vec<f64> = v
            .iter()
            .zip(to_f64s(&probs.to_vec()))
            .map(|(x, y)| x.max(0.0) - x * y + (1.0 + (-x.abs()).exp()).ln())
            .collect();
        let bce = logits.bce_with_logits(&probs);
        assert_within("bce_with_logits", &to_f64s(&bce.to_vec()), &want, tol);
        assert_eq!(
            bce.to_vec(),
            Traced::constant(logits.clone())
                .bce_with_logits(&probs)
                .into_value()
                .to_vec()
        );
    }
    for_type::<f64, D>(1e-12);
    for_type::<f32, D>(1e-5);
    // A NaN logit makes its row's loss NaN and no other; logits of 1e4 stay finite (max-shifted).
    let x = Tensor::<f32, _, D>::from_array([[f32::NAN, 0.0], [1e4, -1e4]]);
    let loss = x
        .cross_entropy(&Tensor::<u32, _, D>::from_array([1, 0]))
        .to_vec();
    assert!(loss[0].is_nan() && loss[1] == 0.0, "{loss:?}");
    let huge = Tensor::<f32, _, D>::from_array([1e4f32, -1e4])
        .bce_with_logits(&Tensor::from_array([1.0, 0.0]));
    assert_eq!(huge.to_vec(), [0.0, 0.0]);
    // An empty batch has an empty loss.
    let none = Tensor::<f32, (usize, Const<3>), D>::zeros_with_shape((0, Const));
    let labels = Tensor::<u32, (usize,), D>::zeros_with_shape((0,));
    assert_eq!(none.cross_entropy(&labels).to_vec(), Vec::<f32>::new());
}

fn to_f64s<T: WithDType>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

// The layers on every device (`#[layer]` writes each for both kinds of value): each against its functional op,
// plain and traced, and its parameters' gradients.
device_tests! {
    activation_layers_are_their_functions => activation_layers_are_their_functions;
    layers_match_functional_ops => layers_match_functional_ops;
    parameter_gradients_match_finite_differences => parameter_gradients_match_finite_differences;
    conv1d_and_conv_transpose2d_layers => conv1d_and_conv_transpose2d_layers;
    conv3d_layer => conv3d_layer;
    grouped_and_dilated_conv_layers => grouped_and_dilated_conv_layers;
    layers_without_bias => layers_without_bias;
    window_pool_layers => window_pool_layers;
    plain_losses_match_the_traced_ones => plain_losses_match_the_traced_ones;
}
