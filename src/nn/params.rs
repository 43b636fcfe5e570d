//! Walking a model's parameters: optimizers register them, `save`/`load` name them.

use crate::autograd::Var;
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::shape::Shape;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Receives each parameter of a model with its dotted name (`"0.weight"`).
pub trait ParamVisitor {
    /// Called once per parameter.
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, var: &Var<T, S, D>);
}

/// Anything holding parameters: a [`Var`], a layer, a tuple or array of them.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::autograd::Var;
/// use typed_tensor::nn::{ParamVisitor, Parameters};
///
/// struct Names(Vec<String>);
/// impl ParamVisitor for Names {
///     fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, _: &Var<T, S, D>) {
///         self.0.push(name.to_string());
///     }
/// }
/// let w = Var::new(Tensor::<f32, Rank1<2>, Cpu>::zeros());
/// let b = Var::new(Tensor::<f32, Rank1<1>, Cpu>::zeros());
/// let mut names = Names(Vec::new());
/// (w, [b]).visit_params("", &mut names);
/// assert_eq!(names.0, ["0", "1.0"]);
/// ```
pub trait Parameters {
    /// Calls `visitor.visit` for every parameter, named under `prefix` (empty at the top).
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V);
}

/// `prefix.name`, or `name` at the top.
pub fn join_name(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        String::from(name)
    } else {
        format!("{prefix}.{name}")
    }
}

impl<T: FloatDType, S: Shape, D: Device> Parameters for Var<T, S, D> {
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V) {
        visitor.visit(prefix, self);
    }
}

impl<P: Parameters + ?Sized> Parameters for &P {
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V) {
        (**self).visit_params(prefix, visitor);
    }
}

impl<P: Parameters, const N: usize> Parameters for [P; N] {
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V) {
        for (i, p) in self.iter().enumerate() {
            p.visit_params(&join_name(prefix, &format!("{i}")), visitor);
        }
    }
}

impl<P: Parameters> Parameters for Vec<P> {
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V) {
        for (i, p) in self.iter().enumerate() {
            p.visit_params(&join_name(prefix, &format!("{i}")), visitor);
        }
    }
}

impl Parameters for () {
    fn visit_params<V: ParamVisitor>(&self, _: &str, _: &mut V) {}
}

macro_rules! tuple_parameters {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: Parameters),+> Parameters for ($($name,)+) {
            fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V) {
                $(self.$idx.visit_params(&join_name(prefix, stringify!($idx)), visitor);)+
            }
        }
    };
}
tuple_parameters!(A 0);
tuple_parameters!(A 0, B 1);
tuple_parameters!(A 0, B 1, C 2);
tuple_parameters!(A 0, B 1, C 2, E 3);
tuple_parameters!(A 0, B 1, C 2, E 3, F 4);
tuple_parameters!(A 0, B 1, C 2, E 3, F 4, G 5);
tuple_parameters!(A 0, B 1, C 2, E 3, F 4, G 5, H 6);
tuple_parameters!(A 0, B 1, C 2, E 3, F 4, G 5, H 6, J 7);
