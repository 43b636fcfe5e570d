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

// Tuples run their layers in order: `(A, B, C)` is `C(B(A(x)))`. The bounds spell out each intermediate type
// (written out per arity: a macro cannot build the nested projections without a proc-macro).
impl<X, M0, M1> Module<X> for (M0, M1)
where
    M0: Module<X>,
    M1: Module<<M0 as Module<X>>::Output>,
{
    type Output = <M1 as Module<<M0 as Module<X>>::Output>>::Output;
    fn forward(&self, x: X) -> Self::Output {
        let x = self.0.forward(x);
        self.1.forward(x)
    }
}

impl<X, M0, M1, M2> Module<X> for (M0, M1, M2)
where
    M0: Module<X>,
    M1: Module<<M0 as Module<X>>::Output>,
    M2: Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>,
{
    type Output = <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output;
    fn forward(&self, x: X) -> Self::Output {
        let x = self.0.forward(x);
        let x = self.1.forward(x);
        self.2.forward(x)
    }
}

impl<X, M0, M1, M2, M3> Module<X> for (M0, M1, M2, M3)
where
    M0: Module<X>,
    M1: Module<<M0 as Module<X>>::Output>,
    M2: Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>,
    M3: Module<<M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output>,
{
    type Output = <M3 as Module<
        <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
    >>::Output;
    fn forward(&self, x: X) -> Self::Output {
        let x = self.0.forward(x);
        let x = self.1.forward(x);
        let x = self.2.forward(x);
        self.3.forward(x)
    }
}

impl<X, M0, M1, M2, M3, M4> Module<X> for (M0, M1, M2, M3, M4)
where
    M0: Module<X>,
    M1: Module<<M0 as Module<X>>::Output>,
    M2: Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>,
    M3: Module<<M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output>,
    M4:
        Module<
            <M3 as Module<
                <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
            >>::Output,
        >,
{
    type Output =
        <M4 as Module<
            <M3 as Module<
                <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
            >>::Output,
        >>::Output;
    fn forward(&self, x: X) -> Self::Output {
        let x = self.0.forward(x);
        let x = self.1.forward(x);
        let x = self.2.forward(x);
        let x = self.3.forward(x);
        self.4.forward(x)
    }
}

impl<X, M0, M1, M2, M3, M4, M5> Module<X> for (M0, M1, M2, M3, M4, M5)
where
    M0: Module<X>,
    M1: Module<<M0 as Module<X>>::Output>,
    M2: Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>,
    M3: Module<<M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output>,
    M4:
        Module<
            <M3 as Module<
                <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
            >>::Output,
        >,
    M5: Module<
        <M4 as Module<
            <M3 as Module<
                <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
            >>::Output,
        >>::Output,
    >,
{
    type Output = <M5 as Module<
        <M4 as Module<
            <M3 as Module<
                <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
            >>::Output,
        >>::Output,
    >>::Output;
    fn forward(&self, x: X) -> Self::Output {
        let x = self.0.forward(x);
        let x = self.1.forward(x);
        let x = self.2.forward(x);
        let x = self.3.forward(x);
        let x = self.4.forward(x);
        self.5.forward(x)
    }
}

impl<X, M0, M1, M2, M3, M4, M5, M6> Module<X> for (M0, M1, M2, M3, M4, M5, M6)
where
    M0: Module<X>,
    M1: Module<<M0 as Module<X>>::Output>,
    M2: Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>,
    M3: Module<<M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output>,
    M4:
        Module<
            <M3 as Module<
                <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
            >>::Output,
        >,
    M5: Module<
        <M4 as Module<
            <M3 as Module<
                <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
            >>::Output,
        >>::Output,
    >,
    M6: Module<
        <M5 as Module<
            <M4 as Module<
                <M3 as Module<
                    <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
                >>::Output,
            >>::Output,
        >>::Output,
    >,
{
    type Output = <M6 as Module<
        <M5 as Module<
            <M4 as Module<
                <M3 as Module<
                    <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
                >>::Output,
            >>::Output,
        >>::Output,
    >>::Output;
    fn forward(&self, x: X) -> Self::Output {
        let x = self.0.forward(x);
        let x = self.1.forward(x);
        let x = self.2.forward(x);
        let x = self.3.forward(x);
        let x = self.4.forward(x);
        let x = self.5.forward(x);
        self.6.forward(x)
    }
}

impl<X, M0, M1, M2, M3, M4, M5, M6, M7> Module<X> for (M0, M1, M2, M3, M4, M5, M6, M7)
where
    M0: Module<X>,
    M1: Module<<M0 as Module<X>>::Output>,
    M2: Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>,
    M3: Module<<M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output>,
    M4:
        Module<
            <M3 as Module<
                <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
            >>::Output,
        >,
    M5: Module<
        <M4 as Module<
            <M3 as Module<
                <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
            >>::Output,
        >>::Output,
    >,
    M6: Module<
        <M5 as Module<
            <M4 as Module<
                <M3 as Module<
                    <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
                >>::Output,
            >>::Output,
        >>::Output,
    >,
    M7: Module<
        <M6 as Module<
            <M5 as Module<
                <M4 as Module<
                    <M3 as Module<
                        <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
                    >>::Output,
                >>::Output,
            >>::Output,
        >>::Output,
    >,
{
    type Output = <M7 as Module<
        <M6 as Module<
            <M5 as Module<
                <M4 as Module<
                    <M3 as Module<
                        <M2 as Module<<M1 as Module<<M0 as Module<X>>::Output>>::Output>>::Output,
                    >>::Output,
                >>::Output,
            >>::Output,
        >>::Output,
    >>::Output;
    fn forward(&self, x: X) -> Self::Output {
        let x = self.0.forward(x);
        let x = self.1.forward(x);
        let x = self.2.forward(x);
        let x = self.3.forward(x);
        let x = self.4.forward(x);
        let x = self.5.forward(x);
        let x = self.6.forward(x);
        self.7.forward(x)
    }
}
