//! Building blocks for models, generic over dtype and device: [`Module`] (layers compose as tuples, checked
//! when the model type is declared), [`Linear`], [`Conv2d`], pooling, [`Flatten`], [`LayerNorm`],
//! [`Embedding`], [`Dropout`], activations, parameter walking ([`Parameters`]) and losses ([`loss`]).

mod activation;
mod conv;
mod dropout;
mod embedding;
mod linear;
pub mod loss;
mod module;
mod norm;
mod params;

pub use activation::{GeLU, ReLU, SiLU, Sigmoid, Tanh};
pub use conv::{AvgPool2d, Conv2d, Flatten, MaxPool2d};
pub use dropout::Dropout;
pub use embedding::Embedding;
pub use linear::Linear;
pub use module::Module;
pub use norm::LayerNorm;
pub use params::{join_name, ParamVisitor, Parameters};
