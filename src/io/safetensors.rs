//! The safetensors format through the `safetensors` crate.

use crate::autograd::Var;
use crate::device::Device;
use crate::dtype::{DType, FloatDType};
use crate::nn::{ParamVisitor, Parameters};
use crate::shape::Shape;
use crate::tensor::Tensor;
use ::safetensors::tensor::{Dtype, SafeTensors, TensorView};
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use std::collections::BTreeSet;
use std::path::Path;

/// Why parameters could not be saved or loaded.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// Reading or writing the file failed.
    Io(std::io::Error),
    /// The bytes are not a valid safetensors file (or could not be serialised).
    Format(String),
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

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "load: {e}"),
            LoadError::Format(m) => write!(f, "load: not a safetensors file: {m}"),
            LoadError::Missing { name } => write!(f, "load: the file has no tensor `{name}`"),
            LoadError::Unexpected { names } => {
                write!(
                    f,
                    "load: the file has tensors the model does not declare: {names:?}"
                )
            }
            LoadError::DType {
                name,
                stored,
                declared,
            } => write!(
                f,
                "load: `{name}` is stored as {stored}, the model declares {declared:?}"
            ),
            LoadError::Shape {
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

impl std::error::Error for LoadError {}

impl From<std::io::Error> for LoadError {
    fn from(e: std::io::Error) -> Self {
        LoadError::Io(e)
    }
}

fn file_dtype(d: DType) -> Dtype {
    match d {
        DType::U8 => Dtype::U8,
        DType::U32 => Dtype::U32,
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

/// Collects `(name, dtype, shape, bytes)` of every parameter.
struct Collect(Vec<(String, Dtype, Vec<usize>, Vec<u8>)>);

impl ParamVisitor for Collect {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, var: &Var<T, S, D>) {
        let value = var.value();
        let bytes = bytemuck::cast_slice::<T, u8>(&value.to_vec()).to_vec();
        self.0.push((
            name.to_string(),
            file_dtype(T::DTYPE),
            value.dims().to_vec(),
            bytes,
        ));
    }
}

/// The parameters of `params` as the bytes of a safetensors file.
pub fn to_bytes(params: &impl Parameters) -> Result<Vec<u8>, LoadError> {
    let mut all = Collect(Vec::new());
    params.visit_params("", &mut all);
    let views = all
        .0
        .iter()
        .map(|(name, dtype, shape, bytes)| {
            TensorView::new(*dtype, shape.clone(), bytes)
                .map(|v| (name.clone(), v))
                .map_err(|e| LoadError::Format(e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    ::safetensors::serialize(views, &None).map_err(|e| LoadError::Format(e.to_string()))
}

/// Writes the parameters of `params` to a safetensors file at `path`.
pub fn save(params: &impl Parameters, path: impl AsRef<Path>) -> Result<(), LoadError> {
    std::fs::write(path, to_bytes(params)?)?;
    Ok(())
}

/// Sets every parameter of `params` from a file, checking names, dtypes and shapes; the first problem is an
/// error and leaves the parameters checked so far set (load into a fresh model if that matters).
struct Assign<'a> {
    file: &'a SafeTensors<'a>,
    seen: BTreeSet<String>,
    error: Option<LoadError>,
}

impl ParamVisitor for Assign<'_> {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, var: &Var<T, S, D>) {
        if self.error.is_some() {
            return;
        }
        self.seen.insert(name.to_string());
        let view = match self.file.tensor(name) {
            Ok(v) => v,
            Err(_) => {
                self.error = Some(LoadError::Missing {
                    name: name.to_string(),
                });
                return;
            }
        };
        if view.dtype() != file_dtype(T::DTYPE) {
            self.error = Some(LoadError::DType {
                name: name.to_string(),
                stored: alloc::format!("{:?}", view.dtype()),
                declared: T::DTYPE,
            });
            return;
        }
        let declared = var.shape().dims().to_vec();
        if view.shape() != declared.as_slice() {
            self.error = Some(LoadError::Shape {
                name: name.to_string(),
                stored: view.shape().to_vec(),
                declared,
            });
            return;
        }
        // Copied into `T`-aligned memory (the file's bytes need not be aligned).
        let mut data = alloc::vec![T::ZERO; var.shape().numel()];
        bytemuck::cast_slice_mut::<T, u8>(&mut data).copy_from_slice(view.data());
        match Tensor::from_vec_with_shape(var.shape(), data) {
            Ok(t) => var.set(t),
            Err(e) => self.error = Some(LoadError::Format(e.to_string())),
        }
    }
}

/// Sets the parameters of `params` from the bytes of a safetensors file.
pub fn from_bytes(params: &impl Parameters, bytes: &[u8]) -> Result<(), LoadError> {
    let file = SafeTensors::deserialize(bytes).map_err(|e| LoadError::Format(e.to_string()))?;
    let mut assign = Assign {
        file: &file,
        seen: BTreeSet::new(),
        error: None,
    };
    params.visit_params("", &mut assign);
    if let Some(e) = assign.error {
        return Err(e);
    }
    let mut unexpected: Vec<String> = file
        .names()
        .into_iter()
        .filter(|n| !assign.seen.contains(*n))
        .cloned()
        .collect();
    if !unexpected.is_empty() {
        unexpected.sort();
        return Err(LoadError::Unexpected { names: unexpected });
    }
    Ok(())
}

/// Sets the parameters of `params` from a safetensors file at `path`.
pub fn load(params: &impl Parameters, path: impl AsRef<Path>) -> Result<(), LoadError> {
    from_bytes(params, &std::fs::read(path)?)
}
