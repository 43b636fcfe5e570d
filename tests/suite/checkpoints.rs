//! PyTorch checkpoints that load unchanged (issue 45, item 4): each model is written here the natural way, with
//! PyTorch's parameter names, its `state_dict` (saved by `tools/torch_checkpoints.py`, torch 2.5.1) loaded with
//! `io::load`, and its outputs and gradients compared with PyTorch's for the same input: f32 outputs within
//! 1e-5 relative, gradients within 1e-4 (relative to the element, or to the tensor's largest element where the
//! element itself is near zero: sums of many terms cancel there), with an absolute 1e-7 for gradients that are zero
//! in exact arithmetic (a conv's bias before a batch norm in training mode: both sides hold rounding noise).

use std::path::PathBuf;
use typed_tensor::autograd::{Gradients, Var};
use typed_tensor::io::{load, TensorFile};
use typed_tensor::nn::{
    layer, BatchNorm2d, Bidirectional, CellType, Conv2d, Embedding, FeedForwardActivation, GruKind,
    LayerNorm, Linear, LstmKind, MhaMasks, Module, MultiheadAttention, NoBias, ParamVisitor,
    Parameters, Recurrent, RecurrentKind, RnnArgs, TransformerConfig, TransformerEncoder,
    TransformerEncoderLayer,
};
use typed_tensor::prelude::*;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/checkpoints")
        .join(name)
}

/// Asserts `got` is PyTorch's `want` within `rtol` of each element, or of the tensor's largest one, or 1e-7.
fn assert_matches(what: &str, got: &[f32], want: &[f32], rtol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let largest = want.iter().fold(0f64, |m, w| m.max(f64::from(w.abs())));
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (f64::from(g), f64::from(w));
        assert!(
            (g - w).abs() <= rtol * w.abs().max(largest * 1e-2) + 1e-7,
            "{what}: element {i}: got {g}, PyTorch {w}"
        );
    }
}

/// Compares the gradient of every parameter with the reference file's `<mode>.grad.<name>`, and counts them.
struct CompareGrads<'a> {
    grads: &'a Gradients,
    file: &'a TensorFile,
    mode: &'a str,
    compared: usize,
}

impl ParamVisitor for CompareGrads<'_> {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, var: &Var<T, S, D>) {
        self.visit_stored_as(name, var, &var.shape().dims());
    }

    /// PyTorch's gradient of a packed parameter has its file shape (`in_proj_weight`: `(3E, E)`).
    fn visit_stored_as<T: FloatDType, S: Shape, D: Device>(
        &mut self,
        name: &str,
        var: &Var<T, S, D>,
        stored: &[usize],
    ) {
        let key = format!("{}.grad.{name}", self.mode);
        let want = match *stored {
            [] => self
                .file
                .tensor::<f32, Rank0, Cpu>(&key)
                .map(|t| t.to_vec()),
            [a] => self
                .file
                .tensor_with_shape::<f32, _, Cpu>(&key, (a,))
                .map(|t| t.to_vec()),
            [a, b] => self
                .file
                .tensor_with_shape::<f32, _, Cpu>(&key, (a, b))
                .map(|t| t.to_vec()),
            [a, b, c, d] => self
                .file
                .tensor_with_shape::<f32, _, Cpu>(&key, (a, b, c, d))
                .map(|t| t.to_vec()),
            _ => panic!("{key}: no reader for rank {}", stored.len()),
        }
        .unwrap();
        let got = self.grads.get(var).to_vec();
        let got: Vec<f32> = got.iter().map(|g| g.to_f64() as f32).collect();
        assert_matches(&key, &got, &want, 1e-4);
        self.compared += 1;
    }
}

/// The number of parameters of `model`, by a walk that counts them.
fn parameter_count(model: &impl Parameters) -> usize {
    struct Count(usize);
    impl ParamVisitor for Count {
        fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, _: &str, _: &Var<T, S, D>) {
            self.0 += 1;
        }
    }
    let mut count = Count(0);
    model.visit_params("", &mut count);
    count.0
}

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

// (b) Multi-head attention on its own: cross-attention (3 queries over 4 keys and values), a boolean key padding
// mask, an additive attention mask, the per-head weights returned; loss `sum(out * r_out) + sum(w * r_w)`.

#[test]
fn multihead_attention_checkpoint_matches_pytorch() {
    let model = MultiheadAttention::<f32, 8, 2, 4, Cpu>::zeros();
    load(&model, fixture("mha.safetensors")).unwrap();
    let file = TensorFile::open(fixture("mha.io.safetensors")).unwrap();
    let q: Tensor<f32, Rank3<2, 3, 8>, Cpu> = file.tensor("query").unwrap();
    let k: Tensor<f32, Rank3<2, 4, 8>, Cpu> = file.tensor("key").unwrap();
    let v: Tensor<f32, Rank3<2, 4, 8>, Cpu> = file.tensor("value").unwrap();
    let padding: Tensor<u8, Rank2<2, 4>, Cpu> = file.tensor("key_padding_mask").unwrap();
    let attn_mask: Tensor<f32, (usize, Const<4>), Cpu> = file
        .tensor_with_shape("attn_mask", (3, Const::<4>))
        .unwrap();
    let (r_out, r_w): (
        Tensor<f32, Rank3<2, 3, 8>, Cpu>,
        Tensor<f32, Rank4<2, 2, 3, 4>, Cpu>,
    ) = (
        file.tensor("r_out").unwrap(),
        file.tensor("r_weights").unwrap(),
    );
    // Plain tensors.
    let masks = MhaMasks::new()
        .key_padding_mask(&padding)
        .additive_attn_mask(&attn_mask)
        .need_weights();
    let (out, weights) = model.attend(q.clone(), k.clone(), v.clone(), masks);
    let want: Tensor<f32, Rank3<2, 3, 8>, Cpu> = file.tensor("eval.output").unwrap();
    assert_matches("eval.output (plain)", &out.to_vec(), &want.to_vec(), 1e-5);
    let want_w: Tensor<f32, Rank4<2, 2, 3, 4>, Cpu> = file.tensor("eval.weights").unwrap();
    assert_matches(
        "eval.weights (plain)",
        &weights.unwrap().to_vec(),
        &want_w.to_vec(),
        1e-5,
    );
    // Traced, with the gradients of the three inputs and the four parameters.
    let (qv, kv, vv) = (Var::new(q), Var::new(k), Var::new(v));
    let masks = MhaMasks::new()
        .key_padding_mask(&padding)
        .additive_attn_mask(&attn_mask)
        .need_weights();
    let (out, weights) = model.attend(qv.trace(), kv.trace(), vv.trace(), masks);
    let weights = weights.unwrap();
    assert_matches("eval.output", &out.value().to_vec(), &want.to_vec(), 1e-5);
    assert_matches(
        "eval.weights",
        &weights.value().to_vec(),
        &want_w.to_vec(),
        1e-5,
    );
    let loss =
        (out * &Traced::constant(r_out)).sum_all() + (weights * &Traced::constant(r_w)).sum_all();
    let want: Tensor<f32, Rank0, Cpu> = file.tensor("eval.loss").unwrap();
    assert_matches("eval.loss", &loss.value().to_vec(), &want.to_vec(), 1e-5);
    let grads = loss.backward();
    let want: Tensor<f32, Rank3<2, 3, 8>, Cpu> = file.tensor("eval.grad.query").unwrap();
    assert_matches("query", &grads.get(&qv).to_vec(), &want.to_vec(), 1e-4);
    for (name, var) in [("key", &kv), ("value", &vv)] {
        let want: Tensor<f32, Rank3<2, 4, 8>, Cpu> =
            file.tensor(&format!("eval.grad.{name}")).unwrap();
        assert_matches(name, &grads.get(var).to_vec(), &want.to_vec(), 1e-4);
    }
    let mut compare = CompareGrads {
        grads: &grads,
        file: &file,
        mode: "eval",
        compared: 0,
    };
    model.visit_params("", &mut compare);
    assert_eq!(
        compare.compared, 4,
        "in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias"
    );
}

// (c) A 2-layer transformer encoder language model: an embedding, the encoder (post-norm with ReLU; pre-norm with
// GELU and a final norm), a linear head; a causal mask and a key padding mask; next-token cross entropy.

type EncoderLayer = TransformerEncoderLayer<f32, 8, 2, 4, 16, Cpu>;

#[derive(Parameters)]
struct Lm<Norm> {
    embed: Embedding<f32, 16, 8, Cpu>,
    encoder: TransformerEncoder<EncoderLayer, 2, Norm>,
    head: Linear<f32, 8, 16, Cpu>,
}

impl<Norm: Module<Traced<f32, Rank3<2, 5, 8>, Cpu>, Output = Traced<f32, Rank3<2, 5, 8>, Cpu>>>
    Lm<Norm>
{
    /// Next-token logits `(2·5, 16)` of `tokens`, causal, with `padding` (non-zero: a padded position).
    fn logits(
        &self,
        tokens: &Tensor<i64, Rank2<2, 5>, Cpu>,
        padding: &Tensor<u8, Rank2<2, 5>, Cpu>,
    ) -> Traced<f32, Rank2<10, 16>, Cpu> {
        let x = self.embed.lookup(tokens);
        let masks = MhaMasks::new().causal().key_padding_mask(padding);
        let x = self.encoder.forward_masked(x, masks);
        self.head.forward(x).reshape()
    }
}

/// The language model of `config`'s norm order loaded from `family`, its loss and every gradient matched.
fn transformer_matches<Norm>(family: &str, model: Lm<Norm>)
where
    Norm: Parameters
        + Module<Traced<f32, Rank3<2, 5, 8>, Cpu>, Output = Traced<f32, Rank3<2, 5, 8>, Cpu>>,
{
    load(&model, fixture(&format!("{family}.safetensors"))).unwrap();
    model.eval();
    let file = TensorFile::open(fixture(&format!("{family}.io.safetensors"))).unwrap();
    let tokens: Tensor<i64, Rank2<2, 5>, Cpu> = file.tensor("tokens").unwrap();
    let targets: Tensor<i64, Rank2<2, 5>, Cpu> = file.tensor("targets").unwrap();
    let padding: Tensor<u8, Rank2<2, 5>, Cpu> = file.tensor("key_padding_mask").unwrap();
    let logits = model.logits(&tokens, &padding);
    let want: Tensor<f32, Rank3<2, 5, 16>, Cpu> = file.tensor("eval.output").unwrap();
    assert_matches(
        &format!("{family} eval.output"),
        &logits.value().to_vec(),
        &want.to_vec(),
        1e-5,
    );
    let loss = logits
        .cross_entropy(&targets.reshape::<Rank1<10>>())
        .mean_all();
    let want: Tensor<f32, Rank0, Cpu> = file.tensor("eval.loss").unwrap();
    assert_matches(
        &format!("{family} eval.loss"),
        &loss.value().to_vec(),
        &want.to_vec(),
        1e-5,
    );
    let grads = loss.backward();
    let mut compare = CompareGrads {
        grads: &grads,
        file: &file,
        mode: "eval",
        compared: 0,
    };
    model.visit_params("", &mut compare);
    assert_eq!(compare.compared, parameter_count(&model));
}

fn encoder_layers(norm_first: bool) -> impl FnMut(usize) -> EncoderLayer {
    move |i| {
        let activation = if norm_first {
            FeedForwardActivation::Gelu
        } else {
            FeedForwardActivation::Relu
        };
        let config = TransformerConfig {
            dropout: 0.0,
            activation,
            norm_first,
            ..TransformerConfig::default()
        };
        EncoderLayer::new(i as u64, config)
    }
}

#[test]
fn transformer_encoder_checkpoint_matches_pytorch_post_norm() {
    let model = Lm {
        embed: Embedding::zeros(),
        encoder: TransformerEncoder::new(encoder_layers(false)),
        head: Linear::zeros(),
    };
    transformer_matches("transformer_post_norm", model);
}

#[test]
fn transformer_encoder_checkpoint_matches_pytorch_pre_norm() {
    let model = Lm {
        embed: Embedding::zeros(),
        encoder: TransformerEncoder::new(encoder_layers(true))
            .with_norm(LayerNorm::<f32, 8, Cpu>::new(1e-5)),
        head: Linear::zeros(),
    };
    transformer_matches("transformer_pre_norm", model);
}

// (d) A 2-layer bidirectional LSTM and GRU over a padded batch with per-sample lengths (PyTorch's packed
// sequence), from given initial states; loss `sum(out * r_out) + sum(h_n * r_h) (+ sum(c_n * r_c))`.

type States = Tensor<f32, Rank4<2, 2, 3, 4>, Cpu>;

/// The stack loaded from `family` gives PyTorch's outputs, final states, loss and every gradient.
fn recurrent_matches<K: RecurrentKind>(family: &str) {
    let model = Recurrent::<f32, K, 3, 4, 2, Cpu, Bidirectional>::zeros();
    load(&model, fixture(&format!("{family}.safetensors"))).unwrap();
    let file = TensorFile::open(fixture(&format!("{family}.io.safetensors"))).unwrap();
    let x: Tensor<f32, Rank3<3, 5, 3>, Cpu> = file.tensor("input").unwrap();
    let lengths: Tensor<i32, Rank1<3>, Cpu> = file.tensor("lengths").unwrap();
    let lengths = lengths.to_dtype::<u32>();
    let read = |name: &str| -> States { file.tensor(name).unwrap() };
    let lstm = K::CELL == CellType::Lstm;
    let (input, h0, c0) = (Var::new(x), Var::new(read("h0")), Var::new(read("c0")));
    let (h0_t, c0_t) = (h0.trace(), c0.trace());
    let args = RnnArgs::new().initial(&h0_t).lengths(&lengths);
    let args = if lstm { args.initial_cell(&c0_t) } else { args };
    let (out, (h_n, c_n)) = model.run(input.trace(), args);
    let want: Tensor<f32, Rank4<3, 5, 2, 4>, Cpu> = file.tensor("eval.output").unwrap();
    assert_matches(
        &format!("{family} output"),
        &out.value().to_vec(),
        &want.to_vec(),
        1e-5,
    );
    assert_matches(
        &format!("{family} h_n"),
        &h_n.value().to_vec(),
        &read("eval.h_n").to_vec(),
        1e-5,
    );
    let r_out: Tensor<f32, Rank4<3, 5, 2, 4>, Cpu> = file.tensor("r_out").unwrap();
    let mut loss = (out * &Traced::constant(r_out)).sum_all()
        + (h_n * &Traced::constant(read("r_h"))).sum_all();
    match c_n {
        Some(c_n) => {
            assert!(lstm);
            assert_matches(
                &format!("{family} c_n"),
                &c_n.value().to_vec(),
                &read("eval.c_n").to_vec(),
                1e-5,
            );
            loss = loss + (c_n * &Traced::constant(read("r_c"))).sum_all();
        }
        None => assert!(!lstm, "an LSTM returns its cell states"),
    }
    let want: Tensor<f32, Rank0, Cpu> = file.tensor("eval.loss").unwrap();
    assert_matches(
        &format!("{family} loss"),
        &loss.value().to_vec(),
        &want.to_vec(),
        1e-5,
    );
    let grads = loss.backward();
    let want: Tensor<f32, Rank3<3, 5, 3>, Cpu> = file.tensor("eval.grad.input").unwrap();
    assert_matches(
        "grad.input",
        &grads.get(&input).to_vec(),
        &want.to_vec(),
        1e-4,
    );
    assert_matches(
        "grad.h0",
        &grads.get(&h0).to_vec(),
        &read("eval.grad.h0").to_vec(),
        1e-4,
    );
    if lstm {
        assert_matches(
            "grad.c0",
            &grads.get(&c0).to_vec(),
            &read("eval.grad.c0").to_vec(),
            1e-4,
        );
    }
    let mut compare = CompareGrads {
        grads: &grads,
        file: &file,
        mode: "eval",
        compared: 0,
    };
    model.visit_params("", &mut compare);
    assert_eq!(
        compare.compared, 16,
        "2 layers x 2 directions x (2 weights + 2 biases)"
    );
}

#[test]
fn lstm_checkpoint_matches_pytorch_with_lengths() {
    recurrent_matches::<LstmKind>("lstm");
}

#[test]
fn gru_checkpoint_matches_pytorch_with_lengths() {
    recurrent_matches::<GruKind>("gru");
}
