//! Walking a model's parameters: optimizers register them, `save`/`load` name them. The same walk reaches
//! each layer's buffers (saved and loaded, not trained) and training flag (set by `train`/`eval`).

use super::state::{Buffer, TrainingFlag};
use crate::autograd::Var;
use crate::dtype::{FloatDType, WithDType};
use crate::ops::Device;
use crate::shape::Shape;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Receives each parameter of a model with its dotted name (`"0.weight"`), and, when it asks for them, each
/// buffer and each layer's training flag. A visitor that only implements [`Self::visit`] (an optimizer) sees
/// the trainable parameters and nothing else.
pub trait ParamVisitor {
    /// Called once per trainable parameter.
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, var: &Var<T, S, D>);

    /// Called instead of [`Self::visit`] for a parameter that files store with other dims than its type's: the
    /// same elements in the same order, grouped as `stored`. PyTorch packs the query, key and value projections
    /// into one `in_proj_weight (3E, E)` (and an LSTM's four gates into `(4H, I)`); a layer here holds it as
    /// `(3, E, E)`, so that each projection is typed, and shows it through [`Packed`]. Only `io` reads
    /// `stored`; by default this is [`Self::visit`].
    fn visit_stored_as<T: FloatDType, S: Shape, D: Device>(
        &mut self,
        name: &str,
        var: &Var<T, S, D>,
        stored: &[usize],
    ) {
        let _ = stored;
        self.visit(name, var);
    }

    /// Called once per buffer (a tensor a layer updates itself, such as `running_mean`); ignored by default.
    fn visit_buffer<T: WithDType, S: Shape, D: Device>(
        &mut self,
        name: &str,
        buffer: &Buffer<T, S, D>,
    ) {
        let _ = (name, buffer);
    }

    /// Called once per layer that has a training mode; ignored by default.
    fn visit_training(&mut self, flag: &TrainingFlag) {
        let _ = flag;
    }

    /// Called in a [`Parameters::visit_unique`] walk for each further name of a parameter or buffer it met
    /// before under `first` (a tied weight: one [`Var`] held by two layers); ignored by default.
    fn visit_tied(&mut self, name: &str, first: &str) {
        let _ = (name, first);
    }
}

/// What a parameter or buffer is, whatever it is named: clones of a [`Var`] or a [`Buffer`] share one cell, and so
/// one identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Cell {
    /// A parameter, by its `Var`'s id.
    Param(usize),
    /// A buffer, by the address of its shared cell.
    Buffer(usize),
}

/// Forwards a walk to `inner`, each parameter and buffer only the first time it is met (under the first name);
/// later names go to [`ParamVisitor::visit_tied`].
struct Unique<'a, V> {
    first: BTreeMap<Cell, String>,
    inner: &'a mut V,
}

impl<V: ParamVisitor> Unique<'_, V> {
    /// True when `cell` is met for the first time; otherwise tells `inner` that `name` is a further name of it.
    fn first(&mut self, cell: Cell, name: &str) -> bool {
        match self.first.get(&cell) {
            Some(first) => {
                self.inner.visit_tied(name, first);
                false
            }
            None => {
                self.first.insert(cell, String::from(name));
                true
            }
        }
    }
}

impl<V: ParamVisitor> ParamVisitor for Unique<'_, V> {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, var: &Var<T, S, D>) {
        if self.first(Cell::Param(var.id()), name) {
            self.inner.visit(name, var);
        }
    }

    fn visit_stored_as<T: FloatDType, S: Shape, D: Device>(
        &mut self,
        name: &str,
        var: &Var<T, S, D>,
        stored: &[usize],
    ) {
        if self.first(Cell::Param(var.id()), name) {
            self.inner.visit_stored_as(name, var, stored);
        }
    }

    fn visit_buffer<T: WithDType, S: Shape, D: Device>(
        &mut self,
        name: &str,
        buffer: &Buffer<T, S, D>,
    ) {
        if self.first(Cell::Buffer(buffer.cell_address()), name) {
            self.inner.visit_buffer(name, buffer);
        }
    }

    fn visit_training(&mut self, flag: &TrainingFlag) {
        self.inner.visit_training(flag);
    }
}

/// Forwards a walk to the visitor it holds, showing each parameter with its first two axes merged in files
/// ([`ParamVisitor::visit_stored_as`]): a parameter held as `(G, R, ..)`, `G` packed blocks of `R` rows, is
/// PyTorch's `(G·R, ..)`. `#[parameters(packed)]` on a field of a `#[derive(Parameters)]` struct visits it
/// through this.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::autograd::Var;
/// use typed_tensor::nn::{ParamVisitor, Parameters};
///
/// #[derive(Parameters)]
/// struct QkvProjection {
///     #[parameters(packed)]
///     in_proj_weight: Var<f32, Rank3<3, 4, 4>, Cpu>, // query, key and value, typed apart
/// }
/// struct Stored(Vec<(String, Vec<usize>)>);
/// impl ParamVisitor for Stored {
///     fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, var: &Var<T, S, D>) {
///         self.0.push((name.to_string(), var.shape().dims().to_vec()));
///     }
///     fn visit_stored_as<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, _: &Var<T, S, D>, stored: &[usize]) {
///         self.0.push((name.to_string(), stored.to_vec()));
///     }
/// }
/// let layer = QkvProjection { in_proj_weight: Var::new(Tensor::zeros()) };
/// let mut seen = Stored(Vec::new());
/// layer.visit_params("attn", &mut seen);
/// assert_eq!(seen.0, [("attn.in_proj_weight".to_string(), vec![12, 4])]); // PyTorch's (3E, E)
/// ```
pub struct Packed<'a, V>(pub &'a mut V);

impl<V: ParamVisitor> ParamVisitor for Packed<'_, V> {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, var: &Var<T, S, D>) {
        let dims = var.shape().dims();
        let mut stored: Vec<usize> = dims.iter().skip(1).copied().collect();
        if let (Some(first), Some(merged)) = (dims.first(), stored.first_mut()) {
            *merged *= first;
        }
        self.0.visit_stored_as(name, var, &stored);
    }

    fn visit_stored_as<T: FloatDType, S: Shape, D: Device>(
        &mut self,
        name: &str,
        var: &Var<T, S, D>,
        stored: &[usize],
    ) {
        self.0.visit_stored_as(name, var, stored);
    }

    fn visit_buffer<T: WithDType, S: Shape, D: Device>(
        &mut self,
        name: &str,
        buffer: &Buffer<T, S, D>,
    ) {
        self.0.visit_buffer(name, buffer);
    }

    fn visit_training(&mut self, flag: &TrainingFlag) {
        self.0.visit_training(flag);
    }

    fn visit_tied(&mut self, name: &str, first: &str) {
        self.0.visit_tied(name, first);
    }
}

/// A model's mode, as [`Parameters::mode`] reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Every layer that has a mode is training.
    Training,
    /// Every layer that has a mode is evaluating.
    Evaluation,
    /// Some layers train and some evaluate: almost always a mistake (one layer switched on its own).
    Mixed,
}

/// Sets every training flag it is shown.
struct SetTraining(bool);

impl ParamVisitor for SetTraining {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, _: &str, _: &Var<T, S, D>) {}
    fn visit_training(&mut self, flag: &TrainingFlag) {
        flag.set(self.0);
    }
}

/// Collects the training flags' values.
struct ReadTraining(Vec<bool>);

impl ParamVisitor for ReadTraining {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, _: &str, _: &Var<T, S, D>) {}
    fn visit_training(&mut self, flag: &TrainingFlag) {
        self.0.push(flag.get());
    }
}

/// Anything holding parameters: a [`Var`], a layer, a tuple or array of them. A struct gets the walk from
/// `#[derive(Parameters)]`: each field under its own name (`prefix.field`; a tuple struct's as `prefix.0`, ..),
/// in declaration order; `#[parameters(skip)]` leaves a field out (configuration), `#[parameters(flatten)]`
/// visits it under the struct's own prefix. [`Buffer`]s and the layer's [`TrainingFlag`] are fields like any
/// other, and an `Option` of parameters has them when it holds some.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::autograd::Var;
/// use typed_tensor::nn::{Linear, Parameters, ParamVisitor};
///
/// #[derive(Parameters)]
/// struct Head {
///     proj: Linear<f32, 4, 2, Cpu>,
///     scale: Option<Var<f32, Rank1<2>, Cpu>>,
///     #[parameters(skip)]
///     temperature: f64,
/// }
/// #[derive(Parameters)]
/// struct Residual<M>(M); // a generic field gets its bound: M: Parameters
///
/// struct Names(Vec<String>);
/// impl ParamVisitor for Names {
///     fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, _: &Var<T, S, D>) {
///         self.0.push(name.to_string());
///     }
/// }
/// let head = Residual(Head { proj: Linear::new(0), scale: Some(Var::new(Tensor::ones())), temperature: 1.0 });
/// let mut names = Names(Vec::new());
/// head.visit_params("", &mut names);
/// assert_eq!(names.0, ["0.proj.weight", "0.proj.bias", "0.scale"]);
/// ```
///
/// By hand, the walk forwards the call to each field:
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
    /// Calls `visitor.visit` for every parameter, `visitor.visit_buffer` for every buffer, both named under
    /// `prefix` (empty at the top), and `visitor.visit_training` for every layer's training flag. A model type
    /// written by hand forwards the call to each of its fields, which is all `train`/`eval`, the optimizers and
    /// `io` need.
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V);

    /// The walk of [`Self::visit_params`] from the top, showing each parameter and buffer once, under the first
    /// name it is met by, as PyTorch's `parameters()` and `named_parameters()` do; a tied weight's further names
    /// go to [`ParamVisitor::visit_tied`]. The optimizers and `io::save` walk this way, so a weight shared by two
    /// layers is stepped once and stored once.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::autograd::Var;
    /// use typed_tensor::nn::{ParamVisitor, Parameters};
    ///
    /// #[derive(Default)]
    /// struct Names(Vec<String>, Vec<(String, String)>);
    /// impl ParamVisitor for Names {
    ///     fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, _: &Var<T, S, D>) {
    ///         self.0.push(name.to_string());
    ///     }
    ///     fn visit_tied(&mut self, name: &str, first: &str) {
    ///         self.1.push((name.to_string(), first.to_string()));
    ///     }
    /// }
    /// let embedding = Var::new(Tensor::<f32, Rank2<10, 4>, Cpu>::zeros());
    /// let model = (embedding.clone(), Var::new(Tensor::<f32, Rank1<4>, Cpu>::zeros()), embedding);
    /// let mut names = Names::default();
    /// model.visit_unique(&mut names);
    /// assert_eq!(names.0, ["0", "1"]);
    /// assert_eq!(names.1, [("2".to_string(), "0".to_string())]);
    /// ```
    fn visit_unique<V: ParamVisitor>(&self, visitor: &mut V) {
        self.visit_params(
            "",
            &mut Unique {
                first: BTreeMap::new(),
                inner: visitor,
            },
        );
    }

    /// Puts every layer of the model into training mode (`true`) or evaluation mode (`false`): dropout masks
    /// and batch statistics, or neither. Affects traced forward passes; plain tensors always run inference.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{BatchNorm, Dropout, Linear, Mode, Parameters};
    /// let model = (Linear::<f32, 4, 4, Cpu>::new(0), BatchNorm::<f32, 4, Cpu>::new(), Dropout::new(0.5, 1));
    /// assert_eq!(model.mode(), Some(Mode::Training)); // layers start in training mode, as in PyTorch
    /// model.eval();
    /// assert_eq!(model.mode(), Some(Mode::Evaluation));
    /// model.2.train(); // one layer on its own
    /// assert_eq!(model.mode(), Some(Mode::Mixed));
    /// assert_eq!(Linear::<f32, 4, 4, Cpu>::new(0).mode(), None); // no layer with a mode
    /// ```
    fn set_training(&self, training: bool) {
        self.visit_params("", &mut SetTraining(training));
    }

    /// Training mode for every layer (`set_training(true)`; PyTorch's `model.train()`).
    fn train(&self) {
        self.set_training(true);
    }

    /// Evaluation mode for every layer (`set_training(false)`; PyTorch's `model.eval()`).
    fn eval(&self) {
        self.set_training(false);
    }

    /// The model's mode, read from every layer that has one; `None` when none has.
    fn mode(&self) -> Option<Mode> {
        let mut flags = ReadTraining(Vec::new());
        self.visit_params("", &mut flags);
        let first = *flags.0.first()?;
        Some(if flags.0.iter().any(|&f| f != first) {
            Mode::Mixed
        } else if first {
            Mode::Training
        } else {
            Mode::Evaluation
        })
    }
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

impl<P: Parameters> Parameters for Option<P> {
    /// The parameters of what it holds, under the same name; none when it holds nothing (a layer built without
    /// its optional bias).
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V) {
        if let Some(p) = self {
            p.visit_params(prefix, visitor);
        }
    }
}

impl<T: WithDType, S: Shape, D: Device> Parameters for Buffer<T, S, D> {
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V) {
        visitor.visit_buffer(prefix, self);
    }
}

impl Parameters for TrainingFlag {
    /// The layer's training flag (it has no name of its own).
    fn visit_params<V: ParamVisitor>(&self, _: &str, visitor: &mut V) {
        visitor.visit_training(self);
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
