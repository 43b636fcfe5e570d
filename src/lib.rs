//! # typed-tensor
//!
//! Tensors whose shapes live in the type system: `Tensor<T, S, D>` has its element type `T`, its shape `S` and
//! its device `D` as type parameters, so that adding a `(2, 3)` tensor to a `(3, 2)` one, multiplying matrices
//! with different inner dims, or indexing past the rank is a compile error that names both shapes.
//!
//! ```
//! use typed_tensor::prelude::*;
//! let a = Tensor::<f32, _, Cpu>::from_array([[1., 2., 3.], [4., 5., 6.]]); // Rank2<2, 3> inferred
//! let b: Tensor<f32, Rank1<3>, Cpu> = Tensor::arange();                    // [0, 1, 2]
//! let c = (&a + &b).exp();        // suffix broadcast (3,) onto (2, 3)
//! let t = a.t();                  // Tensor<f32, Rank2<3, 2>, Cpu>, a view: no copy
//! let row = a.i(1);               // Tensor<f32, Rank1<3>, Cpu>, runtime index, bounds-checked
//! assert_eq!(row.to_array(), [4., 5., 6.]);
//! assert_eq!(t.to_array()[2], [3., 6.]);
//! println!("{c}");
//! ```
//!
//! New here? The [`guide`] goes chapter by chapter: a first model, static and runtime dims, training, saving
//! and loading, inference without a heap, CUDA.
//!
//! The architecture reads top-down: [`shape`] (dims and shape relations), [`dtype`] (element types),
//! [`tensor`] (the typed API), [`ops`] (the op vocabulary), [`device`] (kernels: CPU, CUDA, embedded), [`layout`]
//! (shape-erased strides under every view). Every shape rule is shown, with the compiler's error, in the gallery
//! [`shape_errors`].
//!
//! ## Features
//! - no features: `#![no_std]` without a heap: shapes, dtypes, layouts, the op vocabulary, and the
//!   [`Embedded`] device (every tensor a dense array of its static shape) with the tensor API on it;
//! - `alloc`: the heap-backed `Cpu` device and the whole tensor API;
//! - `std` (default): threads for large kernels (rayon), autograd, `nn`, optimizers, and `std::error::Error`
//!   for [`Error`];
//! - `safetensors` (opt-in; it brings serde and serde_json): saving and loading parameters (`io`);
//! - `cuda`: the `Cuda` device (PTX compiled by `build.rs` with nvcc).
#![cfg_attr(not(test), no_std)]
#![warn(missing_docs)]
// Every `unsafe` block and impl says why it is sound (`// SAFETY: ...`), and every `unsafe fn` states its
// contract: CI runs clippy with warnings denied.
#![warn(
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc,
    unsafe_op_in_unsafe_fn
)]
// Without a heap, errors carry their shapes inline (see `error::Boxed`); they are built on cold paths only.
#![cfg_attr(not(feature = "alloc"), allow(clippy::result_large_err))]
// Divisibility rules stay written as arithmetic (`C % G == 0`): they read like the shape rules they are, and the
// build-time ones are quoted in users' compile errors.
#![allow(clippy::manual_is_multiple_of)]

#[cfg(feature = "alloc")]
extern crate alloc;
// `::typed_tensor::..` paths resolve inside the crate too: `nn::layer` writes them, for the crate's own layers
// and for users'.
extern crate self as typed_tensor;
#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "std")]
pub mod autograd;
pub mod device;
pub mod dtype;
pub mod error;
pub mod guide;
pub mod io;
pub mod layout;
#[cfg(feature = "std")]
pub mod nn;
pub mod ops;
#[cfg(feature = "std")]
pub mod optim;
pub mod shape;
pub mod shape_errors;
pub mod tensor;

// Re-exported at the root so that compiler errors name them briefly: rustc prints `{Self}` in trait-error
// messages with full paths, and `typed_tensor::Const<3>` reads better than `typed_tensor::shape::Const<3>`.
#[cfg(feature = "alloc")]
pub use device::Cpu;
#[cfg(feature = "cuda")]
pub use device::Cuda;
pub use device::Embedded;
pub use error::{Error, Result};
pub use ops::Device;
pub use shape::{Axis, Const};
pub use tensor::Tensor;

pub mod prelude {
    //! Everything a model file needs, `use typed_tensor::prelude::*;`: the tensor, shapes, dtypes and devices,
    //! the geometries convolutions and poolings take with their refinement traits (`.asymmetric_padding()`,
    //! `.ceil_mode()`), padding modes, and, with `std`, autograd's `Var` and `Traced` and `nn::Module`. The layers are in
    //! [`nn::prelude`](crate::nn::prelude).
    //!
    //! ```
    //! use typed_tensor::prelude::*; // nothing else
    //! let x = Tensor::<f32, Rank4<1, 1, 5, 5>, Cpu>::ones();
    //! let w = Var::new(Tensor::<f32, Rank4<1, 1, 2, 2>, Cpu>::ones());
    //! // ONNX-style padding (one row and column after), then 2x2 pooling that keeps the partial window.
    //! let y: Traced<f32, Rank4<1, 1, 5, 5>, Cpu> =
    //!     Traced::constant(x).conv2d(&w, Conv::<1, 0, 1, 1>.asymmetric_padding::<0, 1, 0, 1>());
    //! let p: Traced<f32, Rank4<1, 1, 3, 3>, Cpu> = y.max_pool2d(Pool2d::<2, 2, 0>.ceil_mode());
    //! let grads = p.sum_all().backward();
    //! assert_eq!(grads.get(&w).dims().to_vec(), [1, 1, 2, 2]);
    //! ```
    #[cfg(feature = "std")]
    pub use crate::autograd::{AutogradDevice, Traced, Var};
    #[cfg(feature = "alloc")]
    pub use crate::device::Cpu;
    #[cfg(feature = "cuda")]
    pub use crate::device::Cuda;
    pub use crate::device::Embedded;
    pub use crate::dtype::{DType, FloatDType, IndexDType, IntDType, SignedDType, WithDType};
    pub use crate::error::{Error, Result};
    #[cfg(feature = "std")]
    pub use crate::nn::Module;
    pub use crate::ops::{Device, PadMode};
    pub use crate::shape::{
        Axis, Const, ConstShape, Dim, FromEnd, Last, Rank0, Rank1, Rank2, Rank3, Rank4, Rank5,
        Rank6, Shape,
    };
    pub use crate::tensor::{
        Conv, Conv2dAxes, Conv3dAxes, Conv3dGeometry, ConvGeometry, IndexOp, Pool1d, Pool2d,
        Pool2dAxes, Pool3d, Pool3dAxes, PoolGeometry, Tensor,
    };
    pub use half::{bf16, f16};
}
