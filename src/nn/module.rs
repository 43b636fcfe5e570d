//! The [`Module`] trait and sequential composition by tuples.

/// A layer or model: maps an input to an output. Input and output types carry the shapes, so a model's
/// composition is checked when its type is declared, and every layer runs on plain tensors (inference) and on
/// traced values (training) alike.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Linear, Module, ReLU};
/// // 4 -> 8 -> 3; a layer whose input width does not match the previous output does not compile.
/// let model = (Linear::<f32, 4, 8, Cpu>::new(1), ReLU, Linear::<f32, 8, 3, Cpu>::new(2));
/// let x = Tensor::<f32, Rank2<5, 4>, Cpu>::randn(3);
/// let y: Tensor<f32, Rank2<5, 3>, Cpu> = model.forward(x);
/// ```
#[diagnostic::on_unimplemented(
    message = "layer `{Self}` cannot take `{X}` as its input",
    label = "this input does not fit the layer",
    note = "in a tuple model, each layer's input is the previous layer's output: check the widths and shapes"
)]
pub trait Module<X> {
    /// What the layer gives for an `X`.
    type Output;
    /// Runs the layer.
    fn forward(&self, x: X) -> Self::Output;
}

impl<X, M: Module<X> + ?Sized> Module<X> for &M {
    type Output = M::Output;
    fn forward(&self, x: X) -> M::Output {
        (**self).forward(x)
    }
}

/// The empty tuple is the identity, a sequence of no layers (an optional layer left out, such as
/// [`TransformerEncoder`](super::TransformerEncoder)'s final norm).
///
/// ```
/// use typed_tensor::prelude::*;
/// let x = Tensor::<f32, Rank1<2>, Cpu>::from_array([1., 2.]);
/// assert_eq!(().forward(x).to_array(), [1., 2.]);
/// ```
impl<X> Module<X> for () {
    type Output = X;
    fn forward(&self, x: X) -> X {
        x
    }
}

// Tuples run their layers in order: `(A, B, C)` is `C(B(A(x)))`, for 2 to 8 layers. The bounds name each
// intermediate type, `chain_output!` writing the nested projections (`<B as Module<<A as Module<X>>::Output>>::
// Output`), so a layer whose input does not fit is reported against that layer.

/// The type of `X` after the layers `$m ..` in order.
macro_rules! chain_output {
    ($x:ty;) => { $x };
    ($x:ty; $m:ident $($rest:ident)*) => { chain_output!(<$m as Module<$x>>::Output; $($rest)*) };
}

/// `Module` for the tuple of the layer types listed: each bound on a layer takes the previous layers' output.
macro_rules! tuple_module {
    ($($m:ident)+) => { tuple_module!(@bounds [] [] $($m)+); };
    (@bounds [$($done:ident)*] [$($bounds:tt)*] $m:ident $($rest:ident)*) => {
        tuple_module!(@bounds [$($done)* $m] [$($bounds)* $m: Module<chain_output!(X; $($done)*)>,] $($rest)*);
    };
    (@bounds [$($all:ident)+] [$($bounds:tt)*]) => {
        impl<X, $($all),+> Module<X> for ($($all,)+)
        where
            $($bounds)*
        {
            type Output = chain_output!(X; $($all)+);
            #[allow(non_snake_case)] // the layers are bound to their type parameters' names
            fn forward(&self, x: X) -> Self::Output {
                let ($($all,)+) = self;
                $(let x = $all.forward(x);)+
                x
            }
        }
    };
}

tuple_module!(M0 M1);
tuple_module!(M0 M1 M2);
tuple_module!(M0 M1 M2 M3);
tuple_module!(M0 M1 M2 M3 M4);
tuple_module!(M0 M1 M2 M3 M4 M5);
tuple_module!(M0 M1 M2 M3 M4 M5 M6);
tuple_module!(M0 M1 M2 M3 M4 M5 M6 M7);
