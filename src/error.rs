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
    /// A runtime index is past the end of its axis, or negative.
    IndexOutOfRange {
        /// The op that failed.
        op: &'static str,
        /// The axis indexed.
        axis: usize,
        /// The index (for a range, its end), as given: wide enough for every `usize` position and every `i64`
        /// index tensor's value, so a negative index reads as one.
        index: i128,
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
    /// A runtime-sized axis is shorter than the number of elements the op takes from it (`topk`'s `K`).
    AxisTooShort {
        /// The op that failed.
        op: &'static str,
        /// The axis.
        axis: usize,
        /// How many elements the op takes from it.
        needed: usize,
        /// Its size.
        size: usize,
    },
    /// A cache of a fixed maximum length was given more than it holds (`nn::KvCache`).
    CacheFull {
        /// The op that failed.
        op: &'static str,
        /// The positions it held.
        len: usize,
        /// The positions it was given.
        adding: usize,
        /// Its maximum length.
        max: usize,
    },
    /// A shape's element count or byte size does not fit the address space: more than `isize::MAX` elements
    /// (counting the non-zero dims only: their products are the strides of the shape's dense layout, which must
    /// fit even when another dim is 0), or more than `isize::MAX` bytes where the op allocates.
    ShapeOverflow {
        /// The op that failed.
        op: &'static str,
        /// The shape (for an op's output, the output shape it would have had).
        dims: Dims,
    },
    /// The host could not allocate a buffer (a `try_` constructor's request larger than memory, say).
    OutOfMemory {
        /// The op that failed.
        op: &'static str,
        /// The bytes asked for.
        bytes: usize,
    },
    /// A reduction that has no value over zero elements (`max`, `min`, `argmax`, `argmin`) met an empty axis.
    EmptyAxis {
        /// The op that failed.
        op: &'static str,
        /// The first reduced axis of size 0.
        axis: usize,
    },
    /// An argument that is not runtime data in the tensor sense was refused (a name that is not a Rust
    /// identifier, say).
    InvalidArgument {
        /// The op that failed.
        op: &'static str,
        /// What is wrong with it.
        reason: &'static str,
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
            Error::AxisTooShort {
                op,
                axis,
                needed,
                size,
            } => write!(
                f,
                "{op}: takes {needed} elements along axis {axis}, which has {size}"
            ),
            Error::CacheFull {
                op,
                len,
                adding,
                max,
            } => write!(
                f,
                "{op}: {adding} new positions after {len} exceed its maximum length {max}"
            ),
            Error::ShapeOverflow { op, dims } => write!(
                f,
                "{op}: shape {dims} is too large to address (more than isize::MAX elements or bytes)"
            ),
            Error::OutOfMemory { op, bytes } => {
                write!(f, "{op}: out of memory allocating {bytes} bytes")
            }
            Error::EmptyAxis { op, axis } => write!(
                f,
                "{op}: axis {axis} has size 0, and the op has no value over zero elements"
            ),
            Error::InvalidArgument { op, reason } => write!(f, "{op}: {reason}"),
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
