//! Fixed-shape inference on the `Embedded` device: train the digits MLP of `train_digits.rs` on the CPU, move its
//! weights into embedded tensors (dense arrays, no heap), and classify the held-out images with one forward
//! function that both devices run.
//!
//! `cargo run --release --example embedded_inference`
//!
//! On a microcontroller the weights are `static` items: the example also writes them as Rust source
//! (`typed_tensor::io::write_static`) for a firmware crate to `include!`; everything below the training step
//! needs no heap and no crate features.

use std::time::Instant;
use typed_tensor::prelude::*;

#[allow(dead_code)] // the training example's `main` is not called here
#[path = "train_digits.rs"]
pub mod train_digits;
use train_digits::{Config, Split, HIDDEN, PIXELS};

/// Images classified per forward pass.
pub const BATCH: usize = 8;

/// The MLP's parameters for inference, the weights transposed once so the forward pass multiplies by them as
/// they are (on the embedded device a transpose is a copy).
pub struct Weights<D: Device> {
    pub w1: Tensor<f32, Rank2<PIXELS, HIDDEN>, D>,
    pub b1: Tensor<f32, Rank1<HIDDEN>, D>,
    pub w2: Tensor<f32, Rank2<HIDDEN, 10>, D>,
    pub b2: Tensor<f32, Rank1<10>, D>,
}

impl Weights<Cpu> {
    /// The trained model's parameters.
    pub fn from_model(model: &train_digits::Mlp<Cpu>) -> Self {
        let (l1, _, l2) = model;
        Weights {
            w1: l1.weight.value().t().contiguous(),
            b1: l1.bias.value(),
            w2: l2.weight.value().t().contiguous(),
            b2: l2.bias.value(),
        }
    }

    /// The same parameters on another device.
    pub fn to_device<D: Device>(&self) -> Weights<D> {
        Weights {
            w1: self.w1.to_device().unwrap(),
            b1: self.b1.to_device().unwrap(),
            w2: self.w2.to_device().unwrap(),
            b2: self.b2.to_device().unwrap(),
        }
    }
}

/// The predicted digit of each image: `argmax(relu(x W1 + b1) W2 + b2)`. One definition for every device.
pub fn predict<D: Device>(
    w: &Weights<D>,
    x: &Tensor<f32, Rank2<BATCH, PIXELS>, D>,
) -> [u32; BATCH] {
    let hidden = (&x.matmul(&w.w1) + &w.b1).relu();
    (&hidden.matmul(&w.w2) + &w.b2)
        .argmax::<Axis<1>>()
        .to_array()
}

/// The predictions for every whole batch of `split` (the last partial batch is left out).
pub fn predict_split<D: Device>(w: &Weights<D>, split: &Split) -> Vec<u32> {
    let mut out = Vec::with_capacity(split.labels.len());
    for images in split.images.chunks_exact(BATCH) {
        let batch: [[f32; PIXELS]; BATCH] = images.try_into().expect("a whole batch");
        out.extend(predict(w, &Tensor::from_array(batch)));
    }
    out
}

fn main() {
    let config = Config {
        arch: train_digits::Arch::Mlp,
        epochs: 30,
        lr: 3e-3,
        seed: 7,
        verbose: false,
    };
    let (model, report) = train_digits::train_mlp::<Cpu>(&config);
    let (_, test) = train_digits::load_digits(config.seed);
    println!(
        "trained on the CPU: {:.2}% held-out accuracy",
        100.0 * report.test_accuracy
    );

    let on_cpu = Weights::from_model(&model);
    let embedded: Weights<Embedded> = on_cpu.to_device();

    // The same weights as Rust source: `pub static W1: Tensor<f32, Rank2<64, 64>, Embedded> = ...;` and so on.
    let mut source =
        String::from("// The digits MLP of typed-tensor's examples/embedded_inference.rs.\n");
    let w = &embedded;
    let written = typed_tensor::io::write_static(&mut source, "W1", &w.w1)
        .and_then(|()| typed_tensor::io::write_static(&mut source, "B1", &w.b1))
        .and_then(|()| typed_tensor::io::write_static(&mut source, "W2", &w.w2))
        .and_then(|()| typed_tensor::io::write_static(&mut source, "B2", &w.b2));
    written.expect("formatting into a String cannot fail");
    let path = std::env::temp_dir().join("digits_mlp_weights.rs");
    std::fs::write(&path, &source).expect("writing the weights' source");
    println!(
        "weights as Rust statics: {} ({} KB of source)",
        path.display(),
        source.len() / 1024
    );
    println!(
        "parameters on the embedded device: {} bytes (a {BATCH}-image batch: {} bytes in, {} bytes hidden)",
        size_of::<Weights<Embedded>>(),
        size_of::<Tensor<f32, Rank2<BATCH, PIXELS>, Embedded>>(),
        size_of::<Tensor<f32, Rank2<BATCH, HIDDEN>, Embedded>>(),
    );

    let timed = |name: &str, run: &dyn Fn() -> Vec<u32>| {
        let start = Instant::now();
        let predicted = run();
        let per_image = start.elapsed() / predicted.len() as u32;
        let right = predicted
            .iter()
            .zip(&test.labels)
            .filter(|(p, l)| p == l)
            .count();
        println!(
            "{name}: {right} of {} right ({:.2}%), {per_image:.2?} per image",
            predicted.len(),
            100.0 * right as f64 / predicted.len() as f64
        );
        predicted
    };
    let cpu = timed("cpu", &|| predict_split(&on_cpu, &test));
    let emb = timed("embedded", &|| predict_split(&embedded, &test));
    let agree = cpu.iter().zip(&emb).filter(|(a, b)| a == b).count();
    println!("the devices agree on {agree} of {} images", cpu.len());
}
