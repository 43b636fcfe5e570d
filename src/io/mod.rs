//! Reading and writing model parameters.
//!
//! [`write_static`] writes a tensor as Rust source, a `static` on the embedded device: weights compiled into a
//! program (no heap, no features needed).
//!
//! With the `safetensors` feature, [`save`] and [`load`] store every parameter of a model (anything implementing
//! [`Parameters`](crate::nn::Parameters)) in the [safetensors](https://huggingface.co/docs/safetensors) format,
//! keyed by the dotted names the model gives them (`"0.weight"`). Loading checks each stored tensor's dtype and
//! shape against the declared parameter and names the first one that differs; it assigns nothing until every
//! parameter has passed, so a failed load leaves the model as it was.
//!
//! ```
//! use typed_tensor::prelude::*;
//! use typed_tensor::nn::Linear;
//! let model = (Linear::<f32, 3, 2, Cpu>::new(1), Linear::<f32, 2, 1, Cpu>::new(2));
//! let bytes = typed_tensor::io::to_bytes(&model).unwrap();
//! let fresh = (Linear::<f32, 3, 2, Cpu>::new(7), Linear::<f32, 2, 1, Cpu>::new(8));
//! typed_tensor::io::from_bytes(&fresh, &bytes).unwrap();
//! assert_eq!(fresh.0.weight.value().to_vec(), model.0.weight.value().to_vec());
//!
//! // A model declaring other shapes is refused, naming the tensor.
//! let other = (Linear::<f32, 3, 4, Cpu>::new(1), Linear::<f32, 4, 1, Cpu>::new(2));
//! let err = typed_tensor::io::from_bytes(&other, &bytes).unwrap_err();
//! assert_eq!(err.to_string(), "load: `0.weight` is stored with shape [2, 3], the model declares [4, 3]");
//! ```

mod rust_source;
#[cfg(feature = "safetensors")]
mod safetensors;

pub use self::rust_source::write_static;
#[cfg(feature = "safetensors")]
pub use self::safetensors::{from_bytes, load, save, to_bytes, SafetensorsError};
