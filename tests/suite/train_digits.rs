//! The digits models of `examples/train_digits.rs`, trained in short configurations: the MLP must reach 95%
//! accuracy on the held-out split (the example's own run: 30 epochs, 96.4%), the CNN 90% after a few epochs
//! (the example's run: 96.1%), the batch-norm CNN 97% (the example's run: 98.6%).

use typed_tensor::prelude::*;

// `examples/embedded_inference.rs` includes `examples/train_digits.rs` as its module `train_digits`: one copy
// of both examples here.
#[allow(dead_code)] // the examples' `main`s are not called here
#[path = "../../examples/embedded_inference.rs"]
mod embedded_inference;
use embedded_inference::train_digits;

/// The short runs' settings: the MLP for 20 epochs, the CNN for 12, the batch-norm CNN for 5.
fn config(arch: train_digits::Arch) -> train_digits::Config {
    train_digits::Config {
        arch,
        epochs: match arch {
            train_digits::Arch::Mlp => 20,
            train_digits::Arch::Cnn => 12,
            train_digits::Arch::BnCnn => 5,
        },
        lr: 3e-3,
        seed: 7,
        verbose: false,
    }
}

/// The bars every device must clear: MLP loss < 0.2 and >= 95% held out, CNN >= 90% held out, batch-norm CNN
/// >= 97% held out (evaluated with its running statistics).
fn assert_learned(arch: train_digits::Arch, report: &train_digits::Report) {
    if arch == train_digits::Arch::Mlp {
        assert!(
            report.final_loss < 0.2,
            "training loss {}",
            report.final_loss
        );
    }
    let bar = match arch {
        train_digits::Arch::Mlp => 0.95,
        train_digits::Arch::Cnn => 0.90,
        train_digits::Arch::BnCnn => 0.97,
    };
    assert!(
        report.test_accuracy >= bar,
        "{arch:?} held-out accuracy {:.2}%",
        100.0 * report.test_accuracy
    );
    eprintln!(
        "{arch:?}: {:.2}% held out, {:.2?} per epoch",
        100.0 * report.test_accuracy,
        report.epoch_time
    );
}

#[test]
fn mlp_reaches_95_percent_on_held_out_digits() {
    let arch = train_digits::Arch::Mlp;
    let (model, report) = train_digits::train_mlp::<Cpu>(&config(arch));
    assert_learned(arch, &report);

    // `examples/embedded_inference.rs`: the trained weights on the embedded device classify the held-out images
    // as the CPU does (the devices sum the products in different orders, so a near-tie could flip; none does).
    use embedded_inference::{predict_split, Weights};
    let (_, test) = train_digits::load_digits(7);
    let on_cpu = Weights::from_model(&model);
    let cpu = predict_split(&on_cpu, &test);
    let embedded = predict_split(&on_cpu.to_device::<Embedded>(), &test);
    assert_eq!(cpu.len(), 360);
    let agree = cpu.iter().zip(&embedded).filter(|(a, b)| a == b).count();
    let right = embedded
        .iter()
        .zip(&test.labels)
        .filter(|(p, l)| p == l)
        .count();
    assert!(agree >= 357, "the devices agree on {agree} of 360 images");
    assert!(right >= 342, "embedded: {right} of 360 right");
}

#[test]
fn small_cnn_learns_the_digits() {
    let arch = train_digits::Arch::Cnn;
    assert_learned(arch, &train_digits::train::<Cpu>(&config(arch)));
}

#[test]
fn batch_norm_cnn_reaches_97_percent() {
    let arch = train_digits::Arch::BnCnn;
    assert_learned(arch, &train_digits::train::<Cpu>(&config(arch)));
}

/// The split is 1437 training and 360 held-out images, disjoint, with every digit in both.
#[test]
fn split_is_disjoint_and_covers_every_digit() {
    let (train, test) = train_digits::load_digits(7);
    assert_eq!((train.labels.len(), test.labels.len()), (1437, 360));
    for digit in 0..10 {
        assert!(train.labels.contains(&digit) && test.labels.contains(&digit));
    }
    let seen: std::collections::HashSet<Vec<u32>> = train
        .images
        .iter()
        .map(|im| im.iter().map(|p| p.to_bits()).collect())
        .collect();
    let overlap = test
        .images
        .iter()
        .filter(|im| seen.contains(&im.iter().map(|p| p.to_bits()).collect::<Vec<_>>()))
        .count();
    // The data set has a handful of identical images; a split by index must not add more.
    assert!(
        overlap <= 5,
        "{overlap} held-out images also appear in training"
    );
}

/// The same models, unchanged, trained on the GPU (skipped without one): the accuracy bars of the CPU runs.
#[cfg(feature = "cuda")]
mod cuda {
    use super::{assert_learned, config, train_digits};
    use typed_tensor::device::Cuda;

    fn train_on_gpu(arch: train_digits::Arch) {
        if let Err(e) = Cuda::init() {
            eprintln!("skipped training {arch:?} on cuda: {e}");
            return;
        }
        assert_learned(arch, &train_digits::train::<Cuda>(&config(arch)));
        let stats = Cuda::memory_stats().unwrap();
        eprintln!(
            "cuda memory after training: {} B in use, {} B cached",
            stats.in_use, stats.cached
        );
    }

    #[test]
    fn mlp_reaches_95_percent_on_cuda() {
        train_on_gpu(train_digits::Arch::Mlp);
    }

    #[test]
    fn small_cnn_learns_the_digits_on_cuda() {
        train_on_gpu(train_digits::Arch::Cnn);
    }

    #[test]
    fn batch_norm_cnn_reaches_97_percent_on_cuda() {
        train_on_gpu(train_digits::Arch::BnCnn);
    }
}
