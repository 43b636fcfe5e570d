//! `Tensor<T, S, D>`: element type, shape and device as type parameters.
//!
//! A tensor is a typed handle on a device buffer plus its view into it: a stride per axis and an offset
//! ([`Shape::View`]), which with the shape's dims make the shape-erased [`Layout`] the kernels take. Views
//! (transpose, narrow, select, broadcast, reshape of dense data) share the buffer and only rewrite the view.
//!
//! # Errors and panics
//!
//! What the types prove is never checked at run time. Runtime data has fallible forms: `from_vec`/`from_slice`
//! return `Result`, `.i()` panics on an index out of range where `.try_i()` returns the error, and runtime-sized
//! (`usize`) dims that disagree panic with the op and the sizes, where a `try_` twin (`try_matmul`, `try_cat`,
//! `try_split`, `try_reshape`, `try_max`, ...) returns the same message as an [`Error`](crate::Error). Device
//! failures (a GPU out of memory) surface as `Result` from the `try_` methods and from `to_device`; the infallible
//! ops (`+`, `exp`, ...) panic with the device's message, since `std::ops` cannot return errors. Every panicking
//! form carries `#[track_caller]`: the panic names the caller's line.
//!
//! Sizes are checked where they come into being: a shape with more than `isize::MAX` elements, or a buffer of
//! more than `isize::MAX` bytes, is `Error::ShapeOverflow` from the constructor, broadcast or op that would make
//! it (matmul, joins, `index_select`, `embedding`), never a wrapped count (docs/ops.md, "Policies").

/// `$make(shape, op, &mut kernel)` with `kernel` (a [`call::KernelCall`]) held in a local: the tensor method's
/// code then instantiates `$make` per shape only, and the kernel's closure and trait-object shim per kernel only.
/// `$make` is `Tensor::written_by` or `Tensor::try_written_by`.
macro_rules! written {
    ($make:path, $shape:expr, $op:expr, $kernel:expr $(,)?) => {{
        let mut kernel = $kernel;
        $make($shape, $op, &mut kernel)
    }};
}
pub(crate) use written;

pub(crate) mod call;
mod create;
pub use create::NestedArray;
mod display;
#[cfg(feature = "std")] // used by autograd, nn and optim only
mod erased;
#[cfg(feature = "std")]
pub(crate) use erased::{padded_axes, padded_shape, unpad_layout, Grad, Padded};
pub(crate) mod tiny;

pub use crate::ops::conv::{
    conv_out_size, conv_transpose_out_size, same_padding, AsymmetricPadding, AsymmetricPadding3d,
    Conv, Conv1dGeometry, Conv2dAxes, Conv3dAxes, Conv3dGeometry, ConvGeometry, OutputPadding,
};
pub use crate::ops::pool::{
    AvgPoolGeometry, CeilMode, Dilation, DilationAxes, DilationAxes3d, ExcludePadding, Pool1d,
    Pool2d, Pool2dAxes, Pool3d, Pool3dAxes, PoolGeometry,
};
pub use crate::ops::view::{IndexItem, IndexOp};

use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::{Layout, ViewOf};
use crate::ops::Device;
use crate::shape::{Dims, Shape, MAX_RANK};
use call::Writer;

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

/// A tensor of `T` elements with shape `S` on device `D`.
///
/// ```
/// use typed_tensor::prelude::*;
/// let a = Tensor::<f32, _, Cpu>::from_array([[1., 2., 3.], [4., 5., 6.]]); // Rank2<2, 3>
/// let b: Tensor<f32, Rank1<3>, Cpu> = Tensor::arange();                    // [0, 1, 2]
/// let c = &a + &b;                                                          // (3,) broadcast onto (2, 3)
/// assert_eq!(c.to_array(), [[1., 3., 5.], [4., 6., 8.]]);
/// let t: Tensor<f32, Rank2<3, 2>, Cpu> = a.t();                             // a view, no copy
/// assert_eq!(t.to_array(), [[1., 4.], [2., 5.], [3., 6.]]);
/// ```
pub struct Tensor<T: WithDType, S: Shape, D: Device> {
    storage: D::Storage<T, S>,
    shape: S,
    /// What the device records of this tensor's view into `storage` ([`crate::device::Kernels::View`]): on `Cpu` and `Cuda` a
    /// stride per axis (in elements) and the offset of the first element, which with the shape's dims make the
    /// shape-erased [`Layout`] the kernels take; keeping only these (not a `MAX_RANK`-sized `Layout`) keeps a small
    /// tensor small, so moving one stays a few vector copies. Nothing at all on a device whose tensors are dense
    /// arrays.
    view: D::View<S>,
}

impl<T: WithDType, S: Shape, D: Device> Clone for Tensor<T, S, D> {
    /// Cheap: the clone shares the buffer (a dense array is copied).
    fn clone(&self) -> Self {
        Tensor {
            storage: self.storage.clone(),
            shape: self.shape,
            view: self.view,
        }
    }
}

/// The shape type of intermediate storage whose shape the types do not name (a reduction's kept axes in a
/// gradient, say): only autograd uses it, which runs on devices whose storage ignores its shape.
#[cfg(feature = "std")]
pub(crate) type Flat = (usize,);

/// `Error::ShapeOverflow` naming `op` when a fresh output of `dims` (elements of `T`) would not fit the address
/// space: for ops whose output can hold more elements than any operand (products, joins, broadcast views).
#[inline]
pub(crate) fn check_output<T: WithDType>(
    op: &'static str,
    dims: &crate::shape::Dims,
) -> Result<()> {
    dims.try_bytes(op, core::mem::size_of::<T>()).map(|_| ())
}

/// Unwraps the result of a `try_` method in its panicking twin: the panic message is the error's.
#[track_caller]
pub(crate) fn or_panic<R>(r: Result<R>) -> R {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

/// Unwraps a device result in an infallible op: device failures are the only errors left there.
#[track_caller]
#[inline]
pub(crate) fn device_ok<R>(r: Result<R>) -> R {
    match r {
        Ok(v) => v,
        Err(e) => device_failed(e),
    }
}

/// [`device_ok`]'s panic, out of line and not generic: the message is formatted by one function, not one per
/// result type.
#[cold]
#[inline(never)]
#[track_caller]
fn device_failed(e: crate::error::Error) -> ! {
    panic!("typed-tensor: {e}")
}

/// A fresh storage of `n` elements written by `kernel`: destination passing, so that the kernel names no shape
/// (only this allocation does). `op` names the operation in an out-of-memory error. `n` is the kernel's output
/// size (the op's output shape, which the op computed from the same dims the kernel reads).
#[inline]
pub(crate) fn fresh<T: WithDType, S: Shape, D: Device>(
    op: &'static str,
    n: usize,
    kernel: &mut Writer<'_, D::Out<T>>,
) -> Result<D::Storage<T, S>> {
    let write = kernel.run_on();
    if D::SHAPE_FREE {
        // One body per element type (the device's own, not inlined here), whatever the shape.
        // SAFETY: `write` is a `KernelCall`'s, one family kernel call: it initialises its whole destination when
        // it returns `Ok` and never reads it, `alloc_loose`'s requirement.
        return unsafe { D::alloc_loose::<T>(op, n, write) }.map(D::tighten);
    }
    // SAFETY: as above, `alloc_with`'s requirement.
    unsafe { D::alloc_with::<T, S>(op, n, write) }
}

/// [`fresh`] in the device's shape-free storage ([`Kernels::Loose`](crate::device::Kernels::Loose)), in an
/// infallible op: a device failure panics with its message, here and not in every shape's caller.
#[inline(never)]
#[track_caller]
fn fresh_loose_or_panic<T: WithDType, D: Device>(
    op: &'static str,
    n: usize,
    kernel: &mut Writer<'_, D::Out<T>>,
) -> D::Loose<T> {
    // SAFETY: as in `fresh`.
    device_ok(unsafe { D::alloc_loose::<T>(op, n, kernel.run_on()) })
}

/// Another handle on `storage`'s buffer (a view's): compiled once per element type and device, where a clone in
/// [`Tensor::from_view`] would be compiled into every shape's views.
#[inline(never)]
fn shared<T: WithDType, D: Device>(storage: &D::Loose<T>) -> D::Loose<T> {
    storage.clone()
}

/// Where an op whose body names no shape puts its result: the body works out the output's dims and its kernel
/// call (broadcast layouts, a product's plan), then hands both to the sink, which allocates the output of its
/// shape and runs the kernel into it. The body is then compiled once per element type and device, and the op's
/// typed method is a thin wrapper ([`Tensor::built_by`]); what stays per shape is one [`Sink::fill`] per output
/// shape, shared by every op that returns a tensor of that shape.
pub(crate) trait Sink<T: WithDType, D: Device> {
    /// The output, of `dims`, written by `kernel`. The op's types vouch that `dims` are the sink's shape's (it
    /// panics with an internal error otherwise).
    fn fill(
        &mut self,
        op: &'static str,
        dims: &Dims,
        kernel: &mut Writer<'_, D::Out<T>>,
    ) -> Result<()>;
}

impl<T: WithDType, S: Shape, D: Device> Sink<T, D> for Option<Tensor<T, S, D>> {
    fn fill(
        &mut self,
        op: &'static str,
        dims: &Dims,
        kernel: &mut Writer<'_, D::Out<T>>,
    ) -> Result<()> {
        let shape = S::from_dims(dims).unwrap_or_else(|| output_dims_disagree(op, dims));
        check_output::<T>(op, dims)?;
        let storage = fresh::<T, S, D>(op, shape.numel(), kernel)?;
        *self = Some(Tensor::from_storage(shape, storage));
        Ok(())
    }
}

/// [`Sink::fill`]'s panic: an op's output dims that its output type does not have (a bug in the op, not the
/// caller's: the types fix the output shape).
#[cold]
#[inline(never)]
fn output_dims_disagree(op: &'static str, dims: &Dims) -> ! {
    panic!("{op}: internal error: output dims {dims} disagree with the output type")
}

/// [`Tensor::built_by`]'s panic: an op body that returned `Ok` without filling its sink (a bug in the op).
#[cold]
#[inline(never)]
fn sink_unfilled() -> ! {
    panic!("typed-tensor internal error: an op returned without its output")
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// This tensor's buffer as a kernel's destination, when no other tensor shares it.
    #[inline]
    pub(crate) fn unique_out(&mut self) -> Option<&mut D::Out<T>> {
        // SAFETY: the result goes only to kernels (every caller passes it straight to one), which write only
        // values (the `Kernels` contract).
        D::buffer_mut(&mut self.storage).map(|buffer| unsafe { D::out_of(buffer) })
    }

    /// [`Self::unique_out`] when this tensor is also the dense row-major start of its buffer: a kernel may then
    /// write the result over it (the in-place and `_into` forms).
    #[inline]
    pub(crate) fn dense_out(&mut self) -> Option<&mut D::Out<T>> {
        if self.is_dense_from_start() {
            self.unique_out()
        } else {
            None
        }
    }

    /// A contiguous tensor of `shape` over a fresh storage that `kernel` writes. Called through [`written!`],
    /// which keeps the kernel call in a local of the caller: this function then depends on the shape alone, not
    /// on the kernel (see [`call`](self::call) for why that matters).
    pub(crate) fn try_written_by(
        shape: S,
        op: &'static str,
        kernel: &mut Writer<'_, D::Out<T>>,
    ) -> Result<Self> {
        // A copy of a broadcast view can be larger than memory can hold; the allocation would abort.
        check_output::<T>(op, &shape.dims())?;
        let storage = fresh::<T, S, D>(op, shape.numel(), kernel)?;
        Ok(Self::from_storage(shape, storage))
    }

    /// [`Self::try_written_by`] in an infallible op: a device failure panics with its message.
    #[track_caller]
    pub(crate) fn written_by(
        shape: S,
        op: &'static str,
        kernel: &mut Writer<'_, D::Out<T>>,
    ) -> Self {
        if D::SHAPE_FREE {
            or_panic(check_output::<T>(op, &shape.dims()));
            let storage = fresh_loose_or_panic::<T, D>(op, shape.numel(), kernel);
            return Self::from_storage(shape, D::tighten(storage));
        }
        device_ok(Self::try_written_by(shape, op, kernel))
    }

    /// What `body`, an op's shape-free body, builds in the [`Sink`] it is given; panics with the body's error.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn built_by(body: impl FnOnce(&mut dyn Sink<T, D>) -> Result<()>) -> Self {
        let mut out = None;
        device_ok(body(&mut out));
        out.unwrap_or_else(|| sink_unfilled())
    }

    /// [`Self::built_by`] returning the body's error.
    #[inline(always)]
    pub(crate) fn try_built_by(
        body: impl FnOnce(&mut dyn Sink<T, D>) -> Result<()>,
    ) -> Result<Self> {
        let mut out = None;
        body(&mut out)?;
        Ok(out.unwrap_or_else(|| sink_unfilled()))
    }

    /// The tensor of `shape` that sees `storage` (another tensor's, of any shape) through `layout`, whose dims
    /// are `shape`'s: a view sharing the buffer where the device shares buffers, a dense copy otherwise.
    #[inline]
    pub(crate) fn from_view<S0: Shape>(
        shape: S,
        layout: Layout,
        storage: &D::Storage<T, S0>,
    ) -> Self {
        debug_assert_eq!(shape.dims(), *layout.dims());
        if D::SHAPE_FREE
            && let Some(loose) = D::loose(storage)
        {
            return Self::from_loose_view(shape, &layout, loose);
        }
        let (storage, view) = device_ok(D::view::<T, S0, S>(storage, &layout));
        Tensor {
            storage,
            shape,
            view,
        }
    }

    /// [`Self::from_view`] over a device's shape-free storage (see [`Kernels::Loose`](crate::device::Kernels::Loose)):
    /// the same buffer, shared.
    #[inline]
    pub(crate) fn from_loose_view(shape: S, layout: &Layout, storage: &D::Loose<T>) -> Self {
        debug_assert_eq!(shape.dims(), *layout.dims());
        Tensor {
            storage: D::tighten(shared::<T, D>(storage)),
            shape,
            view: <D::View<S> as ViewOf<S>>::from_layout(layout),
        }
    }

    /// A contiguous tensor over fresh storage.
    #[inline(always)]
    pub(crate) fn from_storage(shape: S, storage: D::Storage<T, S>) -> Self {
        Tensor {
            storage,
            shape,
            view: <D::View<S> as ViewOf<S>>::contiguous(&shape),
        }
    }

    /// The buffer, as the kernels read it.
    #[inline(always)]
    pub(crate) fn buffer(&self) -> &D::Buffer<T> {
        D::buffer(&self.storage)
    }

    /// The shape value (zero-sized for static shapes).
    pub fn shape(&self) -> S {
        self.shape
    }
    /// The sizes of the axes.
    pub fn dims(&self) -> crate::shape::Dims {
        self.shape.dims()
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.numel()
    }
    /// The rank (number of axes).
    pub const fn rank(&self) -> usize {
        S::RANK
    }
    /// The memory layout of this view (dims, strides and offset), as the kernels take it.
    #[inline]
    pub fn layout(&self) -> Layout {
        let parts = self.view_parts();
        Layout::from_parts(
            self.shape.dims(),
            &parts.as_ref()[..S::RANK],
            parts.as_ref()[S::RANK],
        )
    }
    /// The runtime dtype tag.
    pub const fn dtype(&self) -> crate::dtype::DType {
        T::DTYPE
    }
    /// The device's storage of this tensor (shared with other views of it where the device shares buffers).
    pub fn storage(&self) -> &D::Storage<T, S> {
        &self.storage
    }
    /// True when the view is dense and row-major.
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        if <D::View<S> as ViewOf<S>>::DENSE {
            return true;
        }
        let parts = self.view_parts();
        crate::layout::is_row_major(&self.shape.dims(), &parts.as_ref()[..S::RANK])
    }

    /// The storage range of this view when it is contiguous (see [`Layout::contiguous_range`]).
    #[cfg_attr(not(feature = "alloc"), allow(dead_code))]
    #[inline]
    pub(crate) fn contiguous_range(&self) -> Option<core::ops::Range<usize>> {
        self.is_contiguous()
            .then(|| self.offset()..self.offset() + self.numel())
    }

    /// True when this view is the dense row-major start of its buffer: a kernel may write the result over it.
    #[inline]
    pub(crate) fn is_dense_from_start(&self) -> bool {
        self.contiguous_range()
            .is_some_and(|range| range.start == 0)
    }

    /// The stride of each axis, in elements, then the offset (see [`Shape::View`]).
    #[inline(always)]
    pub(crate) fn view_parts(&self) -> S::View {
        self.view.parts(&self.shape)
    }

    /// The stride of each axis, in elements (0 past the rank).
    #[inline]
    pub(crate) fn strides(&self) -> [usize; MAX_RANK] {
        let mut strides = [0; MAX_RANK];
        strides[..S::RANK].copy_from_slice(&self.view_parts().as_ref()[..S::RANK]);
        strides
    }

    /// Where the first element lies in the storage.
    #[inline(always)]
    pub(crate) fn offset(&self) -> usize {
        if <D::View<S> as ViewOf<S>>::DENSE {
            return 0;
        }
        self.view_parts().as_ref()[S::RANK]
    }

    /// The elements in row-major order, on the host.
    #[cfg(feature = "alloc")]
    pub fn try_to_vec(&self) -> Result<Vec<T>> {
        D::to_vec(self.buffer(), &self.layout())
    }

    /// The elements in row-major order, on the host. Panics only if the device fails; see [`Self::try_to_vec`].
    #[cfg(feature = "alloc")]
    pub fn to_vec(&self) -> Vec<T> {
        device_ok(self.try_to_vec())
    }

    /// Copies the tensor to another device (through host memory).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a = Tensor::<f32, Rank1<2>, Cpu>::from_array([1., 2.]);
    /// let b: Tensor<f32, Rank1<2>, Cpu> = a.to_device::<Cpu>().unwrap();
    /// assert_eq!(b.to_vec(), [1., 2.]);
    /// ```
    #[cfg(feature = "alloc")]
    pub fn to_device<D2: Device>(&self) -> Result<Tensor<T, S, D2>> {
        let host = self.try_to_vec()?;
        Ok(Tensor::from_storage(self.shape, D2::from_vec(host)?))
    }

    /// Converts every element to `U` with the [cast rules](crate::dtype#casts).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a = Tensor::<f32, _, Cpu>::from_array([-1.5, 2.7, 300.0]);
    /// assert_eq!(a.to_dtype::<u8>().to_vec(), [0, 2, 255]);
    /// ```
    pub fn to_dtype<U: WithDType>(&self) -> Tensor<U, S, D> {
        let src = (self.buffer(), &self.layout());
        written!(
            Tensor::written_by,
            self.shape,
            "to_dtype",
            call::cast::<T, U, D>(src)
        )
    }
}
