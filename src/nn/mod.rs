//! Building blocks for models: parameter walking ([`Parameters`]) and losses ([`loss`]).

pub mod loss;
mod params;

pub use params::{join_name, ParamVisitor, Parameters};
