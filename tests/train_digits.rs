//! The digits models of `examples/train_digits.rs`, trained in short configurations: the MLP must reach 95%
//! accuracy on the held-out split (the example's own run: 30 epochs, 96.4%), the CNN 90% after a few epochs
//! (the example's run: 96.7%).

#[allow(dead_code)] // the example's `main` is not called here
#[path = "../examples/train_digits.rs"]
mod train_digits;

#[test]
fn mlp_reaches_95_percent_on_held_out_digits() {
    let report = train_digits::train(&train_digits::Config {
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
    let report = train_digits::train(&train_digits::Config {
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
