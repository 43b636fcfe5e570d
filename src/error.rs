//! The crate's error type: runtime failures only (bad runtime data, device trouble). Shape, rank, dtype and
//! device agreement are compile-time facts and never show up here, except for runtime-sized (`usize`) dims.

use crate::dtype::DType;
use crate::shape::Dims;
use core::fmt;

/// What went wrong, with the op and the values involved.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A buffer's length does not match the shape it should fill.
    LengthMismatch {
        /// The op that failed.
        op: &'static str,
        /// The shape to fill.
        shape: Dims,
        /// Elements the shape needs.
        expected: usize,
        /// Elements given.
        found: usize,
    },
    /// A runtime index is past the end of its axis.
    IndexOutOfRange {
        /// The op that failed.
        op: &'static str,
        /// The axis indexed.
        axis: usize,
        /// The index (for a range, its end).
        index: usize,
        /// The size of the axis.
        size: usize,
    },
    /// Runtime-sized shapes that had to agree did not.
    ShapeMismatch {
        /// The op that failed.
        op: &'static str,
        /// The first shape.
        lhs: Dims,
        /// The second shape.
        rhs: Dims,
    },
    /// The op has no kernel for this dtype on this device.
    Unsupported {
        /// The op that failed.
        op: &'static str,
        /// The element type.
        dtype: DType,
        /// The device name.
        device: &'static str,
    },
    /// The CUDA driver, a kernel launch or a copy failed (no GPU, out of memory, ...).
    Cuda {
        /// The op that failed.
        op: &'static str,
        /// The driver's or launcher's message.
        message: alloc_or_static::Message,
    },
}

/// Owned messages need a heap; without one we keep static text.
pub mod alloc_or_static {
    /// A device error message.
    #[cfg(feature = "alloc")]
    pub type Message = alloc::string::String;
    /// A device error message.
    #[cfg(not(feature = "alloc"))]
    pub type Message = &'static str;
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::LengthMismatch {
                op,
                shape,
                expected,
                found,
            } => write!(
                f,
                "{op}: shape {shape} needs {expected} elements, found {found}"
            ),
            Error::IndexOutOfRange {
                op,
                axis,
                index,
                size,
            } => write!(
                f,
                "{op}: index {index} is out of range for axis {axis} of size {size}"
            ),
            Error::ShapeMismatch { op, lhs, rhs } => {
                write!(f, "{op}: shapes {lhs} and {rhs} do not match")
            }
            Error::Unsupported { op, dtype, device } => {
                write!(
                    f,
                    "{op}: not supported for dtype {dtype} on device {device}"
                )
            }
            Error::Cuda { op, message } => write!(f, "{op}: CUDA error: {message}"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}

/// `Result` with this crate's [`Error`].
pub type Result<T> = core::result::Result<T, Error>;
