//! The traced ops: each computes its value with the [`Tensor`](crate::Tensor) op and records a backward
//! rule written with tensor ops, so it runs on every device the forward op runs on.

mod index;
mod join;
mod rearrange;
mod view;
