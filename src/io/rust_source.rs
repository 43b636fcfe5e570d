//! Rust source for tensors compiled into a program: a trained model's weights as `static` items on the
//! [`Embedded`](crate::Embedded) device, written by a generator (a build script, a training binary) and compiled
//! into the firmware, so that inference needs neither a file system nor a heap.

use crate::dtype::{DType, WithDType};
use crate::error::{Error, Result};
use crate::ops::Device;
use crate::shape::ConstShape;
use crate::tensor::Tensor;
use core::fmt::{self, Write};

/// Writes `pub static NAME: Tensor<T, RankN<..>, Embedded> = Tensor::from_array_const(..);` holding `tensor`'s
/// elements, for a module that has `use typed_tensor::prelude::*;` in scope. Every element reads back to the
/// same bits: floats in their shortest round-trip form (NaN and the 16-bit floats by their bits), integers as
/// they are.
///
/// `name` must be an ASCII Rust identifier that is not a keyword (`Error::InvalidArgument` otherwise, before
/// anything is written): the source is compiled into a program, so a name is never a way to inject code.
/// A writer that fails is `Error::InvalidArgument` too, and a tensor that cannot be read back is its device's
/// error.
///
/// ```
/// use typed_tensor::prelude::*;
/// let w = Tensor::<f32, Rank1<1>, Cpu>::zeros();
/// let err = typed_tensor::io::write_static(&mut String::new(), "W: u8 = 0; fn evil() {} static X", &w);
/// assert_eq!(
///     err.unwrap_err().to_string(),
///     "write_static: the name must be an ASCII identifier (letters, digits and `_`, not starting with a digit)"
/// );
/// ```
///
/// ```
/// use typed_tensor::prelude::*;
/// let w = Tensor::<f32, _, Cpu>::from_array([[0.5, -1.0], [1e-7, 3.0]]);
/// let mut src = String::new();
/// typed_tensor::io::write_static(&mut src, "W", &w).unwrap();
/// assert_eq!(
///     src,
///     "pub static W: Tensor<f32, Rank2<2, 2>, Embedded> = Tensor::from_array_const(\n    \
///      [[0.5, -1.0],\n     [1e-7, 3.0]],\n);\n"
/// );
/// ```
pub fn write_static<T: WithDType, S: ConstShape, D: Device>(
    out: &mut impl Write,
    name: &str,
    tensor: &Tensor<T, S, D>,
) -> Result<()> {
    check_identifier(name)?;
    let array = tensor.try_to_array()?;
    write_source(out, name, tensor, &array).map_err(|_| Error::InvalidArgument {
        op: "write_static",
        reason: "the output refused the text (`fmt::Write` failed)",
    })
}

/// Rust's keywords (strict, reserved and 2018+ edition ones): not usable as a plain identifier.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "try",
    "type", "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield",
];

/// `Error::InvalidArgument` unless `name` is an ASCII identifier that is not a keyword or `_`.
fn check_identifier(name: &str) -> Result<()> {
    let invalid = |reason| {
        Err(Error::InvalidArgument {
            op: "write_static",
            reason,
        })
    };
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !starts_well || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return invalid(
            "the name must be an ASCII identifier (letters, digits and `_`, not starting with a digit)",
        );
    }
    if name == "_" || KEYWORDS.contains(&name) {
        return invalid("the name is a Rust keyword (or `_`), which a static cannot be called");
    }
    Ok(())
}

/// The source text of the static (the name already checked).
fn write_source<T: WithDType, S: ConstShape, D: Device>(
    out: &mut impl Write,
    name: &str,
    tensor: &Tensor<T, S, D>,
    array: &S::Array<T>,
) -> fmt::Result {
    let elements: &[T] = if S::NUMEL == 0 {
        &[]
    } else {
        crate::dtype::cast_slice(core::slice::from_ref(array))
    };
    let dims = tensor.dims();
    write!(
        out,
        "pub static {name}: Tensor<{}, Rank{}",
        T::DTYPE,
        dims.len()
    )?;
    if !dims.is_empty() {
        out.write_char('<')?;
        for (i, d) in dims.iter().enumerate() {
            write!(out, "{}{d}", if i > 0 { ", " } else { "" })?;
        }
        out.write_char('>')?;
    }
    out.write_str(", Embedded> = Tensor::from_array_const(\n    ")?;
    write_nested(out, &dims, elements, 5)?;
    out.write_str(",\n);\n")
}

/// The nested array literal of `elements` (row-major) with `dims`; inner rows break onto lines indented by
/// `indent` plus their depth.
fn write_nested<T: WithDType>(
    out: &mut impl Write,
    dims: &[usize],
    elements: &[T],
    indent: usize,
) -> fmt::Result {
    let Some((&n, inner)) = dims.split_first() else {
        return write_element(out, elements[0]);
    };
    let per = inner.iter().product::<usize>();
    out.write_char('[')?;
    for i in 0..n {
        if i > 0 {
            out.write_char(',')?;
            if inner.is_empty() {
                out.write_char(' ')?;
            } else {
                write!(out, "\n{:indent$}", "")?;
            }
        }
        write_nested(out, inner, &elements[i * per..(i + 1) * per], indent + 1)?;
    }
    out.write_char(']')
}

/// One element as a Rust expression of its type that reads back to the same bits.
fn write_element<T: WithDType>(out: &mut impl Write, v: T) -> fmt::Result {
    let bytes = zerocopy::IntoBytes::as_bytes(&v);
    match T::DTYPE {
        DType::F16 | DType::BF16 => {
            let bits = u16::from_le_bytes([bytes[0], bytes[1]]);
            write!(out, "{}::from_bits({bits:#06x})", T::DTYPE)
        }
        DType::F32 => {
            let x = f32::from_le_bytes(bytes.try_into().map_err(|_| fmt::Error)?);
            match x {
                _ if x.is_nan() => write!(out, "f32::from_bits({:#010x})", x.to_bits()),
                f32::INFINITY => out.write_str("f32::INFINITY"),
                f32::NEG_INFINITY => out.write_str("f32::NEG_INFINITY"),
                _ => write!(out, "{x:?}"),
            }
        }
        DType::F64 => {
            let x = f64::from_le_bytes(bytes.try_into().map_err(|_| fmt::Error)?);
            match x {
                _ if x.is_nan() => write!(out, "f64::from_bits({:#018x})", x.to_bits()),
                f64::INFINITY => out.write_str("f64::INFINITY"),
                f64::NEG_INFINITY => out.write_str("f64::NEG_INFINITY"),
                _ => write!(out, "{x:?}"),
            }
        }
        DType::U8 | DType::I8 | DType::U32 | DType::I32 | DType::I64 => write!(out, "{v}"),
    }
}
