//! Type-level shapes: dims, shapes as tuples of dims, and the relations between shapes that ops require.
//!
//! The design follows DESIGN.md section 3: `Const<N>` dims in flat tuples (`Rank2<2, 3>` is
//! `(Const<2>, Const<3>)`), impls generated rank by rank by `macro_rules!` (the recursive spirit of Paddle's
//! `Dim<i>` lives in how the macros build rank N from rank N-1), relations as traits with diagnostic attributes,
//! and `const` assertions for the arithmetic types cannot express. See `tests/ui/` for every rule in action.

mod bounds;
mod channels;
mod dims;
mod from_end;
mod reduce;
mod relations;
pub(crate) mod size_check;

pub use bounds::*;
pub use channels::*;
pub use dims::*;
pub use from_end::*;
pub use reduce::*;
pub use relations::*;
