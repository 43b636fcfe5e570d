//! Printing: PyTorch-like `Display` (summarised past 1000 elements) and a one-line `Debug`.
//!
//! `Display` needs no heap: it reads the elements in place where the device's memory is the host's (through a
//! vector only for device memory), measures each cell with a counting writer to line the columns up, and
//! writes the cells straight into the formatter, so an embedded tensor prints to any `core::fmt::Write`.

use super::Tensor;
use crate::dtype::WithDType;
use crate::layout::Layout;
use crate::ops::Device;
use crate::shape::{Dims, Shape};
use core::fmt::{self, Write};

/// Above this many elements, `Display` shows only the first and last [`EDGE_ITEMS`] entries of each axis.
pub const SUMMARIZE_THRESHOLD: usize = 1000;
/// Entries kept at each end of an axis when summarising.
pub const EDGE_ITEMS: usize = 3;

impl<T: WithDType, S: Shape, D: Device> fmt::Debug for Tensor<T, S, D> {
    /// One line: `Tensor[[2, 3], f32, cpu]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tensor[{}, {}, {}]", self.dims(), T::DTYPE, D::NAME)
    }
}

impl<T: WithDType, S: Shape, D: Device> fmt::Display for Tensor<T, S, D> {
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a = Tensor::<f32, _, Cpu>::from_array([[1., 2.5], [-3., 4.]]);
    /// assert_eq!(
    ///     a.to_string(),
    ///     "tensor([[ 1.0000,  2.5000],\n        [-3.0000,  4.0000]], shape=[2, 2], dtype=f32, device=cpu)"
    /// );
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let elements = match Elements::of(self) {
            Ok(e) => e,
            Err(e) => return write!(f, "tensor(<unreadable: {e}>)"),
        };
        let dims = self.dims();
        let numel = dims.numel();
        let summarize = numel > SUMMARIZE_THRESHOLD;
        let shown = |i: usize, n: usize| {
            !summarize || n <= 2 * EDGE_ITEMS || i < EDGE_ITEMS || i >= n - EDGE_ITEMS
        };
        // One style and one width for the visible elements, so the columns line up.
        let row_major = Layout::contiguous(dims);
        let visible = || {
            (0..numel).filter(move |&flat| {
                let mut rest = flat;
                (0..dims.len()).all(|ax| {
                    let i = rest / row_major.strides()[ax];
                    rest %= row_major.strides()[ax];
                    shown(i, dims[ax])
                })
            })
        };
        let style = FloatStyle::pick::<T>(visible().map(|i| elements.get(i)));
        let width = visible()
            .map(|i| style.width(elements.get(i)))
            .max()
            .unwrap_or(0);
        let cells = Cells {
            elements: &elements,
            style,
            width,
            dims: &dims,
            row_major: &row_major,
            shown: &shown,
        };
        write!(f, "tensor(")?;
        cells.write_axis(f, 0, 0)?;
        write!(
            f,
            ", shape={}, dtype={}, device={})",
            dims,
            T::DTYPE,
            D::NAME
        )
    }
}

/// A tensor's elements by row-major position: read in place from host memory, or copied from a device.
enum Elements<'a, T> {
    Host(&'a [T], Layout),
    #[cfg(feature = "alloc")]
    Copied(alloc::vec::Vec<T>),
}

impl<'a, T: WithDType> Elements<'a, T> {
    fn of<S: Shape, D: Device>(t: &'a Tensor<T, S, D>) -> crate::error::Result<Self> {
        if let Some(host) = D::host_slice(t.buffer()) {
            return Ok(Elements::Host(host, t.layout()));
        }
        #[cfg(feature = "alloc")]
        {
            t.try_to_vec().map(Elements::Copied)
        }
        #[cfg(not(feature = "alloc"))]
        Err(crate::error::Error::Unsupported {
            op: "display",
            dtype: T::DTYPE,
            device: D::NAME,
        })
    }

    /// The element at row-major position `flat`.
    fn get(&self, flat: usize) -> T {
        match self {
            Elements::Host(data, layout) => {
                let (mut rest, mut at) = (flat, layout.offset());
                for ax in (0..layout.rank()).rev() {
                    let d = layout.dims()[ax];
                    at += rest % d * layout.strides()[ax];
                    rest /= d;
                }
                data[at]
            }
            #[cfg(feature = "alloc")]
            Elements::Copied(v) => v[flat],
        }
    }
}

/// What writing the nested brackets needs.
struct Cells<'a, T, F> {
    elements: &'a Elements<'a, T>,
    style: FloatStyle,
    width: usize,
    dims: &'a Dims,
    row_major: &'a Layout,
    shown: &'a F,
}

impl<T: WithDType, F: Fn(usize, usize) -> bool> Cells<'_, T, F> {
    fn write_axis(&self, f: &mut fmt::Formatter<'_>, ax: usize, base: usize) -> fmt::Result {
        let dims = self.dims;
        if ax == dims.len() {
            let v = self.elements.get(base);
            for _ in self.style.width(v)..self.width {
                f.write_char(' ')?;
            }
            return self.style.write(f, v);
        }
        let n = dims[ax];
        let indent = "tensor(".len() + ax + 1;
        write!(f, "[")?;
        let mut first = true;
        let mut skipped = false;
        for i in 0..n {
            if !(self.shown)(i, n) {
                skipped = true;
                continue;
            }
            if !first {
                write!(f, ",")?;
                if ax + 1 == dims.len() {
                    write!(f, " ")?;
                } else {
                    let blank_lines = dims.len() - ax - 1;
                    for _ in 0..blank_lines {
                        writeln!(f)?;
                    }
                    write!(f, "{:indent$}", "")?;
                }
            }
            if skipped {
                if ax + 1 == dims.len() {
                    write!(f, "..., ")?;
                } else {
                    write!(f, "...,")?;
                    writeln!(f)?;
                    write!(f, "{:indent$}", "")?;
                }
                skipped = false;
            }
            self.write_axis(f, ax + 1, base + i * self.row_major.strides()[ax])?;
            first = false;
        }
        write!(f, "]")
    }
}

/// Counts the characters written to it.
struct Count(usize);

impl Write for Count {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0 += s.chars().count();
        Ok(())
    }
}

/// Keeps up to 32 bytes of text on the stack (one number's scientific form).
struct Short {
    buf: [u8; 32],
    len: usize,
}

impl Write for Short {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        self.buf
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// How to print the elements of one tensor (chosen once, PyTorch-style).
#[derive(Clone, Copy)]
enum FloatStyle {
    Int,
    /// Every value integral: `3.`
    Whole,
    Fixed,
    Sci,
}

impl FloatStyle {
    fn pick<T: WithDType>(values: impl Iterator<Item = T>) -> Self {
        if T::DTYPE.is_int() {
            return FloatStyle::Int;
        }
        let (mut whole, mut max, mut min_nz) = (true, 0.0f64, f64::INFINITY);
        for v in values.map(|v| v.to_f64()).filter(|v| v.is_finite()) {
            whole &= v == num_traits::Float::trunc(v);
            let a = num_traits::Float::abs(v);
            max = max.max(a);
            if a != 0.0 {
                min_nz = min_nz.min(a);
            }
        }
        if max >= 1e8 || (min_nz < 1e-4 && min_nz.is_finite()) || (max / min_nz > 1e5 && !whole) {
            FloatStyle::Sci
        } else if whole {
            FloatStyle::Whole
        } else {
            FloatStyle::Fixed
        }
    }

    /// How many characters [`Self::write`] writes for `v`.
    fn width<T: WithDType>(self, v: T) -> usize {
        let mut count = Count(0);
        // Counting never fails, and neither does formatting a number.
        let _ = self.write(&mut count, v);
        count.0
    }

    fn write<T: WithDType>(self, out: &mut impl Write, v: T) -> fmt::Result {
        let x = v.to_f64();
        if T::DTYPE.is_int() {
            return write!(out, "{v}");
        }
        if x.is_nan() {
            return out.write_str("nan");
        }
        if x.is_infinite() {
            return out.write_str(if x > 0.0 { "inf" } else { "-inf" });
        }
        match self {
            FloatStyle::Int | FloatStyle::Whole => write!(out, "{x:.0}."),
            FloatStyle::Fixed => write!(out, "{x:.4}"),
            FloatStyle::Sci => {
                // PyTorch's exponent style: `1.0000e-06`, `2.5000e+03`.
                let mut text = Short {
                    buf: [0; 32],
                    len: 0,
                };
                write!(text, "{x:.4e}")?;
                let text = core::str::from_utf8(&text.buf[..text.len]).map_err(|_| fmt::Error)?;
                let (mantissa, exp) = text.split_once('e').unwrap_or((text, "0"));
                let exp: i32 = exp.parse().unwrap_or(0);
                let sign = if exp < 0 { '-' } else { '+' };
                write!(out, "{mantissa}e{sign}{:02}", exp.abs())
            }
        }
    }
}
