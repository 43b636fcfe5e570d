//! `examples/char_transformer.rs` in a short run: a small transformer language model trained for 200 steps must
//! beat the bigram model counted in the same run on held-out text (the example's own run, 2000 steps, is in
//! benches/README.md), and its samples use the text's characters only.

#[allow(dead_code)] // the example's `main` is not called here
#[path = "../../examples/char_transformer.rs"]
mod example;
use example::{corpus, sample, train, Config};

#[test]
fn a_short_run_beats_the_bigram_model() {
    let config = Config {
        steps: 200,
        lr: 4e-3,
        seed: 3,
        eval_batches: 8,
        log_every: 0,
    };
    let (model, report) = train(&config);
    eprintln!("{report:?}");
    assert!(
        report.model_loss < report.bigram_loss,
        "held out: model {:.3} nats/char, bigram {:.3}",
        report.model_loss,
        report.bigram_loss
    );
    let corpus = corpus();
    let text = sample(&model, &corpus, &corpus.ids[..64], 50, 0.8, 1);
    assert_eq!(text.chars().count(), 50);
    assert!(text.chars().all(|c| corpus.chars.contains(&c)));
}
