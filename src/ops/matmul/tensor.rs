//! Matrix products for every shape relation of [`MatMulShape`]: `(M, K) x (K, N)`, batched `(B, M, K) x
//! (B, K, N)` and rank 4, a matrix or vector shared by a batch on either side (`(B, M, K) x (K, N)`,
//! `(B1, B2, M, K) x (K, N)`, `(M, K) x (B, K, N)`, ...), matrix-vector, vector-matrix and the dot product. Views go to the kernel as strided `[B, M, K]` / `[B, K, N]` layouts: a transposed operand is not
//! copied. Dense products of static shapes up to 16 x 16 (matrix or vector operands, no batch) skip all of that
//! on the CPU: a loop whose sizes are compile-time constants, unrolled per shape, writes the output directly.
//!
//! ```
//! use typed_tensor::prelude::*;
//! let a = Tensor::<f32, _, Cpu>::from_array([[1., 2., 3.], [4., 5., 6.]]);
//! let b: Tensor<f32, Rank2<3, 2>, Cpu> = a.t();
//! let c: Tensor<f32, Rank2<2, 2>, Cpu> = a.matmul(&b);
//! assert_eq!(c.to_array(), [[14., 32.], [32., 77.]]);
//! let v = Tensor::<f32, _, Cpu>::from_array([1., 0., -1.]);
//! let av: Tensor<f32, Rank1<2>, Cpu> = a.matmul(&v);
//! assert_eq!(av.to_array(), [-2., -2.]);
//! assert_eq!(v.matmul(&v).to_scalar(), 2.0);
//! ```

use crate::dtype::FloatDType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::Device;
use crate::shape::{Dims, MatMulShape, Shape};
use crate::tensor::call::Out;
use crate::tensor::tiny::{run, Checked, OnError, OpCall, Panics};
use crate::tensor::{call, check_output, Sink, Tensor};
#[cfg(feature = "std")]
use crate::tensor::{device_ok, unpad_layout, Grad};

/// Which operand a layout is.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Lhs,
    Rhs,
}

/// Views an operand as a rank-3 `[B, rows, cols]` layout. Vectors become a 1-row (lhs) or 1-column (rhs)
/// matrix; two batch axes merge when their strides allow, else `None` (the caller copies the operand).
fn as_batched(l: &Layout, side: Side) -> Option<Layout> {
    let (d, s) = (l.dims(), l.strides());
    let (dims, strides): ([usize; 3], [usize; 3]) = match (d.len(), side) {
        (1, Side::Lhs) => ([1, 1, d[0]], [0, 0, s[0]]),
        (1, Side::Rhs) => ([1, d[0], 1], [0, s[0], 0]),
        (2, _) => ([1, d[0], d[1]], [0, s[0], s[1]]),
        (3, _) => ([d[0], d[1], d[2]], [s[0], s[1], s[2]]),
        (4, _) if d[1] == 1 || s[0] == s[1] * d[1] => {
            ([d[0] * d[1], d[2], d[3]], [s[1], s[2], s[3]])
        }
        (4, _) if d[0] == 1 => ([d[1], d[2], d[3]], [s[1], s[2], s[3]]),
        _ => return None,
    };
    Some(Layout::from_parts(
        Dims::from_slice(&dims),
        &strides,
        l.offset(),
    ))
}

/// Whether two operands' batch dims agree where both have them at the same rank (runtime-sized ones; static ones
/// agree by type).
fn batch_dims_agree(da: &[usize], db: &[usize]) -> bool {
    !(da.len() == db.len() && da.len() >= 3 && da[..da.len() - 2] != db[..db.len() - 2])
}

/// The kernel's `[B, M, K]` and `[B, K, N]` layouts of two operands whose batch axes merge ([`as_batched`]): a
/// single matrix against a batch is shared by every batch entry (stride 0, and `shared` says which). `None` when
/// the inner or batch dims do not chain.
fn batched_pair(a: &Layout, b: &Layout) -> Option<([Layout; 2], [bool; 2])> {
    let mut la = as_batched(a, Side::Lhs)?;
    let mut lb = as_batched(b, Side::Rhs)?;
    if la.dims()[2] != lb.dims()[1] {
        return None;
    }
    // The batch is the operand's that is not a single shared matrix (`max` would take a shared matrix's 1 over
    // an empty batch's 0).
    let batch = match la.dims()[0] {
        1 => lb.dims()[0],
        n => n,
    };
    let mut shared = [false; 2];
    for (l, shared) in [&mut la, &mut lb].into_iter().zip(&mut shared) {
        if l.dims()[0] != batch {
            if l.dims()[0] != 1 {
                return None;
            }
            *shared = true;
            let (d, s) = (l.dims(), l.strides());
            *l = Layout::from_parts(
                Dims::from_slice(&[batch, d[1], d[2]]),
                &[0, s[1], s[2]],
                l.offset(),
            );
        }
    }
    Some(([la, lb], shared))
}

/// The dims of `da x db`'s output: the batch axes of the operand that has them (both agree where both do),
/// then M (unless lhs is a vector), then N (unless rhs is one); the second value is the rank.
fn matmul_output_dims(da: &[usize], db: &[usize]) -> ([usize; 4], usize) {
    let batch = |d: &[usize]| d.len().saturating_sub(2);
    let lead = if batch(da) >= batch(db) {
        &da[..batch(da)]
    } else {
        &db[..batch(db)]
    };
    let mut out = [0; 4];
    let mut n = 0;
    let mut push = |x: usize| {
        out[n] = x;
        n += 1;
    };
    lead.iter().for_each(|&x| push(x));
    if da.len() > 1 {
        push(da[da.len() - 2]);
    }
    if db.len() > 1 {
        push(db[db.len() - 1]);
    }
    (out, n)
}

/// `[M, K, N]` of a product the unrolled static path takes (static matrix or vector operands up to 16 x 16, no
/// batch), else `None`. It is `Matmul`'s `OpCall::MAYBE_TINY`, which `run` tests as a constant `if` condition, so
/// for other shapes rustc never generates the static path's code.
const fn static_matmul_dims<S: Shape, S2: Shape>() -> Option<[usize; 3]> {
    crate::ops::matmul::host::static_dims(S::STATIC_DIMS, S::RANK, S2::STATIC_DIMS, S2::RANK)
}

/// Whether each operand of `a x b` must be made contiguous before the kernel can take it (its batch axes do not
/// merge).
#[inline(never)]
fn matmul_copies(a: &Layout, b: &Layout) -> [bool; 2] {
    [
        as_batched(a, Side::Lhs).is_none(),
        as_batched(b, Side::Rhs).is_none(),
    ]
}

/// `a x b` into `out`, for operand views whose batch axes merge ([`as_batched`]): [`Tensor::matmul`]'s
/// shape-free body.
#[inline(never)]
fn matmul_body<T: FloatDType, D: Device>(
    a: (&D::Buffer<T>, &Layout),
    b: (&D::Buffer<T>, &Layout),
    out: &mut dyn Sink<T, D>,
) -> Result<()> {
    let (dims, rank) = matmul_output_dims(a.1.dims(), b.1.dims());
    let dims = Dims::from_slice(&dims[..rank]);
    // (M, K) x (K, N) can hold far more elements than either operand (broadcast views cost nothing).
    check_output::<T>("matmul", &dims)?;
    let mut kernel = call::matmul_views::<T, D>(a, b);
    out.fill("matmul", &dims, &mut kernel)
}

/// `a x b` into `out` for operand views of any shapes that chain and whose batch axes merge ([`as_batched`]):
/// prepares the `[B, M, K]` and `[B, K, N]` layouts and calls the device's kernel (`call::matmul_views` builds
/// the call). Built here, with no shape parameter, so that none of this is compiled once per shape.
pub(crate) fn matmul_views<T: FloatDType, D: Device>(
    a: (&D::Buffer<T>, &Layout),
    b: (&D::Buffer<T>, &Layout),
    out: &mut Out<D, T>,
) -> Result<()> {
    let pair = batch_dims_agree(a.1.dims(), b.1.dims())
        .then(|| batched_pair(a.1, b.1))
        .flatten();
    let Some(([la, lb], _)) = pair else {
        return Err(Error::shape_mismatch("matmul", *a.1.dims(), *b.1.dims()));
    };
    D::matmul((a.0, &la), (b.0, &lb), out)
}

impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// The matrix product; the output shape comes from [`MatMulShape`]. Panics if runtime-sized (`usize`)
    /// inner or batch dims disagree; see [`Self::try_matmul`].
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a = Tensor::<f32, _, Cpu>::from_array([[1., 2.], [3., 4.]]);
    /// let b = Tensor::<f32, _, Cpu>::from_array([[1.], [1.]]);
    /// let c: Tensor<f32, Rank2<2, 1>, Cpu> = a.matmul(&b);
    /// assert_eq!(c.to_array(), [[3.], [7.]]);
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::matmul_rules`]):
    ///
    /// ```compile_fail,E0277
    /// use typed_tensor::prelude::*;
    /// let a = Tensor::<f32, Rank2<2, 3>, Cpu>::zeros();
    /// let b = Tensor::<f32, Rank2<2, 1>, Cpu>::zeros();
    /// let c = a.matmul(&b); // inner dims 3 and 2
    /// ```
    #[inline]
    #[track_caller]
    pub fn matmul<S2: Shape>(
        &self,
        rhs: &Tensor<T, S2, D>,
    ) -> Tensor<T, <S as MatMulShape<S2>>::Output, D>
    where
        S: MatMulShape<S2>,
    {
        run(Matmul {
            a: self,
            b: rhs,
            on_error: Panics,
        })
    }

    /// [`Self::matmul`], returning `Error::ShapeMismatch` when runtime-sized dims disagree (and device errors).
    #[inline]
    pub fn try_matmul<S2: Shape>(
        &self,
        rhs: &Tensor<T, S2, D>,
    ) -> Result<Tensor<T, <S as MatMulShape<S2>>::Output, D>>
    where
        S: MatMulShape<S2>,
    {
        run(Matmul {
            a: self,
            b: rhs,
            on_error: Checked,
        })
    }
}

/// [`Tensor::matmul`]'s and [`Tensor::try_matmul`]'s call. Its tiny path is the unrolled product of small static
/// matrices, which admits larger operands than the elementwise ops' (up to 16 x 16, by [`static_matmul_dims`]).
struct Matmul<'a, T: FloatDType, S: Shape, S2: Shape, D: Device, E> {
    a: &'a Tensor<T, S, D>,
    b: &'a Tensor<T, S2, D>,
    /// [`Panics`] or [`Checked`].
    on_error: E,
}

impl<T: FloatDType, S: Shape + MatMulShape<S2>, S2: Shape, D: Device, E: OnError> OpCall
    for Matmul<'_, T, S, S2, D, E>
{
    type T = T;
    type S = S;
    type Output = E::Out<Tensor<T, <S as MatMulShape<S2>>::Output, D>>;
    const MAYBE_TINY: bool = static_matmul_dims::<S, S2>().is_some();

    /// No operand layouts, no kernel dispatch, and on the CPU no heap allocation for an output of up to 64
    /// bytes.
    #[inline(always)]
    fn tiny(&mut self) -> Option<Self::Output> {
        let [m, _, n] = const { static_matmul_dims::<S, S2>() }?;
        let (a, b) = (self.a.host_dense()?, self.b.host_dense()?);
        // (M, N), minus M for a vector lhs and N for a vector rhs; static, so `from_dims` cannot fail.
        let dims = match (S::RANK, S2::RANK) {
            (2, 2) => &[m, n][..],
            (2, _) => &[m][..],
            (_, 2) => &[n][..],
            _ => &[][..],
        };
        let shape = <S as MatMulShape<S2>>::Output::from_dims(dims)?;
        let mut out = Tensor::host_output(shape, m * n)?;
        crate::ops::matmul::host::matmul_static::<T, S, S2>(a, b, out.host_elements_mut()?);
        Some(self.on_error.ok(out))
    }

    #[inline(always)]
    #[track_caller]
    fn kernel(self) -> Self::Output {
        let on_error = self.on_error;
        on_error.report(self.kernel_result())
    }
}

impl<T: FloatDType, S: Shape + MatMulShape<S2>, S2: Shape, D: Device, E>
    Matmul<'_, T, S, S2, D, E>
{
    /// Every product the unrolled static path does not take, out of line; the work is [`matmul_body`]'s, which
    /// names no shape.
    #[inline(never)]
    fn kernel_result(self) -> Result<Tensor<T, <S as MatMulShape<S2>>::Output, D>> {
        let (a, b) = (self.a, self.b);
        // A rank-4 operand whose batch axes cannot merge (rare: a permuted view) is made contiguous first. Only
        // rank 4 can need it (`as_batched`), so the copies are compiled for those shapes alone.
        if const { S::RANK > 3 || S2::RANK > 3 } {
            let copy = matmul_copies(&a.layout(), &b.layout());
            if copy[0] || copy[1] {
                let a = if copy[0] { a.contiguous() } else { a.clone() };
                let b = if copy[1] { b.contiguous() } else { b.clone() };
                let on_error = self.on_error;
                return Matmul {
                    a: &a,
                    b: &b,
                    on_error,
                }
                .kernel_result();
            }
        }
        let (la, lb) = (a.layout(), b.layout());
        Tensor::try_built_by(|out| matmul_body((a.buffer(), &la), (b.buffer(), &lb), out))
    }
}

/// The gradients of `a.matmul(b)` with respect to `a` and `b` (each only if wanted), given the output's
/// gradient `grad`: `grad x b^T` and `a^T x grad`, summed over the batch for an operand the batch shared. All in
/// autograd's padded form (`ranks` are the operands' own ranks), so this is compiled once per element type and
/// device.
#[cfg(feature = "std")]
pub(crate) fn matmul_backward<T: FloatDType, D: Device>(
    a: &Grad<T, D>,
    b: &Grad<T, D>,
    ranks: [usize; 2],
    grad: &Grad<T, D>,
    want: [bool; 2],
) -> [Option<Grad<T, D>>; 2] {
    // An operand whose batch axes cannot merge (a permuted rank-4 view) is made contiguous, as in the forward.
    let operand = |t: &Grad<T, D>, rank: usize, side: Side| {
        let l = unpad_layout(&t.layout(), rank);
        match as_batched(&l, side) {
            Some(_) => (None, l),
            None => {
                let dense = t.contiguous();
                let l = unpad_layout(&dense.layout(), rank);
                (Some(dense), l)
            }
        }
    };
    let (a_copy, la0) = operand(a, ranks[0], Side::Lhs);
    let (b_copy, lb0) = operand(b, ranks[1], Side::Rhs);
    let (a, b) = (a_copy.as_ref().unwrap_or(a), b_copy.as_ref().unwrap_or(b));
    let ([la, lb], shared) = batched_pair(&la0, &lb0)
        .expect("typed-tensor internal error: matmul operands that the forward took");
    let (batch, m, n) = (la.dims()[0], la.dims()[1], lb.dims()[2]);
    let g = grad.contiguous();
    let lg = Layout::from_parts(
        Dims::from_slice(&[batch, m, n]),
        &[m * n, n, 1],
        g.contiguous_range().map_or(0, |r| r.start),
    );
    // The `[B, R, C]` product `x y` as the gradient of an operand with dims `dims`: summed over B when the batch
    // shared the operand, else the operand's dims already.
    let finish = |x: (&D::Buffer<T>, &Layout),
                  y: (&D::Buffer<T>, &Layout),
                  rc: [usize; 3],
                  shared: bool,
                  dims: &Dims| {
        let product = product::<T, D>(x, y);
        let out = Layout::contiguous(*dims);
        if !(shared && rc[0] > 1) {
            return Grad::over(&product, &out);
        }
        let l = Layout::contiguous(Dims::from_slice(&rc));
        let mut reduced = [false; crate::shape::MAX_RANK];
        reduced[0] = true;
        let src = (D::buffer(&product), &l);
        let sums = device_ok(crate::tensor::fresh::<T, crate::tensor::Flat, D>(
            "sum",
            rc[1] * rc[2],
            &mut call::reduce::<T, D, _>(crate::ops::Sum, src, &reduced),
        ));
        Grad::over(&sums, &out)
    };
    // An operand stored column by column (a weight used as `w.t()`) gets its gradient computed transposed
    // (`da^T = b g^T`, `db^T = g^T a`) and viewed back: the gradient then has the operand's memory order, so
    // after the transpose's own backward the weight's gradient is dense and an optimizer reads it in place
    // (it was copied first: 8% of a small MLP's training step).
    let da = want[0].then(|| {
        if !shared[0] && column_major(&la) {
            let product = product::<T, D>((b.buffer(), &lb), (g.buffer(), &lg.swap_axes(1, 2)));
            return transposed_view(la0.dims(), &product);
        }
        let k = la.dims()[2];
        let bt = (b.buffer(), &lb.swap_axes(1, 2));
        finish((g.buffer(), &lg), bt, [batch, m, k], shared[0], la0.dims())
    });
    let db = want[1].then(|| {
        if !shared[1] && column_major(&lb) {
            let product = product::<T, D>((g.buffer(), &lg.swap_axes(1, 2)), (a.buffer(), &la));
            return transposed_view(lb0.dims(), &product);
        }
        let k = lb.dims()[1];
        let at = (a.buffer(), &la.swap_axes(1, 2));
        finish(at, (g.buffer(), &lg), [batch, k, n], shared[1], lb0.dims())
    });
    [da, db]
}

/// The `[B, M, N]` product of `[B, M, K]` and `[B, K, N]` operand views, in a storage of no particular shape.
#[cfg(feature = "std")]
fn product<T: FloatDType, D: Device>(
    a: (&D::Buffer<T>, &Layout),
    b: (&D::Buffer<T>, &Layout),
) -> D::Storage<T, crate::tensor::Flat> {
    let n = a.1.dims()[0] * a.1.dims()[1] * b.1.dims()[2];
    device_ok(crate::tensor::fresh::<T, crate::tensor::Flat, D>(
        "matmul",
        n,
        &mut call::matmul::<T, D>(a, b),
    ))
}

/// Whether a `[B, R, C]` operand layout holds each matrix column by column (a transposed view).
#[cfg(feature = "std")]
fn column_major(l: &Layout) -> bool {
    let (d, s) = (l.dims(), l.strides());
    d[1] > 1 && d[2] > 1 && s[1] == 1
}

/// The gradient of an operand with `dims` (rank 2 or more) whose last two axes are the dense `product`'s,
/// swapped: a view of a gradient computed transposed.
#[cfg(feature = "std")]
fn transposed_view<T: FloatDType, D: Device>(
    dims: &Dims,
    product: &D::Storage<T, crate::tensor::Flat>,
) -> Grad<T, D> {
    let r = dims.len();
    let mut swapped = *dims;
    swapped.as_mut_slice().swap(r - 2, r - 1);
    let layout = Layout::contiguous(swapped).swap_axes(r - 2, r - 1);
    Grad::over(product, &layout)
}
