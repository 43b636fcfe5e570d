//! A guide for newcomers, chapter by chapter: every example here is compiled and run by `cargo test`.
//!
//! 1. [`first_model`]: tensors, shapes in types, a model as a tuple of layers, inference.
//! 2. [`dims`]: static dims (`Const<N>`) and runtime ones (`usize`), and where each is checked.
//! 3. [`training`]: parameters, traced values, losses, gradients, optimizers, your own layers and models.
//! 4. [`saving_and_loading`]: checkpoints in the safetensors format, weights as Rust source.
//! 5. [`embedded`]: inference without a heap, on static shapes, on the `Embedded` device.
//! 6. [`cuda`]: the same code on the GPU.
//!
//! When a shape is wrong, the compiler says so: the gallery [`shape_errors`](crate::shape_errors) shows every
//! rule with its error.

/// # A first model
///
/// A tensor's type carries its element type, its shape and its device. Shapes are written `Rank2<2, 3>` (two
/// axes of sizes 2 and 3), or inferred from what you write:
///
/// ```
/// use typed_tensor::prelude::*;
/// let a = Tensor::<f32, _, Cpu>::from_array([[1., 2., 3.], [4., 5., 6.]]); // Rank2<2, 3>
/// let b: Tensor<f32, Rank1<3>, Cpu> = Tensor::arange(); // [0, 1, 2]
/// let c = &a + &b; // (3,) broadcast onto each row of (2, 3): Rank2<2, 3>
/// let t = a.t(); // Rank2<3, 2>, a view of the same buffer
/// let p = a.matmul(&t); // Rank2<2, 2>: the inner dims must agree, or it does not compile
/// assert_eq!(c.to_array(), [[1., 3., 5.], [4., 6., 8.]]);
/// assert_eq!(p.to_array(), [[14., 32.], [32., 77.]]);
/// ```
///
/// A model is a tuple of layers; the compiler checks that each takes the previous one's output. Layers are in
/// [`nn::prelude`](crate::nn::prelude). Sizes stable Rust cannot compute in a type (a convolution's output)
/// are written by you, and checked when the program builds, with the number to write when it is wrong.
///
/// ```
/// use typed_tensor::nn::prelude::*;
/// use typed_tensor::prelude::*;
/// type Net = (
///     Conv2d<f32, 1, 8, 3, 28, 28, Cpu, 1, 1>, // 1 -> 8 channels, 3x3, stride 1, padding 1: 28x28 stays
///     ReLU,
///     MaxPool2d<2, 2, 0, 14, 14>,              // 2x2 windows, stride 2: 14x14
///     Flatten<{ 8 * 14 * 14 }>,
///     Linear<f32, { 8 * 14 * 14 }, 10, Cpu>,
/// );
/// let net: Net = (Conv2d::new(0), ReLU, MaxPool2d, Flatten, Linear::new(1));
/// let images = Tensor::<f32, Rank4<4, 1, 28, 28>, Cpu>::randn(2);
/// let logits: Tensor<f32, Rank2<4, 10>, Cpu> = net.forward(images); // plain tensors: inference
/// let classes = logits.argmax::<Axis<1>>(); // Rank1<4>, u32
/// assert!(classes.to_vec().iter().all(|&c| c < 10));
/// ```
pub mod first_model {}

/// # Static and runtime dims
///
/// A dim is `Const<N>` (known when the program builds) or `usize` (known when it runs). Static dims are
/// checked by the compiler; runtime dims are checked when the op runs: the panicking methods panic naming the
/// op and the sizes, and their `try_` forms return the error instead.
///
/// ```
/// use typed_tensor::prelude::*;
/// // A batch of any size, 3 features: the batch is a runtime dim.
/// let x =
///     Tensor::<f32, (usize, Const<3>), Cpu>::from_vec_with_shape((2, Const), vec![1., 2., 3., 4., 5., 6.])?;
/// let w = Tensor::<f32, Rank2<3, 1>, Cpu>::ones();
/// let y = x.matmul(&w); // (usize, Const<1>): the inner Const<3> is checked by the compiler
/// assert_eq!(y.to_vec(), [6., 15.]);
/// // Runtime sizes that disagree are errors at run time, named:
/// let other = Tensor::<f32, (usize, Const<3>), Cpu>::zeros_with_shape((5, Const));
/// let err = x.try_binary(typed_tensor::ops::Add, &other).unwrap_err();
/// assert_eq!(err.to_string(), "add: shapes [2, 3] and [5, 3] do not match");
/// // A reshape to runtime dims is checked when it runs.
/// let flat = x.try_reshape_with_shape((6usize,))?;
/// assert_eq!(flat.dims().to_vec(), [6]);
/// # Ok::<(), typed_tensor::Error>(())
/// ```
///
/// Prefer static dims wherever the size is fixed (the model's widths, an image's size): the compiler checks
/// them, small tensors of static shape skip the kernels, and the [`embedded`] device needs them.
pub mod dims {}

/// # Training
///
/// A [`Var`](crate::autograd::Var) holds a parameter; [`Traced`](crate::autograd::Traced) values record
/// the ops applied to them, and `backward()` on a scalar gives each parameter's gradient, typed by the
/// parameter. Plain tensors record nothing, so inference pays nothing for training.
///
/// ```
/// use typed_tensor::nn::prelude::*;
/// use typed_tensor::optim::{Adam, AdamConfig, Optimizer};
/// use typed_tensor::prelude::*;
/// let model = (Linear::<f32, 4, 16, Cpu>::new(0), ReLU, Linear::<f32, 16, 3, Cpu>::new(1));
/// let mut opt = Adam::new(&model, AdamConfig { lr: 1e-2, ..Default::default() });
/// let x = Tensor::<f32, Rank2<8, 4>, Cpu>::randn(2);
/// let labels = Tensor::<u32, _, Cpu>::from_array([0, 1, 2, 0, 1, 2, 0, 1]);
/// let first = model.forward(x.clone()).cross_entropy(&labels).mean_all().to_scalar(); // evaluation
/// for _ in 0..50 {
///     let loss = model.forward(Traced::constant(x.clone())).cross_entropy(&labels).mean_all();
///     opt.step(&loss.backward()); // parameters updated in place
/// }
/// let last = model.forward(x).cross_entropy(&labels).mean_all().to_scalar();
/// assert!(last < first / 2.0);
/// ```
///
/// Your own layer implements [`Module`](crate::nn::Module) once for both kinds of value with
/// [`#[layer]`](crate::nn::layer), and a model struct gets its parameter walk (for optimizers, saving,
/// `train()`/`eval()`) from `#[derive(Parameters)]`:
///
/// ```
/// use typed_tensor::nn::{layer, prelude::*};
/// use typed_tensor::prelude::*;
///
/// #[derive(Parameters)]
/// struct Residual<const W: usize> {
///     inner: Linear<f32, W, W, Cpu>,
/// }
///
/// #[layer]
/// impl<const W: usize, const B: usize> Module<Value<f32, Rank2<B, W>, Cpu>> for Residual<W> {
///     type Output = Value<f32, Rank2<B, W>, Cpu>;
///     fn forward(&self, x: Value<f32, Rank2<B, W>, Cpu>) -> Self::Output {
///         &self.inner.forward(x.clone()).relu() + &x
///     }
/// }
///
/// let block = Residual::<8> { inner: Linear::new(0) };
/// let y = block.forward(Tensor::<f32, Rank2<2, 8>, Cpu>::zeros()); // a plain tensor
/// let loss = block.forward(Traced::constant(Tensor::<f32, Rank2<2, 8>, Cpu>::ones())).sum_all();
/// let g: Tensor<f32, Rank2<8, 8>, Cpu> = loss.backward().get(&block.inner.weight);
/// assert_eq!((y.dims().to_vec(), g.dims().to_vec()), (vec![2, 8], vec![8, 8]));
/// ```
///
/// Layers with a mode (`Dropout`, `BatchNorm`) follow `model.train()` and `model.eval()`
/// ([`Parameters`](crate::nn::Parameters)); the losses are in [`nn::loss`](crate::nn::loss).
pub mod training {}

/// # Saving and loading
///
/// With the `safetensors` feature, [`io::save`](crate::io) and `io::load` write and read a model's parameters
/// and buffers by PyTorch's dotted names (`0.weight`, `2.running_mean`), so a checkpoint from
/// `safetensors.torch.save_model` of the same architecture loads unchanged. A layer built with `zeros()` needs
/// no seed when its weights come from a file. Every mismatch (a missing tensor, another shape or dtype) is an
/// error naming it, and a failed load changes nothing.
///
/// ```
/// # #[cfg(feature = "safetensors")] {
/// use typed_tensor::io::{from_bytes, to_bytes};
/// use typed_tensor::nn::prelude::*;
/// use typed_tensor::prelude::*;
/// let trained = (Linear::<f32, 4, 2, Cpu>::new(7), ReLU);
/// let bytes = to_bytes(&trained).unwrap(); // or io::save(&model, path)
/// let fresh = (Linear::<f32, 4, 2, Cpu>::zeros(), ReLU);
/// from_bytes(&fresh, &bytes).unwrap(); // or io::load(&model, path)
/// let x = Tensor::<f32, Rank2<1, 4>, Cpu>::ones();
/// assert_eq!(fresh.forward(x.clone()).to_vec(), trained.forward(x).to_vec());
/// # }
/// ```
///
/// For a program without a file system, [`io::write_static`](crate::io::write_static) writes a tensor as
/// Rust source, a `static` on the [`embedded`] device, for the program to `include!`.
pub mod saving_and_loading {}

/// # Inference without a heap
///
/// Without crate features the library is `#![no_std]` and needs no allocator: the `Embedded` device holds
/// each tensor as a dense array of its static shape, so memory is known when the program builds, and the
/// tensor API is the same. Weights can live in flash as `static` items (`Tensor::from_array_const`, what
/// [`io::write_static`](crate::io::write_static) writes). One generic function serves every device:
///
/// ```
/// use typed_tensor::prelude::*;
/// static W: Tensor<f32, Rank2<3, 2>, Embedded> =
///     Tensor::from_array_const([[1., 0.], [0., 1.], [1., 1.]]);
/// static B: Tensor<f32, Rank1<2>, Embedded> = Tensor::from_array_const([0.5, 0.0]);
///
/// fn predict<D: Device>(
///     w: &Tensor<f32, Rank2<3, 2>, D>,
///     b: &Tensor<f32, Rank1<2>, D>,
///     x: &Tensor<f32, Rank2<1, 3>, D>,
/// ) -> u32 {
///     (&x.matmul(w) + b).relu().argmax::<Axis<1>>().to_vec()[0]
/// }
///
/// let x = Tensor::<f32, Rank2<1, 3>, Embedded>::from_array([[1., 2., 3.]]);
/// assert_eq!(predict(&W, &B, &x), 1); // x W + B = [4 + 0.5, 5 + 0]
/// ```
///
/// A runtime dim on `Embedded` fails the build (no array type holds it), and so does autograd (it is for
/// inference; train on `Cpu` and copy the parameters over with `to_device`). `examples/embedded_inference.rs`
/// runs a trained digits classifier this way.
pub mod embedded {}

/// # CUDA
///
/// With the `cuda` feature (and nvcc, see the README's "CUDA setup"), `Cuda` is a device like the others: the
/// same code runs with `D = Cuda`, tensors move with `to_device`, and training works as on the CPU (cuBLAS for
/// the matrix products, CUDA graphs to replay a training step).
///
/// ```text
/// use typed_tensor::prelude::*;
/// let x = Tensor::<f32, Rank2<1024, 1024>, Cpu>::randn(0);
/// let g = x.to_device::<Cuda>()?;           // copied to the GPU
/// let y = g.matmul(&g.t()).softmax::<Axis<1>>();
/// let back: Tensor<f32, Rank2<1024, 1024>, Cpu> = y.to_device()?;
/// ```
///
/// Tensors on two devices never mix: `&cpu + &gpu` does not compile, and the error says to move one.
pub mod cuda {}
