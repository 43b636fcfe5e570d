//! Building blocks for models: losses (this module's [`loss`]).

pub mod loss;
