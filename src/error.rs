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
    /// Runtime-sized shapes that had to agree did not. Build it with [`Error::shape_mismatch`].
    ShapeMismatch {
        /// The op that failed.
        op: &'static str,
        /// The two shapes (boxed when a heap exists, to keep `Error` small).
        shapes: Boxed<[Dims; 2]>,
    },
    /// A runtime-sized axis does not have the size the op needs (`split`'s pieces must tile it, `squeeze`'s must
    /// be 1, `cat`'s two sizes must add up to the declared output size, ...).
    AxisSize {
        /// The op that failed.
        op: &'static str,
        /// The axis.
        axis: usize,
        /// The size the op needs.
        expected: usize,
        /// The size it found (for `cat`, the two sizes added).
        found: usize,
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

/// Large payloads sit behind a `Box` when a heap exists, so that `Result<T, Error>` stays small (clippy's
/// `result_large_err` would otherwise flag every user function returning it); without a heap they are inline.
#[cfg(feature = "alloc")]
pub type Boxed<T> = alloc::boxed::Box<T>;
/// Large payloads sit inline without a heap.
#[cfg(not(feature = "alloc"))]
pub type Boxed<T> = T;

impl Error {
    /// `Error::ShapeMismatch` for `op` and the two shapes.
    pub fn shape_mismatch(op: &'static str, lhs: Dims, rhs: Dims) -> Self {
        #[cfg(feature = "alloc")]
        let shapes = alloc::boxed::Box::new([lhs, rhs]);
        #[cfg(not(feature = "alloc"))]
        let shapes = [lhs, rhs];
        Error::ShapeMismatch { op, shapes }
    }
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
            Error::ShapeMismatch { op, shapes } => {
                write!(
                    f,
                    "{op}: shapes {} and {} do not match",
                    shapes[0], shapes[1]
                )
            }
            Error::AxisSize {
                op,
                axis,
                expected,
                found,
            } => write!(f, "{op}: axis {axis} has size {found}, expected {expected}"),
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
