//! The integration tests of tensors and views, indexing, joins, masks, matmul, in-place ops, convolution, pooling,
//! autograd, the `nn` layers, the optimizers, io, the loaders' robustness and training, one binary (`suite_nn`).
//! The elementwise, reduction, lane, scan and sort families are in its twin `ops_main.rs` (`suite_ops`), which
//! says why there are two.
//!
//! Run one area with a filter: `cargo test --test suite_nn autograd::`.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod attention;
mod attention_fused;
mod autograd;
mod char_transformer;
#[cfg(feature = "safetensors")]
mod checkpoints;
mod conv;
mod custom;
mod edges;
mod functional_norms;
mod in_place;
mod indexing;
#[cfg(feature = "safetensors")] // opt-in; the README's test command turns it on
mod io;
mod join;
mod locality;
mod masks;
mod matmul;
mod multihead;
mod nn;
mod norm_layers;
mod optim;
mod pool;
mod positions;
mod recurrent;
mod rnn_fused;
mod rnn_layers;
mod robustness;
mod tensor;
mod train_digits;
mod unbind;
