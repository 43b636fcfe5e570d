//! Reading and writing model parameters.
//!
//! [`write_static`] writes a tensor as Rust source, a `static` on the embedded device: weights compiled into a
//! program (no heap, no features needed).
//!
//! With the `safetensors` feature (opt-in: `features = ["safetensors"]`; it brings serde and serde_json), `save` and
//! `load` store every parameter of a model (anything implementing [`Parameters`](crate::nn::Parameters)) in the
//! [safetensors](https://huggingface.co/docs/safetensors) format, keyed by the dotted names the model gives them
//! (`"0.weight"`); `to_bytes` and `from_bytes` do the same in memory. Loading checks each stored tensor's dtype and
//! shape against the declared parameter and names the first one that differs; it assigns nothing until every
//! parameter has passed, so a failed load leaves the model as it was. `TensorFile` (with `safetensors`) reads single
//! tensors of such a file by name (a reference input and PyTorch's outputs for it).

mod rust_source;
#[cfg(feature = "safetensors")]
mod safetensors;
#[cfg(feature = "safetensors")]
mod tensor_file;

pub use self::rust_source::write_static;
#[cfg(feature = "safetensors")]
pub use self::safetensors::{from_bytes, load, save, to_bytes, SafetensorsError};
#[cfg(feature = "safetensors")]
pub use self::tensor_file::TensorFile;
