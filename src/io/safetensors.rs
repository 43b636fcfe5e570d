//! The safetensors format through the `safetensors` crate.

use crate::autograd::Var;
use crate::dtype::{DType, FloatDType, WithDType};
use crate::nn::{Buffer, Cell, ParamVisitor, Parameters};
use crate::ops::Device;
use crate::shape::Shape;
use crate::tensor::Tensor;
use ::safetensors::tensor::{Dtype, SafeTensors, TensorView};
use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use std::collections::BTreeSet;
use std::path::Path;

/// Why parameters could not be saved or loaded. The message starts with the op, `save` or `load`.
#[derive(Debug)]
#[non_exhaustive]
pub enum SafetensorsError {
    /// Reading or writing the file failed.
    Io {
        /// `"save"` or `"load"`.
        op: &'static str,
        /// The system's error.
        error: std::io::Error,
    },
    /// The bytes are not a valid safetensors file (`load`), or could not be serialised (`save`).
    Format {
        /// `"save"` or `"load"`.
        op: &'static str,
        /// The format crate's message.
        message: String,
    },
    /// Two parameters of the model have the same name, so the file would hold one tensor for both.
    Duplicate {
        /// `"save"` or `"load"`.
        op: &'static str,
        /// The name.
        name: String,
    },
    /// A parameter's tensor could not be read from or made on its device.
    Tensor {
        /// `"save"` or `"load"`.
        op: &'static str,
        /// The parameter's name.
        name: String,
        /// The device's error (boxed: it is large, and this enum is returned by value).
        error: Box<crate::Error>,
    },
    /// The model declares a parameter the file does not have.
    Missing {
        /// The parameter's name.
        name: String,
    },
    /// The file has tensors the model does not declare.
    Unexpected {
        /// Their names.
        names: Vec<String>,
    },
    /// A stored tensor's dtype differs from the declared parameter's.
    DType {
        /// The parameter's name.
        name: String,
        /// The file's dtype, as the format names it.
        stored: String,
        /// The parameter's dtype.
        declared: DType,
    },
    /// A stored tensor's shape differs from the declared parameter's.
    Shape {
        /// The parameter's name.
        name: String,
        /// The file's shape.
        stored: Vec<usize>,
        /// The parameter's shape.
        declared: Vec<usize>,
    },
}

impl fmt::Display for SafetensorsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SafetensorsError::Io { op, error } => write!(f, "{op}: {error}"),
            SafetensorsError::Format {
                op: "save",
                message,
            } => {
                write!(f, "save: could not serialise: {message}")
            }
            SafetensorsError::Format { op, message } => {
                write!(f, "{op}: not a safetensors file: {message}")
            }
            SafetensorsError::Duplicate { op, name } => {
                write!(f, "{op}: the model has two parameters named `{name}`")
            }
            SafetensorsError::Tensor { op, name, error } => write!(f, "{op}: `{name}`: {error}"),
            SafetensorsError::Missing { name } => {
                write!(f, "load: the file has no tensor `{name}`")
            }
            SafetensorsError::Unexpected { names } => {
                write!(
                    f,
                    "load: the file has tensors the model does not declare: {names:?}"
                )
            }
            SafetensorsError::DType {
                name,
                stored,
                declared,
            } => write!(
                f,
                "load: `{name}` is stored as {stored}, the model declares {declared:?}"
            ),
            SafetensorsError::Shape {
                name,
                stored,
                declared,
            } => write!(
                f,
                "load: `{name}` is stored with shape {stored:?}, the model declares {declared:?}"
            ),
        }
    }
}

impl std::error::Error for SafetensorsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SafetensorsError::Io { error, .. } => Some(error),
            SafetensorsError::Tensor { error, .. } => Some(&**error),
            _ => None,
        }
    }
}

pub(super) fn file_dtype(d: DType) -> Dtype {
    match d {
        DType::U8 => Dtype::U8,
        DType::I8 => Dtype::I8,
        DType::U32 => Dtype::U32,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
    }
}

// The format is little-endian; so is every target this crate's kernels are written for.
const _: () = assert!(
    cfg!(target_endian = "little"),
    "safetensors IO assumes a little-endian target"
);

/// Collects `(name, dtype, shape, bytes)` of every parameter and buffer, once each (walked by
/// [`Parameters::visit_unique`]), the further names of tied ones, and the first problem.
struct Collect {
    tensors: Vec<(String, Dtype, Vec<usize>, Vec<u8>)>,
    names: BTreeSet<String>,
    /// `(name, first name)` of each tied parameter's further names.
    tied: Vec<(String, String)>,
    error: Option<SafetensorsError>,
}

impl Collect {
    fn collect<T: WithDType, S: Shape, D: Device>(
        &mut self,
        name: &str,
        value: Tensor<T, S, D>,
        stored: &[usize],
    ) -> Result<(), SafetensorsError> {
        first_use(&mut self.names, "save", name)?;
        let elements = value
            .try_to_vec()
            .map_err(|error| SafetensorsError::Tensor {
                op: "save",
                name: name.to_string(),
                error: Box::new(error),
            })?;
        self.tensors.push((
            name.to_string(),
            file_dtype(T::DTYPE),
            stored.to_vec(),
            crate::dtype::cast_slice::<T, u8>(&elements).to_vec(),
        ));
        Ok(())
    }
}

impl ParamVisitor for Collect {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, var: &Var<T, S, D>) {
        self.visit_stored_as(name, var, &var.shape().dims());
    }

    fn visit_stored_as<T: FloatDType, S: Shape, D: Device>(
        &mut self,
        name: &str,
        var: &Var<T, S, D>,
        stored: &[usize],
    ) {
        if self.error.is_none() {
            self.error = self.collect(name, var.value(), stored).err();
        }
    }

    fn visit_buffer<T: WithDType, S: Shape, D: Device>(
        &mut self,
        name: &str,
        buffer: &Buffer<T, S, D>,
    ) {
        if self.error.is_none() {
            self.error = self
                .collect(name, buffer.value(), &buffer.shape().dims())
                .err();
        }
    }

    fn visit_tied(&mut self, name: &str, first: &str) {
        if self.error.is_none() {
            self.error = first_use(&mut self.names, "save", name).err();
            self.tied.push((name.to_string(), first.to_string()));
        }
    }
}

/// `SafetensorsError::Duplicate` naming `op` when `name` was seen before (a file holds one tensor per name).
fn first_use(
    names: &mut BTreeSet<String>,
    op: &'static str,
    name: &str,
) -> Result<(), SafetensorsError> {
    if !names.insert(name.to_string()) {
        return Err(SafetensorsError::Duplicate {
            op,
            name: name.to_string(),
        });
    }
    Ok(())
}

/// The parameters and buffers of `params` as the bytes of a safetensors file. Two tensors with one name are
/// [`SafetensorsError::Duplicate`]. A tied weight (one [`Var`] held by two layers) is stored once, under the
/// first name the walk meets it by, and each further name goes into the file's metadata as `name: first`: the
/// form `safetensors.torch.save_model` writes and `load_model` reads, and what [`from_bytes`] accepts.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::Linear;
/// let model = (Linear::<f32, 3, 2, Cpu>::new(1), Linear::<f32, 2, 1, Cpu>::new(2));
/// let bytes = typed_tensor::io::to_bytes(&model).unwrap();
/// let fresh = (Linear::<f32, 3, 2, Cpu>::new(7), Linear::<f32, 2, 1, Cpu>::new(8));
/// typed_tensor::io::from_bytes(&fresh, &bytes).unwrap();
/// assert_eq!(fresh.0.weight.value().to_vec(), model.0.weight.value().to_vec());
///
/// // A model declaring other shapes is refused, naming the tensor.
/// let other = (Linear::<f32, 3, 4, Cpu>::new(1), Linear::<f32, 4, 1, Cpu>::new(2));
/// let err = typed_tensor::io::from_bytes(&other, &bytes).unwrap_err();
/// assert_eq!(err.to_string(), "load: `0.weight` is stored with shape [2, 3], the model declares [4, 3]");
/// ```
pub fn to_bytes(params: &impl Parameters) -> Result<Vec<u8>, SafetensorsError> {
    let mut all = Collect {
        tensors: Vec::new(),
        names: BTreeSet::new(),
        tied: Vec::new(),
        error: None,
    };
    params.visit_unique(&mut all);
    if let Some(e) = all.error {
        return Err(e);
    }
    let format = |e: ::safetensors::SafeTensorError| SafetensorsError::Format {
        op: "save",
        message: e.to_string(),
    };
    let views = all
        .tensors
        .iter()
        .map(|(name, dtype, shape, bytes)| {
            TensorView::new(*dtype, shape.clone(), bytes)
                .map(|v| (name.clone(), v))
                .map_err(format)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let metadata = (!all.tied.is_empty()).then(|| all.tied.into_iter().collect());
    ::safetensors::serialize(views, &metadata).map_err(format)
}

/// Writes the parameters and buffers of `params` to a safetensors file at `path`.
pub fn save(params: &impl Parameters, path: impl AsRef<Path>) -> Result<(), SafetensorsError> {
    std::fs::write(path, to_bytes(params)?)
        .map_err(|error| SafetensorsError::Io { op: "save", error })
}

/// A checked tensor waiting to be assigned to its parameter.
type Commit<'a> = Box<dyn FnOnce() + 'a>;

/// Checks every parameter of a model against a file and makes its new value, assigning nothing: the
/// assignments wait in `commits` until every parameter has passed. A tied parameter (met under several names) is
/// loaded from each of its names the file has, in walk order, as PyTorch's `load_state_dict` copies each key, and
/// is missing only when the file has none of them.
struct Check<'a> {
    file: &'a SafeTensors<'a>,
    seen: BTreeSet<String>,
    /// Each parameter and buffer met, in walk order, with its first name and whether the file had one of its names.
    cells: Vec<(Cell, String, bool)>,
    commits: Vec<Commit<'a>>,
    error: Option<SafetensorsError>,
}

impl<'a> Check<'a> {
    /// Checks `name` of `cell` against a tensor of `shape` stored with the dims `stored` and queues `assign` of its value; a name the file lacks
    /// is left for [`Self::missing`] to judge, once every name of every cell is known.
    fn check<T: WithDType, S: Shape, D: Device>(
        &mut self,
        cell: Cell,
        name: &str,
        shape: S,
        stored: &[usize],
        assign: impl FnOnce(Tensor<T, S, D>) + 'a,
    ) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = first_use(&mut self.seen, "load", name) {
            self.error = Some(e);
            return;
        }
        let in_file = self.file.tensor(name).is_ok();
        match self.cells.iter_mut().find(|(c, ..)| *c == cell) {
            Some((.., found)) => *found |= in_file,
            None => self.cells.push((cell, name.to_string(), in_file)),
        }
        if !in_file {
            return;
        }
        match super::tensor_file::read(self.file, name, shape, stored) {
            Ok(value) => self.commits.push(Box::new(move || assign(value))),
            Err(e) => self.error = Some(e),
        }
    }

    /// The first parameter or buffer, in walk order, none of whose names the file has.
    fn missing(&self) -> Option<SafetensorsError> {
        let (_, name, _) = self.cells.iter().find(|(.., found)| !found)?;
        Some(SafetensorsError::Missing { name: name.clone() })
    }
}

impl<'a> ParamVisitor for Check<'a> {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, var: &Var<T, S, D>) {
        self.visit_stored_as(name, var, &var.shape().dims());
    }

    fn visit_stored_as<T: FloatDType, S: Shape, D: Device>(
        &mut self,
        name: &str,
        var: &Var<T, S, D>,
        stored: &[usize],
    ) {
        let var = var.clone();
        // The value is made with the parameter's own shape (the file's dims only group the same elements
        // differently): `set` cannot refuse it.
        self.check(
            Cell::Param(var.id()),
            name,
            var.shape(),
            stored,
            move |value| var.set(value),
        );
    }

    fn visit_buffer<T: WithDType, S: Shape, D: Device>(
        &mut self,
        name: &str,
        buffer: &Buffer<T, S, D>,
    ) {
        let buffer = buffer.clone();
        let cell = Cell::Buffer(buffer.cell_address());
        self.check(
            cell,
            name,
            buffer.shape(),
            &buffer.shape().dims(),
            move |value| buffer.set(value),
        );
    }
}

/// Sets the parameters and buffers of `params` from the bytes of a safetensors file. Every one is checked
/// (name, dtype, shape, and that the file has nothing else) and its new value made before any is assigned, so a
/// failed load leaves the model as it was.
pub fn from_bytes(params: &impl Parameters, bytes: &[u8]) -> Result<(), SafetensorsError> {
    let file = SafeTensors::deserialize(bytes).map_err(|e| SafetensorsError::Format {
        op: "load",
        message: e.to_string(),
    })?;
    let mut check = Check {
        file: &file,
        seen: BTreeSet::new(),
        cells: Vec::new(),
        commits: Vec::new(),
        error: None,
    };
    params.visit_params("", &mut check);
    if let Some(e) = check.error.take().or_else(|| check.missing()) {
        return Err(e);
    }
    let mut unexpected: Vec<String> = file
        .names()
        .into_iter()
        .filter(|n| !check.seen.contains(*n))
        .cloned()
        .collect();
    if !unexpected.is_empty() {
        unexpected.sort();
        return Err(SafetensorsError::Unexpected { names: unexpected });
    }
    check.commits.into_iter().for_each(|commit| commit());
    Ok(())
}

/// Sets the parameters of `params` from a safetensors file at `path` (see [`from_bytes`]).
pub fn load(params: &impl Parameters, path: impl AsRef<Path>) -> Result<(), SafetensorsError> {
    let bytes = std::fs::read(path).map_err(|error| SafetensorsError::Io { op: "load", error })?;
    from_bytes(params, &bytes)
}
