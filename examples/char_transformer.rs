//! Trains a small character-level transformer language model on Shakespeare (data/tinyshakespeare.txt.gz, the
//! first 300 KB of char-rnn's "tiny Shakespeare") and samples from it: `cargo run --release --example
//! char_transformer` (or with a step count as argument). It prints progress while it trains (step, loss,
//! steps/s), then the held-out loss against a bigram model counted from the same training text in the same run
//! (the model must beat it), then a sample.
//!
//! The model: a character embedding and learned positions (`E = 64`), two pre-norm transformer encoder layers
//! (4 heads of 16, feed-forward 256, GELU) with causal masking and a final norm, a linear head over the
//! vocabulary. Every shape is in the types: the context (`CTX`), the batch, the widths.

use std::io::Read;
use std::time::Instant;
use typed_tensor::autograd::Traced;
use typed_tensor::nn::{
    layer, Embedding, FeedForwardActivation, LayerNorm, Linear, MhaMasks, Module, Parameters,
    TransformerConfig, TransformerEncoder, TransformerEncoderLayer,
};
use typed_tensor::optim::{Adam, AdamConfig, Optimizer};
use typed_tensor::prelude::*;

/// Vocabulary slots (the text has 62 distinct characters).
pub const V: usize = 64;
/// Context length: the characters the model sees at once.
pub const CTX: usize = 32;
/// Embedding width.
pub const E: usize = 64;
/// Sequences per training step.
pub const BATCH: usize = 16;

/// One encoder layer: 4 heads of 16, feed-forward 256.
pub type Layer = TransformerEncoderLayer<f32, E, 4, 16, 256, Cpu>;

/// The language model. Parameter names as a PyTorch port would have them (`embed.weight`, `positions.weight`,
/// `encoder.layers.0.self_attn.in_proj_weight`, ..., `head.weight`).
#[derive(Parameters)]
pub struct CharTransformer {
    /// Character embeddings.
    pub embed: Embedding<f32, V, E, Cpu>,
    /// Learned positions, one row per context position.
    pub positions: Embedding<f32, CTX, E, Cpu>,
    /// Two pre-norm layers and a final norm.
    pub encoder: TransformerEncoder<Layer, 2, LayerNorm<f32, E, Cpu>>,
    /// Logits over the vocabulary.
    pub head: Linear<f32, E, V, Cpu>,
}

/// The encoder and head over embedded sequences, written once for plain tensors and traced values.
struct Body<'a>(&'a CharTransformer);

#[layer]
impl<const B: usize> Module<Value<f32, Rank3<B, CTX, E>, Cpu>> for Body<'_> {
    type Output = Value<f32, Rank3<B, CTX, V>, Cpu>;
    fn forward(&self, x: Value<f32, Rank3<B, CTX, E>, Cpu>) -> Self::Output {
        let x = self.0.encoder.forward_masked(x, MhaMasks::new().causal());
        self.0.head.forward(x)
    }
}

impl CharTransformer {
    /// A model with PyTorch's initialisations from `seed`, dropout off.
    pub fn new(seed: u64) -> Self {
        let config = TransformerConfig {
            dropout: 0.0,
            activation: FeedForwardActivation::Gelu,
            norm_first: true,
            ..TransformerConfig::default()
        };
        CharTransformer {
            embed: Embedding::new(seed),
            positions: Embedding::new(seed + 1),
            encoder: TransformerEncoder::new(|i| Layer::new(seed + 2 + i as u64, config))
                .with_norm(LayerNorm::new(1e-5)),
            head: Linear::new(seed + 9),
        }
    }

    /// Next-character logits for every position of `tokens`, traced for training.
    pub fn traced_logits<const B: usize>(
        &self,
        tokens: &Tensor<u32, Rank2<B, CTX>, Cpu>,
    ) -> Traced<f32, Rank3<B, CTX, V>, Cpu> {
        let x = self.embed.lookup(tokens) + &self.positions.weight.trace();
        Body(self).forward(x)
    }

    /// Next-character logits for every position of `tokens`, plain (inference).
    pub fn logits<const B: usize>(
        &self,
        tokens: &Tensor<u32, Rank2<B, CTX>, Cpu>,
    ) -> Tensor<f32, Rank3<B, CTX, V>, Cpu> {
        let x = self.embed.forward(tokens.clone()) + &self.positions.weight.value();
        Body(self).forward(x)
    }
}

/// The training text: characters as vocabulary indices, and the characters themselves.
pub struct Corpus {
    /// The text as indices into `chars`.
    pub ids: Vec<u32>,
    /// The distinct characters, sorted.
    pub chars: Vec<char>,
}

/// Reads data/tinyshakespeare.txt.gz.
pub fn corpus() -> Corpus {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/tinyshakespeare.txt.gz");
    let file = std::fs::File::open(path).expect("data/tinyshakespeare.txt.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("gzip-compressed UTF-8");
    let mut chars: Vec<char> = text.chars().collect();
    chars.sort_unstable();
    chars.dedup();
    assert!(chars.len() <= V, "{} characters for {V} slots", chars.len());
    let ids = text
        .chars()
        .map(|c| chars.binary_search(&c).expect("in the vocabulary") as u32)
        .collect();
    Corpus { ids, chars }
}

/// A run's settings.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Training steps.
    pub steps: usize,
    /// Adam's learning rate.
    pub lr: f64,
    /// Initialisation and batch seed.
    pub seed: u64,
    /// Held-out batches to evaluate.
    pub eval_batches: usize,
    /// Print progress every this many steps (0: never).
    pub log_every: usize,
}

/// What a run measured.
#[derive(Debug)]
pub struct Report {
    /// Held-out cross entropy of the model, nats per character.
    pub model_loss: f64,
    /// Held-out cross entropy of the bigram model on the same positions.
    pub bigram_loss: f64,
    /// Training steps per second.
    pub steps_per_second: f64,
}

/// A small xorshift generator: batch offsets and sampling.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Windows of `ids` at `starts`: the inputs and the next characters.
fn batch(
    ids: &[u32],
    starts: &[usize],
) -> (
    Tensor<u32, Rank2<BATCH, CTX>, Cpu>,
    Tensor<u32, Rank1<{ BATCH * CTX }>, Cpu>,
) {
    let inputs = starts
        .iter()
        .flat_map(|&s| ids[s..s + CTX].iter().copied())
        .collect();
    let targets = starts
        .iter()
        .flat_map(|&s| ids[s + 1..s + CTX + 1].iter().copied())
        .collect();
    (
        Tensor::from_vec(inputs).expect("BATCH x CTX"),
        Tensor::from_vec(targets).expect("BATCH x CTX"),
    )
}

/// The bigram model's held-out cross entropy over the same targets: `P(next | current)` counted on `train` with
/// add-one smoothing.
fn bigram_loss(train: &[u32], inputs: &[u32], targets: &[u32]) -> f64 {
    let mut counts = vec![1.0f64; V * V];
    for pair in train.windows(2) {
        counts[pair[0] as usize * V + pair[1] as usize] += 1.0;
    }
    let total: f64 = inputs
        .iter()
        .zip(targets)
        .map(|(&a, &b)| {
            let row = &counts[a as usize * V..][..V];
            -(row[b as usize] / row.iter().sum::<f64>()).ln()
        })
        .sum();
    total / inputs.len() as f64
}

/// Trains a model on the first 90% of the text and measures both models on the rest.
pub fn train(config: &Config) -> (CharTransformer, Report) {
    let corpus = corpus();
    let split = corpus.ids.len() * 9 / 10;
    let (train_ids, held_out) = corpus.ids.split_at(split);
    let model = CharTransformer::new(config.seed);
    let mut opt = Adam::new(
        &model,
        AdamConfig {
            lr: config.lr,
            ..AdamConfig::default()
        },
    );
    let mut rng = Rng(config.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let started = Instant::now();
    let mut window_loss = 0.0;
    for step in 1..=config.steps {
        let starts: Vec<usize> = (0..BATCH)
            .map(|_| rng.below(train_ids.len() - CTX - 1))
            .collect();
        let (inputs, targets) = batch(train_ids, &starts);
        let logits: Traced<f32, Rank2<{ BATCH * CTX }, V>, Cpu> =
            model.traced_logits(&inputs).reshape();
        let loss = logits.cross_entropy(&targets).mean_all();
        window_loss += f64::from(loss.value().to_scalar());
        opt.step(&loss.backward());
        if config.log_every > 0 && step % config.log_every == 0 {
            let rate = step as f64 / started.elapsed().as_secs_f64();
            println!(
                "step {step:5}  loss {:.3}  {rate:.1} steps/s",
                window_loss / config.log_every as f64
            );
            window_loss = 0.0;
        }
    }
    let steps_per_second = config.steps as f64 / started.elapsed().as_secs_f64();
    // Held out: evenly spaced windows, every position's next character.
    let stride = (held_out.len() - CTX - 1) / (config.eval_batches * BATCH);
    let (mut model_total, mut inputs_all, mut targets_all) = (0.0, Vec::new(), Vec::new());
    for k in 0..config.eval_batches {
        let starts: Vec<usize> = (0..BATCH).map(|i| (k * BATCH + i) * stride).collect();
        let (inputs, targets) = batch(held_out, &starts);
        let logits: Tensor<f32, Rank2<{ BATCH * CTX }, V>, Cpu> = model.logits(&inputs).reshape();
        model_total += f64::from(logits.cross_entropy(&targets).mean_all().to_scalar());
        inputs_all.extend(inputs.to_vec());
        targets_all.extend(targets.to_vec());
    }
    let report = Report {
        model_loss: model_total / config.eval_batches as f64,
        bigram_loss: bigram_loss(train_ids, &inputs_all, &targets_all),
        steps_per_second,
    };
    (model, report)
}

/// `n` characters sampled from `model` at `temperature` after `prompt` (at least `CTX` characters).
pub fn sample(
    model: &CharTransformer,
    corpus: &Corpus,
    prompt: &[u32],
    n: usize,
    temperature: f64,
    seed: u64,
) -> String {
    let mut context: Vec<u32> = prompt[prompt.len() - CTX..].to_vec();
    let mut rng = Rng(seed | 1);
    let mut out = String::new();
    for _ in 0..n {
        let tokens =
            Tensor::<u32, Rank2<1, CTX>, Cpu>::from_vec(context.clone()).expect("CTX tokens");
        let logits = model.logits(&tokens).i((0, CTX - 1)).to_vec();
        let max = logits.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let weights: Vec<f64> = logits
            .iter()
            .enumerate()
            .map(|(i, &l)| {
                if i < corpus.chars.len() {
                    (f64::from(l - max) / temperature).exp()
                } else {
                    0.0
                }
            })
            .collect();
        let mut pick = (rng.next() as f64 / u64::MAX as f64) * weights.iter().sum::<f64>();
        let next = weights
            .iter()
            .position(|&w| {
                pick -= w;
                pick <= 0.0
            })
            .unwrap_or(corpus.chars.len() - 1);
        out.push(corpus.chars[next]);
        context.remove(0);
        context.push(next as u32);
    }
    out
}

#[allow(dead_code)] // the test includes this file as a module and calls `train`, not `main`
fn main() {
    let steps = std::env::args()
        .nth(1)
        .map_or(2000, |s| s.parse().expect("a step count"));
    let config = Config {
        steps,
        lr: 2e-3,
        seed: 1,
        eval_batches: 32,
        log_every: 100,
    };
    println!("training {steps} steps of {BATCH} x {CTX} characters");
    let (model, report) = train(&config);
    println!(
        "held out: model {:.3} nats/char, bigram {:.3} ({:.1} steps/s)",
        report.model_loss, report.bigram_loss, report.steps_per_second
    );
    let corpus = corpus();
    let prompt = &corpus.ids[corpus.ids.len() - 200..];
    println!(
        "--- sample ---\n{}",
        sample(&model, &corpus, prompt, 400, 0.8, 7)
    );
}
