//! Single tensors of a safetensors file, read by name: the reference inputs and outputs saved beside a checkpoint.

use super::safetensors::{file_dtype, SafetensorsError};
use crate::dtype::WithDType;
use crate::ops::Device;
use crate::shape::{ConstShape, Shape};
use crate::tensor::Tensor;
use ::safetensors::tensor::SafeTensors;
use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::path::Path;

/// A safetensors file's tensors, each read by name into a tensor of the type the caller declares (the dtype and
/// shape checked against the file's, as [`load`](super::load) checks a parameter). What a port from PyTorch
/// compares against: an input and the outputs PyTorch gave for it, saved with `safetensors.torch.save_file`.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::io::TensorFile;
/// use typed_tensor::nn::Linear;
/// // A file of two tensors (here the parameters of a layer, as `io::to_bytes` writes them).
/// let layer = Linear::<f32, 3, 2, Cpu>::new(0);
/// let file = TensorFile::from_bytes(typed_tensor::io::to_bytes(&layer).unwrap()).unwrap();
/// assert_eq!(file.names(), ["bias", "weight"]);
/// let w: Tensor<f32, Rank2<2, 3>, Cpu> = file.tensor("weight").unwrap();
/// assert_eq!(w.to_vec(), layer.weight.value().to_vec());
/// // Another dtype or shape than the file's is refused, naming both.
/// let err = file.tensor::<f32, Rank2<3, 2>, Cpu>("weight").unwrap_err();
/// assert_eq!(err.to_string(), "load: `weight` is stored with shape [2, 3], the model declares [3, 2]");
/// assert!(file.tensor::<f64, Rank2<2, 3>, Cpu>("weight").is_err());
/// ```
pub struct TensorFile {
    bytes: Vec<u8>,
}

impl TensorFile {
    /// The file at `path`, read whole and checked to be a safetensors file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SafetensorsError> {
        let bytes =
            std::fs::read(path).map_err(|error| SafetensorsError::Io { op: "load", error })?;
        Self::from_bytes(bytes)
    }

    /// The file's bytes, checked to be a safetensors file.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self, SafetensorsError> {
        parse(&bytes)?;
        Ok(TensorFile { bytes })
    }

    /// The names of the file's tensors, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.parsed().names().into_iter().cloned().collect();
        names.sort();
        names
    }

    /// The tensor `name` as a `Tensor<T, S, D>` of a static shape.
    pub fn tensor<T: WithDType, S: ConstShape, D: Device>(
        &self,
        name: &str,
    ) -> Result<Tensor<T, S, D>, SafetensorsError> {
        self.tensor_with_shape(name, S::SHAPE)
    }

    /// The tensor `name` as a `Tensor<T, S, D>` of the given shape (runtime dims included).
    pub fn tensor_with_shape<T: WithDType, S: Shape, D: Device>(
        &self,
        name: &str,
        shape: S,
    ) -> Result<Tensor<T, S, D>, SafetensorsError> {
        read(&self.parsed(), name, shape, &shape.dims())
    }

    fn parsed(&self) -> SafeTensors<'_> {
        parse(&self.bytes).expect("checked when the file was made")
    }
}

fn parse(bytes: &[u8]) -> Result<SafeTensors<'_>, SafetensorsError> {
    SafeTensors::deserialize(bytes).map_err(|e| SafetensorsError::Format {
        op: "load",
        message: e.to_string(),
    })
}

/// The tensor `name` of `file` as a tensor of `shape`, checked to be stored as `T` with the dims `stored` (the
/// shape's own, or the grouping a packed parameter is stored with: the same elements in the same order).
pub(super) fn read<T: WithDType, S: Shape, D: Device>(
    file: &SafeTensors<'_>,
    name: &str,
    shape: S,
    stored: &[usize],
) -> Result<Tensor<T, S, D>, SafetensorsError> {
    let named = || name.to_string();
    let view = file
        .tensor(name)
        .map_err(|_| SafetensorsError::Missing { name: named() })?;
    if view.dtype() != file_dtype(T::DTYPE) {
        return Err(SafetensorsError::DType {
            name: named(),
            stored: alloc::format!("{:?}", view.dtype()),
            declared: T::DTYPE,
        });
    }
    if view.shape() != stored {
        return Err(SafetensorsError::Shape {
            name: named(),
            stored: view.shape().to_vec(),
            declared: stored.to_vec(),
        });
    }
    debug_assert_eq!(stored.iter().product::<usize>(), shape.numel());
    // Copied into `T`-aligned memory (the file's bytes need not be aligned); the format checked that the
    // tensor's bytes are its shape's element count times its dtype's size.
    let mut data = alloc::vec![T::ZERO; shape.numel()];
    crate::dtype::cast_slice_mut::<T, u8>(&mut data).copy_from_slice(view.data());
    Tensor::from_vec_with_shape(shape, data).map_err(|error| SafetensorsError::Tensor {
        op: "load",
        name: named(),
        error: Box::new(error),
    })
}
