//! Building blocks for models, generic over dtype and device: [`Module`] (layers compose as tuples, checked
//! when the model type is declared), [`Linear`], activations, parameter walking ([`Parameters`]) and
//! losses ([`loss`]).

mod activation;
mod linear;
pub mod loss;
mod module;
mod params;

pub use activation::{GeLU, ReLU, SiLU, Sigmoid, Tanh};
pub use linear::Linear;
pub use module::Module;
pub use params::{join_name, ParamVisitor, Parameters};
