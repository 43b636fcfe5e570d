//! Trains an MLP, a small CNN and a ResNet-style CNN with batch norm on the 8x8 handwritten digits
//! (data/digits.csv.gz, 1797 images) and reports held-out accuracy: `cargo run --release --example train_digits`
//! (all three), or with `mlp` / `cnn` / `bn-cnn` as argument.
//! The models are generic over the device: with `--features cuda`, `cuda` as second argument trains on the GPU
//! (`cargo run --release --features cuda --example train_digits -- mlp cuda`), the same code unchanged, and
//! `cuda-graph` records each step's forward and backward pass once as a CUDA graph (after one eager step) and
//! replays it per batch, writing each batch's positions in the training split into the recorded index tensor
//! (`Tensor::copy_from`); the split stays on the device and the graph gathers the batch from it.
//!
//! The models' types spell their shapes: the MLP is `Linear<f32, 64, 64>`, `ReLU`, `Linear<f32, 64, 10>`; the
//! CNN reshapes each row of 64 pixels into a 1x8x8 image (a user-defined layer, [`ToImage`]), then two
//! conv/ReLU/max-pool blocks and a linear classifier. The batch-norm CNN has a residual block of two
//! conv/batch-norm layers (a user-defined layer, [`Residual`]); it trains in training mode (batch statistics)
//! and is evaluated in evaluation mode (running statistics). Stacking layers whose shapes disagree does not
//! compile.
//! Batches have a static size (`BATCH`); evaluation runs each whole split at once.

use std::io::Read;
use std::time::{Duration, Instant};
use typed_tensor::autograd::{AutogradDevice, Traced};
use typed_tensor::nn::{
    join_name, layer, BatchNorm2d, Conv2d, Flatten, Linear, MaxPool2d, Module, ParamVisitor,
    Parameters, ReLU,
};
use typed_tensor::optim::{Adam, AdamConfig, Optimizer};
use typed_tensor::prelude::*;

/// Pixels per image.
pub const PIXELS: usize = 64;
/// Images per training step.
pub const BATCH: usize = 32;
/// Hidden width.
pub const HIDDEN: usize = 64;

/// The MLP: 64 -> 64 -> ReLU -> 10.
pub type Mlp<D> = (
    Linear<f32, PIXELS, HIDDEN, D>,
    ReLU,
    Linear<f32, HIDDEN, 10, D>,
);

/// Training and held-out split sizes (80/20 of 1797).
pub const TRAIN: usize = 1437;
pub const TEST: usize = 360;
/// Training steps per epoch (the last, partial batch of each shuffled order is left out).
pub const STEPS: usize = TRAIN / BATCH;

/// The CNN: 1x8x8 -> conv 3x3 (8 channels) -> ReLU -> max-pool -> 8x4x4 -> conv 3x3 (16) -> ReLU -> max-pool ->
/// 16x2x2 -> linear 64 -> 10. Conv and pool layers name their output size (stable Rust cannot compute it in a
/// type); a wrong one fails the build.
pub type Cnn<D> = (
    (
        ToImage,
        Conv2d<f32, 1, 8, 3, 8, 8, D, 1, 1>,
        ReLU,
        MaxPool2d<2, 2, 0, 4, 4>,
    ),
    (
        Conv2d<f32, 8, 16, 3, 4, 4, D, 1, 1>,
        ReLU,
        MaxPool2d<2, 2, 0, 2, 2>,
    ),
    Flatten<64>,
    Linear<f32, 64, 10, D>,
);

/// Channels of the batch-norm CNN.
pub const WIDTH: usize = 16;

/// A 3x3 "same" convolution, `WIDTH -> WIDTH` channels on 8x8, followed by batch norm.
pub type ConvBn<D> = (
    Conv2d<f32, WIDTH, WIDTH, 3, 8, 8, D, 1, 1>,
    BatchNorm2d<f32, WIDTH, D>,
);

/// The batch-norm CNN: 1x8x8 -> conv 3x3 (16) -> batch norm -> ReLU -> a residual block (conv, batch norm,
/// ReLU, conv, batch norm, plus the block's input) -> ReLU -> max-pool -> 16x4x4 -> linear 256 -> 10.
pub type BnCnn<D> = (
    (
        ToImage,
        Conv2d<f32, 1, WIDTH, 3, 8, 8, D, 1, 1>,
        BatchNorm2d<f32, WIDTH, D>,
        ReLU,
    ),
    Residual<(ConvBn<D>, ReLU, ConvBn<D>)>,
    ReLU,
    MaxPool2d<2, 2, 0, 4, 4>,
    Flatten<{ WIDTH * 16 }>,
    Linear<f32, { WIDTH * 16 }, 10, D>,
);

/// A user-defined layer: `x + body(x)`, the skip connection of a residual block, for any body whose output has
/// its input's type.
pub struct Residual<M>(pub M);

impl<X, M> Module<X> for Residual<M>
where
    X: Clone + core::ops::Add<X, Output = X>,
    M: Module<X, Output = X>,
{
    type Output = X;
    fn forward(&self, x: X) -> X {
        self.0.forward(x.clone()) + x
    }
}

impl<M: Parameters> Parameters for Residual<M> {
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V) {
        self.0.visit_params(&join_name(prefix, "body"), visitor);
    }
}

/// A user-defined layer: rows of 64 pixels as 1x8x8 images (no parameters: the derived walk visits nothing).
#[derive(Clone, Copy, Default, Parameters)]
pub struct ToImage;

// `#[layer]` compiles this impl for plain tensors and for traced values alike (`Value` stands for each).
#[layer]
impl<const N: usize, D: Device> Module<Value<f32, Rank2<N, PIXELS>, D>> for ToImage {
    type Output = Value<f32, Rank4<N, 1, 8, 8>, D>;
    fn forward(&self, x: Value<f32, Rank2<N, PIXELS>, D>) -> Self::Output {
        x.reshape()
    }
}

/// What the training loop needs of a model on device `D`: a traced pass over a batch, plain passes over each
/// split.
pub trait Classifier<D: Device>:
    Module<Traced<f32, Rank2<BATCH, PIXELS>, D>, Output = Traced<f32, Rank2<BATCH, 10>, D>>
    + Module<Tensor<f32, Rank2<TRAIN, PIXELS>, D>, Output = Tensor<f32, Rank2<TRAIN, 10>, D>>
    + Module<Tensor<f32, Rank2<TEST, PIXELS>, D>, Output = Tensor<f32, Rank2<TEST, 10>, D>>
    + Parameters
{
}
impl<M, D: Device> Classifier<D> for M where
    M: Module<Traced<f32, Rank2<BATCH, PIXELS>, D>, Output = Traced<f32, Rank2<BATCH, 10>, D>>
        + Module<Tensor<f32, Rank2<TRAIN, PIXELS>, D>, Output = Tensor<f32, Rank2<TRAIN, 10>, D>>
        + Module<Tensor<f32, Rank2<TEST, PIXELS>, D>, Output = Tensor<f32, Rank2<TEST, 10>, D>>
        + Parameters
{
}

/// Which model to train.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    Mlp,
    Cnn,
    BnCnn,
}

/// One split of the data set: pixels scaled to [0, 1], labels 0..=9.
pub struct Split {
    pub images: Vec<[f32; PIXELS]>,
    pub labels: Vec<u32>,
}

/// Reads the bundled CSV (64 pixels in 0..=16 and a label per line) and splits it 80/20 after a seeded shuffle.
pub fn load_digits(seed: u64) -> (Split, Split) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/digits.csv.gz");
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("data/digits.csv.gz is gzip-compressed text");
    let mut rows: Vec<([f32; PIXELS], u32)> = text
        .lines()
        .map(|line| {
            let values: Vec<f32> = line
                .split(',')
                .map(|v| v.trim().parse().expect("a number"))
                .collect();
            assert_eq!(values.len(), PIXELS + 1, "64 pixels and a label per line");
            let mut image = [0.0; PIXELS];
            for (p, v) in image.iter_mut().zip(&values) {
                *p = v / 16.0;
            }
            (image, values[PIXELS] as u32)
        })
        .collect();
    assert_eq!(rows.len(), 1797);
    shuffle(&mut rows, seed);
    let test = rows.split_off(rows.len() * 4 / 5);
    let split = |rows: Vec<([f32; PIXELS], u32)>| Split {
        images: rows.iter().map(|r| r.0).collect(),
        labels: rows.iter().map(|r| r.1).collect(),
    };
    (split(rows), split(test))
}

/// Fisher-Yates with a small xorshift generator (the order only needs to be reproducible).
fn shuffle<X>(items: &mut [X], seed: u64) {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for i in (1..items.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        items.swap(i, (state % (i as u64 + 1)) as usize);
    }
}

/// Training settings.
pub struct Config {
    pub arch: Arch,
    pub epochs: usize,
    /// Peak learning rate (Adam), decayed to 0 by a cosine schedule.
    pub lr: f64,
    pub seed: u64,
    /// Print a line per epoch.
    pub verbose: bool,
}

/// What training gives.
pub struct Report {
    pub test_accuracy: f64,
    pub final_loss: f32,
    /// Wall time per epoch (the median of the epochs after the first, evaluation and printing included), and the
    /// mean parts of an epoch spent building the graph and loss (forward), in `backward()`, and in the optimizer.
    pub epoch_time: Duration,
    /// Wall time of the first epoch, which also pays one-time costs (a GPU library loading its kernels, the
    /// caches filling).
    pub first_epoch: Duration,
    pub forward: Duration,
    pub backward: Duration,
    pub optimizer: Duration,
}

/// Accuracy of `model` on `split` (`N` images), the whole split in one batch.
pub fn accuracy<const N: usize, M, D: Device>(model: &M, split: &Split) -> f64
where
    M: Module<Tensor<f32, Rank2<N, PIXELS>, D>, Output = Tensor<f32, Rank2<N, 10>, D>>,
{
    let flat: Vec<f32> = split.images.iter().flatten().copied().collect();
    let x = Tensor::<f32, Rank2<N, PIXELS>, D>::from_vec(flat).unwrap();
    let predicted = model.forward(x).argmax::<Axis<1>>().to_vec();
    let right = predicted
        .iter()
        .zip(&split.labels)
        .filter(|(p, l)| p == l)
        .count();
    right as f64 / N as f64
}

/// What a training step's forward and backward pass give: the batch's mean loss and the gradients.
pub type StepOutput<D> = (Tensor<f32, (), D>, typed_tensor::autograd::Gradients);

/// Records a training step's forward and backward pass once, for replays (a CUDA graph: see
/// [`cuda_graph_recorder`]): gives the replay, and the tensors each replay rewrites.
pub type Recorder<D> = fn(&mut dyn FnMut() -> StepOutput<D>) -> Recorded<D>;

/// A recorded step: the replay, and the tensors each replay rewrites.
pub type Recorded<D> = (Box<dyn Fn()>, StepOutput<D>);

/// The recorder of `cuda-graph` runs: `Cuda::capture`, and `CudaGraph::replay` per step.
#[cfg(feature = "cuda")]
pub fn cuda_graph_recorder(
    step: &mut dyn FnMut() -> StepOutput<typed_tensor::device::Cuda>,
) -> Recorded<typed_tensor::device::Cuda> {
    let (graph, out) =
        typed_tensor::device::Cuda::capture(step).expect("capture the training step");
    (
        Box::new(move || graph.replay().expect("replay the training step")),
        out,
    )
}

/// Trains the model `config.arch` names on device `D`.
pub fn train<D: AutogradDevice>(config: &Config) -> Report {
    train_with::<D>(config, None)
}

/// [`train`], with each step's forward and backward pass recorded once by `recorder` (after one eager step) and
/// replayed, when given.
pub fn train_with<D: AutogradDevice>(config: &Config, recorder: Option<Recorder<D>>) -> Report {
    match config.arch {
        Arch::Mlp => {
            let model: Mlp<D> = (Linear::new(config.seed), ReLU, Linear::new(config.seed + 1));
            train_model(&model, config, recorder)
        }
        Arch::Cnn => {
            let model: Cnn<D> = (
                (ToImage, Conv2d::new(config.seed), ReLU, MaxPool2d),
                (Conv2d::new(config.seed + 1), ReLU, MaxPool2d),
                Flatten,
                Linear::new(config.seed + 2),
            );
            train_model(&model, config, recorder)
        }
        Arch::BnCnn => {
            let conv_bn = |seed| (Conv2d::new(seed), BatchNorm2d::new());
            let model: BnCnn<D> = (
                (ToImage, Conv2d::new(config.seed), BatchNorm2d::new(), ReLU),
                Residual((conv_bn(config.seed + 1), ReLU, conv_bn(config.seed + 2))),
                ReLU,
                MaxPool2d,
                Flatten,
                Linear::new(config.seed + 3),
            );
            train_model(&model, config, recorder)
        }
    }
}

/// Trains the MLP on device `D` (whatever `config.arch` says) and hands it back with the report.
pub fn train_mlp<D: AutogradDevice>(config: &Config) -> (Mlp<D>, Report) {
    let model: Mlp<D> = (Linear::new(config.seed), ReLU, Linear::new(config.seed + 1));
    let report = train_model(&model, config, None);
    (model, report)
}

fn train_model<D: AutogradDevice, M: Classifier<D>>(
    model: &M,
    config: &Config,
    recorder: Option<Recorder<D>>,
) -> Report {
    let (train, test) = load_digits(config.seed);
    assert_eq!((train.labels.len(), test.labels.len()), (TRAIN, TEST));
    // Cosine decay of the learning rate over the whole run settles the last epochs.
    let total_steps = (config.epochs * (TRAIN / BATCH)) as f64;
    let peak = config.lr;
    let mut opt = Adam::new(model, AdamConfig::default()).with_schedule(move |step| {
        0.5 * peak * (1.0 + (std::f64::consts::PI * step as f64 / total_steps).cos())
    });
    let mut order: Vec<u32> = (0..TRAIN as u32).collect();
    let (mut forward, mut backward, mut optimizer) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let mut final_loss = f32::NAN;
    let mut epoch_times = Vec::with_capacity(config.epochs);
    // The training split lives on the device: each step gathers its batch there (`index_select` by the epoch's
    // shuffled order) and adds its loss to a sum read once per epoch, so no step waits for the device (a GPU
    // runs the steps the host has queued while the host queues the next).
    let images: Vec<f32> = train.images.iter().flatten().copied().collect();
    let train_x = Tensor::<f32, Rank2<TRAIN, PIXELS>, D>::from_vec(images).unwrap();
    let train_y = Tensor::<u32, Rank1<TRAIN>, D>::from_vec(train.labels.clone()).unwrap();
    let step = |ids: &Tensor<u32, Rank1<BATCH>, D>| {
        let x = train_x.index_select::<Axis<0>, _, _>(ids);
        let y = train_y.index_select::<Axis<0>, _, _>(ids);
        let logits: Traced<f32, Rank2<BATCH, 10>, D> = model.forward(Traced::constant(x));
        logits.cross_entropy(&y).mean_all()
    };
    // With a recorder, each step's batch positions are written into this tensor, which the recorded step reads.
    let mut ids_in = Tensor::<u32, Rank1<BATCH>, D>::zeros();
    let mut recorded: Option<Recorded<D>> = None;
    let mut warmed_up = false;
    for epoch in 0..config.epochs {
        let start = Instant::now();
        model.train(); // batch statistics and dropout, where the model has them
        shuffle(&mut order, config.seed ^ (epoch as u64 + 1));
        let batches: Tensor<u32, Rank2<STEPS, BATCH>, D> =
            Tensor::from_vec(order[..STEPS * BATCH].to_vec()).unwrap();
        let mut loss_sum = Tensor::<f32, (), D>::zeros();
        for b in 0..STEPS {
            let t0 = Instant::now();
            let ids = batches.i(b);
            let (t1, t2);
            if let (Some(record), true) = (recorder, warmed_up) {
                ids_in.copy_from(&ids);
                let (replay, (loss, grads)) = recorded.get_or_insert_with(|| {
                    record(&mut || {
                        let loss = step(&ids_in);
                        (loss.value().clone(), loss.backward())
                    })
                });
                replay();
                loss_sum += &*loss;
                (t1, t2) = (Instant::now(), Instant::now());
                opt.step(grads);
            } else {
                // Eager; with a recorder, the one step before the recording (Adam makes its moments outside it).
                let loss = step(&ids);
                loss_sum += loss.value();
                t1 = Instant::now();
                let grads = loss.backward();
                t2 = Instant::now();
                opt.step(&grads);
                warmed_up = true;
            }
            let t3 = Instant::now();
            forward += t1 - t0;
            backward += t2 - t1;
            optimizer += t3 - t2;
        }
        final_loss = loss_sum.to_scalar() / STEPS as f32;
        model.eval(); // running statistics (plain tensors would use them anyway: they are inference)
        if config.verbose {
            println!(
                "epoch {:2}: loss {:.4}, train accuracy {:.1}%, test accuracy {:.1}%",
                epoch + 1,
                final_loss,
                100.0 * accuracy::<TRAIN, M, D>(model, &train),
                100.0 * accuracy::<TEST, M, D>(model, &test)
            );
        }
        epoch_times.push(start.elapsed());
    }
    let epochs = config.epochs.max(1) as u32;
    let first_epoch = epoch_times.first().copied().unwrap_or_default();
    let mut later = epoch_times.get(1..).unwrap_or_default().to_vec();
    later.sort();
    Report {
        test_accuracy: accuracy::<TEST, M, D>(model, &test),
        final_loss,
        epoch_time: later.get(later.len() / 2).copied().unwrap_or(first_epoch),
        first_epoch,
        forward: forward / epochs,
        backward: backward / epochs,
        optimizer: optimizer / epochs,
    }
}

#[allow(dead_code)] // the test includes this file as a module and calls `train` only
fn main() {
    let which = std::env::args().nth(1);
    let archs: Vec<Arch> = match which.as_deref() {
        Some("mlp") => vec![Arch::Mlp],
        Some("cnn") => vec![Arch::Cnn],
        Some("bn-cnn") => vec![Arch::BnCnn],
        None | Some("all") => vec![Arch::Mlp, Arch::Cnn, Arch::BnCnn],
        Some(other) => panic!("unknown model {other:?}: use mlp, cnn, bn-cnn or all"),
    };
    let device = std::env::args().nth(2).unwrap_or_else(|| "cpu".into());
    for arch in archs {
        println!("--- {arch:?} on {device} ---");
        let config = Config {
            arch,
            epochs: 30,
            lr: 3e-3,
            seed: 7,
            verbose: true,
        };
        let report = match device.as_str() {
            "cpu" => train::<Cpu>(&config),
            #[cfg(feature = "cuda")]
            "cuda" => train::<typed_tensor::device::Cuda>(&config),
            #[cfg(feature = "cuda")]
            "cuda-graph" => {
                train_with::<typed_tensor::device::Cuda>(&config, Some(cuda_graph_recorder))
            }
            other => panic!(
                "unknown device {other:?}: use cpu, or cuda or cuda-graph with --features cuda"
            ),
        };
        println!(
            "{arch:?} final test accuracy: {:.2}%",
            100.0 * report.test_accuracy
        );
        let steps = report.forward + report.backward + report.optimizer;
        let share = |d: Duration| 100.0 * d.as_secs_f64() / steps.as_secs_f64();
        println!(
            "{arch:?} time per epoch: {:.2?} (the median after the first epoch, which took {:.2?}; training steps: \
             forward + loss {:.0}%, backward {:.0}%, optimizer {:.0}%; the rest is evaluation and printing)",
            report.epoch_time,
            report.first_epoch,
            share(report.forward),
            share(report.backward),
            share(report.optimizer)
        );
    }
}
