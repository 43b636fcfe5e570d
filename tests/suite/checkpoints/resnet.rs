//! (a) The ResNet-style CNN with batch norm, in evaluation and training mode.

use super::{assert_matches, fixture, parameter_count, CompareGrads};
use typed_tensor::autograd::Var;
use typed_tensor::io::{load, TensorFile};
use typed_tensor::nn::{layer, BatchNorm2d, Conv2d, Linear, Module, NoBias, Parameters};
use typed_tensor::prelude::*;

// (a) A ResNet-style CNN: conv + BatchNorm2d stem, a residual block, a strided conv with a bias, global average
// pooling and a linear head. PyTorch's module (tools/torch_checkpoints.py):
//     stem = ConvBn(1, 8); block = Block(8); down = ConvBn(8, 16, stride=2, bias=True); head = Linear(16, 10)
//     forward: head(adaptive_avg_pool2d(relu(down(block(relu(stem(x))))), 1).flatten(1))

/// A 3x3 convolution and its batch norm (`conv.weight`, `bn.running_mean`, ...).
#[derive(Parameters)]
struct ConvBn<C, const CO: usize> {
    conv: C,
    bn: BatchNorm2d<f32, CO, Cpu>,
}

impl<X, C: Module<X>, const CO: usize> Module<X> for ConvBn<C, CO>
where
    BatchNorm2d<f32, CO, Cpu>: Module<C::Output>,
{
    type Output = <BatchNorm2d<f32, CO, Cpu> as Module<C::Output>>::Output;
    fn forward(&self, x: X) -> Self::Output {
        self.bn.forward(self.conv.forward(x))
    }
}

/// 8 -> 8 channels on 8x8, "same" padding, no bias.
type Same8 = ConvBn<Conv2d<f32, 8, 8, 3, 8, 8, Cpu, 1, 1, 1, 1, 8, NoBias>, 8>;

#[derive(Parameters)]
struct Block {
    conv1: Same8,
    conv2: Same8,
}

#[layer]
impl<const N: usize> Module<Value<f32, Rank4<N, 8, 8, 8>, Cpu>> for Block {
    type Output = Value<f32, Rank4<N, 8, 8, 8>, Cpu>;
    fn forward(&self, x: Value<f32, Rank4<N, 8, 8, 8>, Cpu>) -> Self::Output {
        (x.clone() + self.conv2.forward(self.conv1.forward(x).relu())).relu()
    }
}

#[derive(Parameters)]
struct ResNet {
    stem: ConvBn<Conv2d<f32, 1, 8, 3, 8, 8, Cpu, 1, 1, 1, 1, 1, NoBias>, 8>,
    block: Block,
    down: ConvBn<Conv2d<f32, 8, 16, 3, 4, 4, Cpu, 2, 1>, 16>,
    head: Linear<f32, 16, 10, Cpu>,
}

#[layer]
impl<const N: usize> Module<Value<f32, Rank4<N, 1, 8, 8>, Cpu>> for ResNet {
    type Output = Value<f32, Rank2<N, 10>, Cpu>;
    fn forward(&self, x: Value<f32, Rank4<N, 1, 8, 8>, Cpu>) -> Self::Output {
        let x = self.block.forward(self.stem.forward(x).relu());
        let x = self.down.forward(x).relu();
        let pooled = x.adaptive_avg_pool2d::<1, 1>();
        self.head
            .forward(pooled.flatten::<Axis<1>, Axis<3>, Rank2<N, 16>>())
    }
}

impl ResNet {
    /// Every parameter zero and every buffer at its default: the model to load a checkpoint into.
    fn zeros() -> Self {
        ResNet {
            stem: ConvBn {
                conv: Conv2d::zeros(),
                bn: BatchNorm2d::new(),
            },
            block: Block {
                conv1: ConvBn {
                    conv: Conv2d::zeros(),
                    bn: BatchNorm2d::new(),
                },
                conv2: ConvBn {
                    conv: Conv2d::zeros(),
                    bn: BatchNorm2d::new(),
                },
            },
            down: ConvBn {
                conv: Conv2d::zeros(),
                bn: BatchNorm2d::new(),
            },
            head: Linear::zeros(),
        }
    }
}

/// The ResNet's output, loss and every gradient (the input's and each parameter's) in `mode` match PyTorch's.
fn resnet_matches_in(mode: &str) {
    let model = ResNet::zeros();
    load(&model, fixture("resnet.safetensors")).unwrap();
    let file = TensorFile::open(fixture("resnet.io.safetensors")).unwrap();
    let x: Tensor<f32, Rank4<4, 1, 8, 8>, Cpu> = file.tensor("input").unwrap();
    let labels: Tensor<i64, Rank1<4>, Cpu> = file.tensor("labels").unwrap();
    if mode == "train" {
        model.train();
    } else {
        model.eval();
        // Inference on plain tensors gives the same output as the traced pass below.
        let plain = model.forward(x.clone()).to_vec();
        let want: Tensor<f32, Rank2<4, 10>, Cpu> = file.tensor("eval.output").unwrap();
        assert_matches("eval.output (plain)", &plain, &want.to_vec(), 1e-5);
    }
    let input = Var::new(x);
    let output = model.forward(input.trace());
    let want: Tensor<f32, Rank2<4, 10>, Cpu> = file.tensor(&format!("{mode}.output")).unwrap();
    assert_matches(
        &format!("{mode}.output"),
        &output.value().to_vec(),
        &want.to_vec(),
        1e-5,
    );
    let loss = output.cross_entropy(&labels).mean_all();
    let want: Tensor<f32, Rank0, Cpu> = file.tensor(&format!("{mode}.loss")).unwrap();
    assert_matches(
        &format!("{mode}.loss"),
        &loss.value().to_vec(),
        &want.to_vec(),
        1e-5,
    );
    let grads = loss.backward();
    let want: Tensor<f32, Rank4<4, 1, 8, 8>, Cpu> =
        file.tensor(&format!("{mode}.grad.input")).unwrap();
    assert_matches(
        &format!("{mode}.grad.input"),
        &grads.get(&input).to_vec(),
        &want.to_vec(),
        1e-4,
    );
    let mut compare = CompareGrads {
        grads: &grads,
        file: &file,
        mode,
        compared: 0,
    };
    model.visit_params("", &mut compare);
    assert_eq!(compare.compared, parameter_count(&model));
    assert_eq!(
        compare.compared, 15,
        "4 conv weights, 1 conv bias, 4 x 2 batch-norm affines, 2 linear"
    );
}

#[test]
fn resnet_checkpoint_matches_pytorch_in_evaluation() {
    resnet_matches_in("eval");
}

/// In training mode the batch statistics normalise, and the running statistics after the step are PyTorch's
/// (momentum 0.1, the unbiased variance, `num_batches_tracked` counting the fourth batch).
#[test]
fn resnet_checkpoint_matches_pytorch_in_training() {
    resnet_matches_in("train");
    let model = ResNet::zeros();
    load(&model, fixture("resnet.safetensors")).unwrap();
    model.train();
    let file = TensorFile::open(fixture("resnet.io.safetensors")).unwrap();
    let x: Tensor<f32, Rank4<4, 1, 8, 8>, Cpu> = file.tensor("input").unwrap();
    let _ = model.forward(Traced::constant(x));
    running_stats_match(&file, "stem.bn", &model.stem.bn);
    running_stats_match(&file, "block.conv1.bn", &model.block.conv1.bn);
    running_stats_match(&file, "block.conv2.bn", &model.block.conv2.bn);
    running_stats_match(&file, "down.bn", &model.down.bn);
}

/// The running statistics of `bn` are the reference file's `train.state.<name>.*`.
fn running_stats_match<const C: usize>(
    file: &TensorFile,
    name: &str,
    bn: &BatchNorm2d<f32, C, Cpu>,
) {
    for (stat, value) in [
        ("running_mean", bn.running_mean()),
        ("running_var", bn.running_var()),
    ] {
        let key = format!("train.state.{name}.{stat}");
        let want: Tensor<f32, Rank1<C>, Cpu> = file.tensor(&key).unwrap();
        assert_matches(&key, &value.unwrap().to_vec(), &want.to_vec(), 1e-5);
    }
    let key = format!("train.state.{name}.num_batches_tracked");
    let want: Tensor<i64, Rank0, Cpu> = file.tensor(&key).unwrap();
    assert_eq!(bn.num_batches_tracked(), Some(want.to_scalar()), "{key}");
    assert_eq!(want.to_scalar(), 4);
}
