//! Devices: zero-sized types that own a storage type and run the kernels.
//!
//! Three of them: [`Cpu`] (heap buffers shared by views, threads, the `gemm` crate), `Cuda` (GPU buffers, PTX
//! kernels) and [`Embedded`] (each tensor a dense array of its static shape, no heap). [`Device`] is what user
//! code names (`D: Device` is the only bound a device-generic model needs). Its supertrait [`Kernels`] holds the
//! storage types and every kernel family (fill, copy, cast, unary, binary, compare, where, reduce, ...), each
//! generic over the element type and reading shape-erased buffers through a [`Layout`]; only the output's storage
//! type names its shape, for the device whose storage is sized by it. `Kernels` stays out of the prelude so its
//! method names never show up in a user's method-not-found errors. Device state (a CUDA context, say) lives in a
//! lazily initialised global so the type stays zero-sized. The loops that `Cpu` and `Embedded` share over host
//! memory are in `host`.

#[cfg(feature = "alloc")]
mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod embedded;
pub(crate) mod host;

#[cfg(feature = "std")]
pub use cpu::CpuMemoryStats;
#[cfg(feature = "alloc")]
#[cfg(feature = "alloc")]
pub use cpu::{Cpu, CpuStorage};
#[cfg(feature = "cuda")]
pub use cuda::Cuda;
pub use embedded::{ArrayStorage, Embedded};

use crate::dtype::{FloatDType, IndexDType, WithDType};
use crate::error::Result;
use crate::layout::{Layout, ViewOf};
use crate::ops::{AdamStep, AlongAxis, BinaryOp, CmpOp, Conv2dParams, Pool, ReduceOp, UnaryOp};
use crate::shape::{Dims, Shape, MAX_RANK};

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

/// Small static tensors: `Cpu` buffers of up to this many bytes live inline in the tensor (no heap), and static
/// tensors up to this size in host memory (`Cpu`, `Embedded`) skip the kernels for loops of known length.
pub const INLINE_BYTES: usize = 64;

/// A compute device: a zero-sized type that tensors carry as their `D` parameter.
pub trait Device: Kernels + Copy + Default + core::fmt::Debug + Send + Sync + 'static {}

/// The storage and kernels of a device. Kernels write fresh, contiguous output; inputs are read through their
/// layouts.
///
/// Kernels read shape-erased [`Self::Buffer`]s through runtime [`Layout`]s, so their work is compiled once per
/// element type and op, not per shape. Their outputs are [`Self::Storage`]s typed by the output's shape: the heap
/// and GPU devices ignore the shape (their storage is the buffer), while a device that keeps every tensor in a
/// fixed-size array sizes the array by it. Generic code passes the shape along and rarely names it: it is
/// inferred from the tensor the storage goes into.
///
/// Every method returns `Result` because a device can fail at run time (a GPU out of memory); the CPU never
/// does. Binary, compare and where kernels receive operand layouts already broadcast to the output dims.
pub trait Kernels {
    /// What the kernels read: a buffer of `T` elements, whatever the shape of the tensor that owns it.
    type Buffer<T: WithDType>: ?Sized + Send + Sync;
    /// What a tensor of shape `S` owns: its buffer. Cloning shares it where the device can.
    type Storage<T: WithDType, S: Shape>: Clone + Send + Sync;
    /// What a tensor of shape `S` records of its view into its buffer: strides and offset ([`crate::layout::Strided`]) where
    /// tensors share buffers, nothing ([`crate::layout::Dense`]) where every tensor is a dense array.
    type View<S: Shape>: ViewOf<S>;
    /// Lower-case device name, for printing and errors.
    const NAME: &'static str;

    /// The buffer a storage holds.
    fn buffer<T: WithDType, S: Shape>(storage: &Self::Storage<T, S>) -> &Self::Buffer<T>;
    /// The storage and view of a tensor of shape `S` that sees `storage` (another tensor's) through `layout`, whose
    /// dims are `S`'s: the same buffer, shared, where views share buffers; a dense copy of the view otherwise.
    #[allow(clippy::type_complexity)] // a storage and its view record, both of shape `S`
    fn view<T: WithDType, S0: Shape, S: Shape>(
        storage: &Self::Storage<T, S0>,
        layout: &Layout,
    ) -> Result<(Self::Storage<T, S>, Self::View<S>)>;

    /// `n` copies of `value`.
    fn full<T: WithDType, S: Shape>(n: usize, value: T) -> Result<Self::Storage<T, S>>;
    /// A buffer holding `data`.
    fn from_slice<T: WithDType, S: Shape>(data: &[T]) -> Result<Self::Storage<T, S>>;
    /// A buffer holding `data`, reusing the allocation where the device can.
    #[cfg(feature = "alloc")]
    fn from_vec<T: WithDType, S: Shape>(data: Vec<T>) -> Result<Self::Storage<T, S>> {
        Self::from_slice(&data)
    }
    /// The buffer as a host slice, on a device whose memory is the host's (`None`, the default, elsewhere). With
    /// [`Self::host_zeros`] and [`Self::host_slice_mut`] it lets tiny ops with static shapes run inline instead of
    /// through a kernel.
    fn host_slice<T: WithDType>(buffer: &Self::Buffer<T>) -> Option<&[T]> {
        let _ = buffer;
        None
    }
    /// The buffer as a mutable host slice, on a device whose memory is the host's, when no other tensor shares it
    /// (`None`, the default, elsewhere).
    fn host_slice_mut<T: WithDType, S: Shape>(
        storage: &mut Self::Storage<T, S>,
    ) -> Option<&mut [T]> {
        let _ = storage;
        None
    }
    /// A fresh buffer of `n` zeros, on a device whose memory is the host's (`None`, the default, elsewhere).
    fn host_zeros<T: WithDType, S: Shape>(n: usize) -> Option<Self::Storage<T, S>> {
        let _ = n;
        None
    }
    /// The elements of a view, in row-major order, on the host.
    #[cfg(feature = "alloc")]
    fn to_vec<T: WithDType>(buffer: &Self::Buffer<T>, layout: &Layout) -> Result<Vec<T>>;
    /// The elements of a view, in row-major order, into `out` (`layout.numel()` long) in host memory. The default
    /// copies from the host slice where there is one, else (with `alloc`) through `to_vec`.
    fn read_into<T: WithDType>(
        buffer: &Self::Buffer<T>,
        layout: &Layout,
        out: &mut [T],
    ) -> Result<()> {
        if let Some(host) = Self::host_slice(buffer) {
            // SAFETY: `map_view_into` writes only the view's elements.
            let slots = unsafe { host::elementwise::as_slots(out) };
            host::elementwise::map_view_into(slots, host, layout, |x| x);
            return Ok(());
        }
        #[cfg(feature = "alloc")]
        {
            out.copy_from_slice(&Self::to_vec(buffer, layout)?);
            Ok(())
        }
        #[cfg(not(feature = "alloc"))]
        Err(crate::error::Error::Unsupported {
            op: "read_into",
            dtype: T::DTYPE,
            device: Self::NAME,
        })
    }
    /// A contiguous copy of a view.
    fn copy_strided<T: WithDType, S: Shape>(
        buffer: &Self::Buffer<T>,
        layout: &Layout,
    ) -> Result<Self::Storage<T, S>>;
    /// Every element converted with [`crate::dtype::cast`].
    fn cast<T: WithDType, U: WithDType, S: Shape>(
        buffer: &Self::Buffer<T>,
        layout: &Layout,
    ) -> Result<Self::Storage<U, S>>;
    /// `op` on every element.
    fn unary<T: WithDType, S: Shape, Op: UnaryOp<T>>(
        op: Op,
        buffer: &Self::Buffer<T>,
        layout: &Layout,
    ) -> Result<Self::Storage<T, S>>;
    /// `op` on every pair.
    fn binary<T: WithDType, S: Shape, Op: BinaryOp<T>>(
        op: Op,
        lhs: (&Self::Buffer<T>, &Layout),
        rhs: (&Self::Buffer<T>, &Layout),
    ) -> Result<Self::Storage<T, S>>;
    /// [`Self::unary`] written into `out`, whose first `src.numel()` elements become the result (contiguous).
    /// A device writes in place when no other tensor shares `out`; otherwise, and by default, `out` is replaced
    /// by a fresh buffer.
    fn unary_into<T: WithDType, S: Shape, Op: UnaryOp<T>>(
        op: Op,
        src: (&Self::Buffer<T>, &Layout),
        out: &mut Self::Storage<T, S>,
    ) -> Result<()> {
        *out = Self::unary(op, src.0, src.1)?;
        Ok(())
    }
    /// [`Self::binary`] written into `out`, as in [`Self::unary_into`].
    fn binary_into<T: WithDType, S: Shape, Op: BinaryOp<T>>(
        op: Op,
        lhs: (&Self::Buffer<T>, &Layout),
        rhs: (&Self::Buffer<T>, &Layout),
        out: &mut Self::Storage<T, S>,
    ) -> Result<()> {
        *out = Self::binary(op, lhs, rhs)?;
        Ok(())
    }
    /// `dst = op(dst)` over a dense row-major buffer with `dims`, in place where nothing else shares it (a fresh
    /// buffer otherwise, and by default).
    fn unary_assign<T: WithDType, S: Shape, Op: UnaryOp<T>>(
        op: Op,
        dst: &mut Self::Storage<T, S>,
        dims: &Dims,
    ) -> Result<()> {
        *dst = Self::unary(op, Self::buffer(dst), &Layout::contiguous(*dims))?;
        Ok(())
    }
    /// `dst = op(dst, rhs)` over a dense row-major buffer with the dims of `rhs`'s (already broadcast) layout, in
    /// place as in [`Self::unary_assign`].
    fn binary_assign<T: WithDType, S: Shape, Op: BinaryOp<T>>(
        op: Op,
        dst: &mut Self::Storage<T, S>,
        rhs: (&Self::Buffer<T>, &Layout),
    ) -> Result<()> {
        let ld = Layout::contiguous(*rhs.1.dims());
        *dst = Self::binary(op, (Self::buffer(dst), &ld), rhs)?;
        Ok(())
    }
    /// A `u8` mask, 1 where `op` holds.
    fn compare<T: WithDType, S: Shape>(
        op: CmpOp,
        lhs: (&Self::Buffer<T>, &Layout),
        rhs: (&Self::Buffer<T>, &Layout),
    ) -> Result<Self::Storage<u8, S>>;
    /// `op` over the axes marked in `reduced`; the output is contiguous over the other axes, in order.
    fn reduce<T: WithDType, S: Shape, Op: ReduceOp<T>>(
        op: Op,
        buffer: &Self::Buffer<T>,
        layout: &Layout,
        reduced: &[bool; MAX_RANK],
    ) -> Result<Self::Storage<Op::Out, S>>;
    /// The parts laid end to end along `axis` (their other dims agree); contiguous output.
    fn concat<T: WithDType, S: Shape>(
        parts: &[(&Self::Buffer<T>, &Layout)],
        axis: usize,
    ) -> Result<Self::Storage<T, S>>;
    /// `out[p] = src[p with its `axis` coordinate replaced by idx[p]]` over the index view's dims; `src` has the
    /// same dims except along `axis`. An index outside `src`'s axis is `Error::IndexOutOfRange` naming `op`.
    fn gather<T: WithDType, I: IndexDType, S: Shape>(
        op: &'static str,
        src: (&Self::Buffer<T>, &Layout),
        idx: (&Self::Buffer<I>, &Layout),
        axis: usize,
    ) -> Result<Self::Storage<T, S>>;
    /// A contiguous copy of `dst` with `src[p]` added at `p with its axis coordinate replaced by idx[p]` for
    /// every position `p` of the index view (duplicates accumulate).
    fn scatter_add<T: WithDType, I: IndexDType, S: Shape>(
        op: &'static str,
        dst: (&Self::Buffer<T>, &Layout),
        idx: (&Self::Buffer<I>, &Layout),
        src: (&Self::Buffer<T>, &Layout),
        axis: usize,
    ) -> Result<Self::Storage<T, S>>;
    /// `op` on every lane along `axis` (softmax, log-softmax, layer norm, RMS norm); contiguous output.
    fn along_axis<T: FloatDType, S: Shape>(
        op: AlongAxis,
        buffer: &Self::Buffer<T>,
        layout: &Layout,
        axis: usize,
    ) -> Result<Self::Storage<T, S>>;
    /// 2-D convolution of an `(N, C, H, W)` input with a `(C_out, C / groups, KH, KW)` weight; contiguous
    /// `(N, C_out, OH, OW)` output.
    fn conv2d<T: FloatDType, S: Shape>(
        input: (&Self::Buffer<T>, &Layout),
        weight: (&Self::Buffer<T>, &Layout),
        params: Conv2dParams,
    ) -> Result<Self::Storage<T, S>>;
    /// Transposed 2-D convolution (the gradient of `conv2d` with respect to its input) of an `(N, C, H, W)` input
    /// with a `(C, C_out / groups, KH, KW)` weight; contiguous `(N, C_out, OH, OW)` output with
    /// `OH = (H - 1) stride - 2 padding + dilation (KH - 1) + 1`.
    fn conv_transpose2d<T: FloatDType, S: Shape>(
        input: (&Self::Buffer<T>, &Layout),
        weight: (&Self::Buffer<T>, &Layout),
        params: Conv2dParams,
    ) -> Result<Self::Storage<T, S>>;
    /// 2-D pooling of an `(N, C, H, W)` input with square `kernel` windows (`params.groups` is ignored).
    fn pool2d<T: FloatDType, S: Shape>(
        pool: Pool,
        input: (&Self::Buffer<T>, &Layout),
        kernel: usize,
        params: Conv2dParams,
    ) -> Result<Self::Storage<T, S>>;
    /// Batched matrix product: `lhs` has dims `[B, M, K]`, `rhs` `[B, K, N]` (an operand shared by every batch has
    /// batch stride 0); the output is contiguous `[B, M, N]`. Low-precision types accumulate in f32.
    fn matmul<T: FloatDType, S: Shape>(
        lhs: (&Self::Buffer<T>, &Layout),
        rhs: (&Self::Buffer<T>, &Layout),
    ) -> Result<Self::Storage<T, S>>;
    /// The gradient of `conv2d` with respect to its `(C_out, C / groups, KH, KW)` weight (`kernel` = `[KH, KW]`),
    /// from the `(N, C, H, W)` input and the `(N, C_out, OH, OW)` output gradient. `Ok(None)` when the device has
    /// no kernel (the default): the caller composes it from convolutions.
    fn conv2d_weight_grad<T: FloatDType, S: Shape>(
        input: (&Self::Buffer<T>, &Layout),
        grad: (&Self::Buffer<T>, &Layout),
        kernel: [usize; 2],
        params: Conv2dParams,
    ) -> Result<Option<Self::Storage<T, S>>> {
        let _ = (input, grad, kernel, params);
        Ok(None)
    }
    /// The gradient of max pooling with respect to its `(N, C, H, W)` input: every position holding its window's
    /// maximum (`out`, the forward result) gets the window's `grad`. `Ok(None)` when the device has no kernel (the
    /// default): the caller composes it from convolutions.
    fn max_pool2d_backward<T: FloatDType, S: Shape>(
        input: (&Self::Buffer<T>, &Layout),
        out: (&Self::Buffer<T>, &Layout),
        grad: (&Self::Buffer<T>, &Layout),
        kernel: usize,
        params: Conv2dParams,
    ) -> Result<Option<Self::Storage<T, S>>> {
        let _ = (input, out, grad, kernel, params);
        Ok(None)
    }
    /// One fused [`AdamStep`] over dense buffers `w`, `m`, `v` (in place) from `grad`, all of `grad`'s numel.
    /// Returns `Ok(false)` when the device has no fused kernel or cannot write in place (a buffer is shared, the
    /// gradient strided): the optimizer then composes the step from tensor ops. The default has none.
    fn adam_step<T: FloatDType, S: Shape>(
        w: &mut Self::Storage<T, S>,
        m: &mut Self::Storage<T, S>,
        v: &mut Self::Storage<T, S>,
        grad: (&Self::Buffer<T>, &Layout),
        step: AdamStep,
    ) -> Result<bool> {
        let _ = (w, m, v, grad, step);
        Ok(false)
    }
    /// `on_true` where the mask is non-zero, `on_false` elsewhere.
    fn where_cond<T: WithDType, S: Shape>(
        mask: (&Self::Buffer<u8>, &Layout),
        on_true: (&Self::Buffer<T>, &Layout),
        on_false: (&Self::Buffer<T>, &Layout),
    ) -> Result<Self::Storage<T, S>>;
}
