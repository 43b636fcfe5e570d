//! Printing: PyTorch-like `Display` (summarised past 1000 elements) and a one-line `Debug`.

use super::Tensor;
use crate::device::Device;
use crate::dtype::WithDType;
use crate::shape::Shape;
use core::fmt;

#[cfg(feature = "alloc")]
/// Above this many elements, `Display` shows only the first and last [`EDGE_ITEMS`] entries of each axis.
pub const SUMMARIZE_THRESHOLD: usize = 1000;
#[cfg(feature = "alloc")]
/// Entries kept at each end of an axis when summarising.
pub const EDGE_ITEMS: usize = 3;

impl<T: WithDType, S: Shape, D: Device> fmt::Debug for Tensor<T, S, D> {
    /// One line: `Tensor[[2, 3], f32, cpu]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tensor[{}, {}, {}]", self.dims(), T::DTYPE, D::NAME)
    }
}

#[cfg(feature = "alloc")]
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
        use alloc::string::String;
        use alloc::vec::Vec;
        let values = match self.try_to_vec() {
            Ok(v) => v,
            Err(e) => return write!(f, "tensor(<unreadable: {e}>)"),
        };
        let dims = self.dims();
        let summarize = values.len() > SUMMARIZE_THRESHOLD;
        let shown = |i: usize, n: usize| {
            !summarize || n <= 2 * EDGE_ITEMS || i < EDGE_ITEMS || i >= n - EDGE_ITEMS
        };

        // Format the visible elements with one style so the columns line up.
        let strides = crate::layout::Layout::contiguous(dims);
        let visible: Vec<usize> = (0..values.len())
            .filter(|&flat| {
                let mut rest = flat;
                (0..dims.len()).all(|ax| {
                    let i = rest / strides.strides()[ax];
                    rest %= strides.strides()[ax];
                    shown(i, dims[ax])
                })
            })
            .collect();
        let style = FloatStyle::pick::<T>(visible.iter().map(|&i| values[i]));
        let mut cells: Vec<String> = alloc::vec![String::new(); values.len()];
        let mut width = 0;
        for &i in &visible {
            cells[i] = style.format(values[i]);
            width = width.max(cells[i].chars().count());
        }

        write!(f, "tensor(")?;
        write_axis(f, &dims, 0, 0, &strides, &cells, width, &shown)?;
        write!(
            f,
            ", shape={}, dtype={}, device={})",
            dims,
            T::DTYPE,
            D::NAME
        )
    }
}

#[cfg(feature = "alloc")]
#[allow(clippy::too_many_arguments)]
fn write_axis(
    f: &mut fmt::Formatter<'_>,
    dims: &[usize],
    ax: usize,
    base: usize,
    layout: &crate::layout::Layout,
    cells: &[alloc::string::String],
    width: usize,
    shown: &dyn Fn(usize, usize) -> bool,
) -> fmt::Result {
    if ax == dims.len() {
        return write!(f, "{:>width$}", cells[base]);
    }
    let n = dims[ax];
    let indent = "tensor(".len() + ax + 1;
    write!(f, "[")?;
    let mut first = true;
    let mut skipped = false;
    for i in 0..n {
        if !shown(i, n) {
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
        write_axis(
            f,
            dims,
            ax + 1,
            base + i * layout.strides()[ax],
            layout,
            cells,
            width,
            shown,
        )?;
        first = false;
    }
    write!(f, "]")
}

/// How to print the elements of one tensor (chosen once, PyTorch-style).
#[cfg(feature = "alloc")]
enum FloatStyle {
    Int,
    /// Every value integral: `3.`
    Whole,
    Fixed,
    Sci,
}

#[cfg(feature = "alloc")]
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

    fn format<T: WithDType>(&self, v: T) -> alloc::string::String {
        use alloc::format;
        let x = v.to_f64();
        if T::DTYPE.is_int() {
            return format!("{v}");
        }
        if x.is_nan() {
            return "nan".into();
        }
        if x.is_infinite() {
            return if x > 0.0 { "inf".into() } else { "-inf".into() };
        }
        match self {
            FloatStyle::Int | FloatStyle::Whole => format!("{x:.0}."),
            FloatStyle::Fixed => format!("{x:.4}"),
            FloatStyle::Sci => {
                // PyTorch's exponent style: `1.0000e-06`, `2.5000e+03`.
                let text = format!("{x:.4e}");
                let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
                let exp: i32 = exp.parse().unwrap_or(0);
                let sign = if exp < 0 { '-' } else { '+' };
                format!("{mantissa}e{sign}{:02}", exp.abs())
            }
        }
    }
}
