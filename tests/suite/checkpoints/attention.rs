//! (b) Multi-head attention, (c) the transformer encoder language model, (e) the transformer decoder.

use super::{assert_matches, fixture, parameter_count, CompareGrads};
use typed_tensor::autograd::Var;
use typed_tensor::io::{load, TensorFile};
use typed_tensor::nn::{
    Embedding, FeedForwardActivation, LayerNorm, Linear, MhaMasks, Module, MultiheadAttention,
    Parameters, TransformerConfig, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer,
};
use typed_tensor::prelude::*;

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

// (e) A 2-layer transformer decoder over a given memory, both norm orders: causal self-attention with a target
// padding mask, a memory padding mask; loss `sum(out * r)`.

type DecoderLayer = TransformerDecoderLayer<f32, 8, 2, 4, 16, Cpu>;

/// The decoder of `family` gives PyTorch's output, loss and gradients (the target's, the memory's, every
/// parameter's).
fn decoder_matches<Norm>(family: &str, decoder: TransformerDecoder<DecoderLayer, 2, Norm>)
where
    Norm: Parameters
        + Module<Traced<f32, Rank3<2, 4, 8>, Cpu>, Output = Traced<f32, Rank3<2, 4, 8>, Cpu>>,
{
    load(&decoder, fixture(&format!("{family}.safetensors"))).unwrap();
    decoder.eval();
    let file = TensorFile::open(fixture(&format!("{family}.io.safetensors"))).unwrap();
    let tgt = Var::new(file.tensor::<f32, Rank3<2, 4, 8>, Cpu>("tgt").unwrap());
    let memory = Var::new(file.tensor::<f32, Rank3<2, 6, 8>, Cpu>("memory").unwrap());
    let r: Tensor<f32, Rank3<2, 4, 8>, Cpu> = file.tensor("r").unwrap();
    let tgt_padding: Tensor<u8, Rank2<2, 4>, Cpu> = file.tensor("tgt_key_padding_mask").unwrap();
    let memory_padding: Tensor<u8, Rank2<2, 6>, Cpu> =
        file.tensor("memory_key_padding_mask").unwrap();
    let out = decoder.forward_masked(
        tgt.trace(),
        memory.trace(),
        MhaMasks::new().causal().key_padding_mask(&tgt_padding),
        MhaMasks::new().key_padding_mask(&memory_padding),
    );
    let want: Tensor<f32, Rank3<2, 4, 8>, Cpu> = file.tensor("eval.output").unwrap();
    assert_matches(
        &format!("{family} output"),
        &out.value().to_vec(),
        &want.to_vec(),
        1e-5,
    );
    let loss = (out * &Traced::constant(r)).sum_all();
    let want: Tensor<f32, Rank0, Cpu> = file.tensor("eval.loss").unwrap();
    assert_matches(
        &format!("{family} loss"),
        &loss.value().to_vec(),
        &want.to_vec(),
        1e-5,
    );
    let grads = loss.backward();
    let want: Tensor<f32, Rank3<2, 4, 8>, Cpu> = file.tensor("eval.grad.tgt").unwrap();
    assert_matches("grad.tgt", &grads.get(&tgt).to_vec(), &want.to_vec(), 1e-4);
    let want: Tensor<f32, Rank3<2, 6, 8>, Cpu> = file.tensor("eval.grad.memory").unwrap();
    assert_matches(
        "grad.memory",
        &grads.get(&memory).to_vec(),
        &want.to_vec(),
        1e-4,
    );
    let mut compare = CompareGrads {
        grads: &grads,
        file: &file,
        mode: "eval",
        compared: 0,
    };
    decoder.visit_params("", &mut compare);
    assert_eq!(compare.compared, parameter_count(&decoder));
}

fn decoder_layers(norm_first: bool) -> impl FnMut(usize) -> DecoderLayer {
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
        DecoderLayer::new(i as u64, config)
    }
}

#[test]
fn transformer_decoder_checkpoint_matches_pytorch_post_norm() {
    decoder_matches(
        "decoder_post_norm",
        TransformerDecoder::new(decoder_layers(false)),
    );
}

#[test]
fn transformer_decoder_checkpoint_matches_pytorch_pre_norm() {
    let decoder = TransformerDecoder::new(decoder_layers(true))
        .with_norm(LayerNorm::<f32, 8, Cpu>::new(1e-5));
    decoder_matches("decoder_pre_norm", decoder);
}
