//! The digits models of `examples/train_digits.rs`, trained in short configurations: the MLP must reach 95%
//! accuracy on the held-out split (the example's own run: 30 epochs, 96.4%), the CNN 90% after a few epochs
//! (the example's run: 96.7%).

use typed_tensor::prelude::*;

#[allow(dead_code)] // the example's `main` is not called here
#[path = "../examples/train_digits.rs"]
mod train_digits;

#[test]
fn mlp_reaches_95_percent_on_held_out_digits() {
    let report = train_digits::train::<Cpu>(&train_digits::Config {
        arch: train_digits::Arch::Mlp,
        epochs: 20,
        lr: 3e-3,
        seed: 7,
        verbose: false,
    });
    assert!(
        report.final_loss < 0.2,
        "training loss {}",
        report.final_loss
    );
    assert!(
        report.test_accuracy >= 0.95,
        "held-out accuracy {:.2}%",
        100.0 * report.test_accuracy
    );
    eprintln!("held-out accuracy {:.2}%", 100.0 * report.test_accuracy);
}

#[test]
fn small_cnn_learns_the_digits() {
    let report = train_digits::train::<Cpu>(&train_digits::Config {
        arch: train_digits::Arch::Cnn,
        epochs: 12,
        lr: 3e-3,
        seed: 7,
        verbose: false,
    });
    assert!(
        report.test_accuracy >= 0.90,
        "held-out accuracy {:.2}%",
        100.0 * report.test_accuracy
    );
    eprintln!(
        "CNN held-out accuracy after 12 epochs: {:.2}%",
        100.0 * report.test_accuracy
    );
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
    use super::train_digits;
    use typed_tensor::device::Cuda;

    fn config(arch: train_digits::Arch, epochs: usize) -> Option<train_digits::Config> {
        if let Err(e) = Cuda::init() {
            eprintln!("skipped training on cuda: {e}");
            return None;
        }
        Some(train_digits::Config {
            arch,
            epochs,
            lr: 3e-3,
            seed: 7,
            verbose: false,
        })
    }

    #[test]
    fn mlp_reaches_95_percent_on_cuda() {
        let Some(config) = config(train_digits::Arch::Mlp, 20) else {
            return;
        };
        let report = train_digits::train::<Cuda>(&config);
        assert!(
            report.final_loss < 0.2,
            "training loss {}",
            report.final_loss
        );
        assert!(
            report.test_accuracy >= 0.95,
            "held-out accuracy {:.2}%",
            100.0 * report.test_accuracy
        );
        let stats = Cuda::memory_stats().unwrap();
        eprintln!(
            "cuda MLP: {:.2}% held out, {:.2?} per epoch; memory in use {} B, cached {} B",
            100.0 * report.test_accuracy,
            report.epoch_time,
            stats.in_use,
            stats.cached
        );
    }

    #[test]
    fn small_cnn_learns_the_digits_on_cuda() {
        let Some(config) = config(train_digits::Arch::Cnn, 12) else {
            return;
        };
        let report = train_digits::train::<Cuda>(&config);
        assert!(
            report.test_accuracy >= 0.90,
            "held-out accuracy {:.2}%",
            100.0 * report.test_accuracy
        );
        eprintln!(
            "cuda CNN: {:.2}% held out after 12 epochs, {:.2?} per epoch",
            100.0 * report.test_accuracy,
            report.epoch_time
        );
    }
}
