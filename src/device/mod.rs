//! Devices: zero-sized types that own a storage type and run the kernels.
//!
//! Three of them: [`Cpu`] (heap buffers shared by views, threads, the `gemm` crate), `Cuda` (GPU buffers, PTX
//! kernels) and [`Embedded`] (each tensor a dense array of its static shape, no heap). What user code names is
//! [`Device`](crate::Device) (`D: Device`, the only bound a device-generic model needs), defined with the op
//! families it gathers (`ops::Device`), so that this layer imports nothing from them. Its supertrait [`Kernels`]
//! (here) holds the storage types, views, construction and the core kernels (copy, cast); every op family under
//! `src/ops/` brings its own device trait (`ops::ElementwiseKernels`, `ops::ReduceKernels`, ...), implemented
//! there for each device. Kernels are generic over the element type, read shape-erased buffers through a [`Layout`] and write
//! into a destination buffer the tensor layer allocated (only storage names a shape, for the device whose
//! storage is sized by it). These traits stay out of the prelude so their method names never show up in a
//! user's method-not-found errors. Device state (a CUDA context, say) lives in a
//! lazily initialised global so the type stays zero-sized. The loops that `Cpu` and `Embedded` share over host
//! memory are in `host`.

#[cfg(feature = "alloc")]
pub(crate) mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod embedded;
pub(crate) mod host;

#[cfg(feature = "std")]
pub use cpu::CpuMemoryStats;
#[cfg(feature = "alloc")]
pub use cpu::{Cpu, CpuStorage};
#[cfg(feature = "cuda")]
pub use cuda::{Cuda, CudaGraph, MatmulBackend, MemoryStats};
pub use embedded::{ArrayStorage, Embedded};

use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::{Layout, ViewOf};
use crate::shape::{Dims, Shape};

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

/// Small static tensors: `Cpu` buffers of up to this many bytes live inline in the tensor (no heap), and static
/// tensors up to this size in host memory (`Cpu`, `Embedded`) skip the kernels for loops of known length.
pub const INLINE_BYTES: usize = 64;

/// An elementwise kernel's operand: a buffer read through a layout, or the kernel's own destination (the in-place
/// forms: `x += y`, `x.unary_assign(op)`).
pub enum Operand<'a, B: ?Sized> {
    /// A buffer read through a layout whose dims are the output's (broadcast already applied).
    View(&'a B, &'a Layout),
    /// The destination's own first elements, dense row-major with these dims: each element is read before it is
    /// written.
    Out(&'a Dims),
}

impl<B: ?Sized> Clone for Operand<'_, B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<B: ?Sized> Copy for Operand<'_, B> {}

impl<B: ?Sized> Operand<'_, B> {
    /// The output's element count.
    #[inline]
    pub fn numel(&self) -> usize {
        match self {
            Operand::View(_, layout) => layout.numel(),
            Operand::Out(dims) => dims.numel(),
        }
    }
}

/// A kernel call writing into the destination it is given (see [`Kernels::alloc_with`]), as a trait object.
pub type Write<'a, Out> = dyn FnMut(&mut Out) -> Result<()> + 'a;

/// The storage and kernels of a device.
///
/// Kernels read shape-erased [`Self::Buffer`]s through runtime [`Layout`]s and write their result, dense and
/// row-major, into the first elements of a destination ([`Self::Out`]) that the caller allocated
/// ([`Self::alloc_with`]) or owns alone ([`Self::buffer_mut`], [`Self::out_of`]): destination passing, so no
/// kernel names a shape and each is compiled once per element type and op. Only storage names its shape ([`Self::Storage`]): the heap and GPU devices ignore it
/// (their storage is the buffer), while a device that keeps every tensor in a fixed-size array sizes the array
/// by it. The tensor layer allocates, picks the destination (a fresh storage, or an `_into` / in-place target it
/// alone holds) and calls the kernel; devices hold no policy about reuse.
///
/// Every method returns `Result` because a device can fail at run time (a GPU out of memory); the CPU never
/// does. Binary, compare and where kernels receive operand layouts already broadcast to the output dims.
///
/// # Safety
///
/// A fresh destination may be uninitialised host memory ([`Self::alloc_with`] hands its memory to the storage
/// once the kernel returns), so an implementation promises that every kernel writing into an `out` initialises
/// all of the output's elements there whenever it returns `Ok`, and that a kernel reads `out` only when given
/// [`Operand::Out`].
pub unsafe trait Kernels {
    /// What the kernels read: a buffer of `T` elements, whatever the shape of the tensor that owns it.
    type Buffer<T: WithDType>: ?Sized + Send + Sync;
    /// Where a kernel writes: memory for `T` elements that may not be initialised yet (`[MaybeUninit<T>]` on the
    /// host devices, the GPU buffer on `Cuda`).
    type Out<T: WithDType>: ?Sized + Send + Sync;
    /// What a tensor of shape `S` owns: its buffer. Cloning shares it where the device can.
    type Storage<T: WithDType, S: Shape>: Clone + Send + Sync;
    /// What a tensor of shape `S` records of its view into its buffer: strides and offset ([`crate::layout::Strided`]) where
    /// tensors share buffers, nothing ([`crate::layout::Dense`]) where every tensor is a dense array.
    type View<S: Shape>: ViewOf<S>;
    /// Storage that names no shape, on a device whose storage does not depend on its shape: there
    /// `Storage<T, S>` is `Loose<T>` for every `S` (`Cpu`, `Cuda`), and [`Self::SHAPE_FREE`] says so. The tensor
    /// layer builds its outputs through it on such devices, so that that code is compiled once per element type
    /// and not once per tensor shape (a model of many layer widths would compile it once per width). A device whose
    /// storage is an array sized by its shape (`Embedded`) has none: `Infallible`.
    type Loose<T: WithDType>: Clone + Send + Sync;
    /// Whether the device's storage is [`Self::Loose`] whatever its shape (see there).
    const SHAPE_FREE: bool;
    /// Lower-case device name, for printing and errors.
    const NAME: &'static str;

    /// The buffer a storage holds.
    fn buffer<T: WithDType, S: Shape>(storage: &Self::Storage<T, S>) -> &Self::Buffer<T>;
    /// The buffer a storage holds, for writing, when no other storage shares it (`None` otherwise): a kernel may
    /// write there without any other tensor seeing the change.
    fn buffer_mut<T: WithDType, S: Shape>(
        storage: &mut Self::Storage<T, S>,
    ) -> Option<&mut Self::Buffer<T>>;
    /// A fresh storage of `n` elements, written by `write` (a kernel call) into the destination it receives.
    /// `op` names the operation in an out-of-memory error.
    ///
    /// # Safety
    ///
    /// Whenever `write` returns `Ok`, it has initialised the destination's first `n` elements (every kernel of
    /// this trait does), and it does not read the destination (no [`Operand::Out`]).
    ///
    /// `write` is a trait object so that this is compiled once per element type and shape, not once per call
    /// site: the calls are many (every op, for every shape of a model) and the kernel behind each is one call.
    unsafe fn alloc_with<T: WithDType, S: Shape>(
        op: &'static str,
        n: usize,
        write: &mut Write<'_, Self::Out<T>>,
    ) -> Result<Self::Storage<T, S>>;
    /// [`Self::alloc_with`] in the shape-free storage, where the device has one ([`Self::SHAPE_FREE`]);
    /// `Error::Unsupported` elsewhere.
    ///
    /// # Safety
    ///
    /// As for [`Self::alloc_with`].
    unsafe fn alloc_loose<T: WithDType>(
        op: &'static str,
        n: usize,
        write: &mut Write<'_, Self::Out<T>>,
    ) -> Result<Self::Loose<T>>;
    /// `storage` as the shape-free storage it is, where the device has [`Self::SHAPE_FREE`] storage (`None`
    /// elsewhere). Cloning it shares the buffer, as views do.
    fn loose<T: WithDType, S: Shape>(storage: &Self::Storage<T, S>) -> Option<&Self::Loose<T>>;
    /// The storage of shape `S` that `storage` is (the same value, where the device has [`Self::SHAPE_FREE`]
    /// storage).
    fn tighten<T: WithDType, S: Shape>(storage: Self::Loose<T>) -> Self::Storage<T, S>;
    /// A buffer (one a tensor alone holds: [`Self::buffer_mut`]) as a kernel's destination.
    ///
    /// # Safety
    ///
    /// Whatever writes through the result writes only initialised values (every kernel of this trait does).
    unsafe fn out_of<T: WithDType>(buffer: &mut Self::Buffer<T>) -> &mut Self::Out<T>;
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
    /// An error naming `op` while this device records work for later replays instead of running it (CUDA's
    /// `Cuda::capture`), for work whose arguments change from call to call, such as an optimizer's step (`what`
    /// says what it is); `Ok` on devices that never record (the default).
    fn refuse_recording(op: &'static str, what: &str) -> Result<()> {
        let _ = (op, what);
        Ok(())
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
    /// A fresh storage of `n` elements that `fill` writes in row-major order (a seeded random stream, a range):
    /// in place where the device's memory is the host's, through a host vector elsewhere (so no heap is needed on
    /// a device whose tensors are arrays).
    fn filled<T: WithDType, S: Shape>(
        n: usize,
        fill: &mut dyn FnMut(&mut [T]),
    ) -> Result<Self::Storage<T, S>> {
        if let Some(mut storage) = Self::host_zeros::<T, S>(n)
            && let Some(elements) = Self::host_slice_mut(&mut storage)
        {
            fill(&mut elements[..n]);
            return Ok(storage);
        }
        #[cfg(feature = "alloc")]
        {
            let mut v = alloc::vec![T::ZERO; n];
            fill(&mut v);
            Self::from_vec(v)
        }
        #[cfg(not(feature = "alloc"))]
        Err(crate::error::Error::Unsupported {
            op: "filled",
            dtype: T::DTYPE,
            device: Self::NAME,
        })
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

    // The core kernels (each op family's are in its folder under `src/ops/`). Each writes the first `n` elements
    // of `out`, dense row-major, where `n` is the element count of the output its inputs describe; `out` holds at
    // least that many. A kernel reads `out` only for `Operand::Out`, whose caller guarantees the values are there
    // (a destination from `out_of`).

    /// The elements of a view, densely.
    fn copy<T: WithDType>(src: (&Self::Buffer<T>, &Layout), out: &mut Self::Out<T>) -> Result<()>;
    /// Every element converted with [`crate::dtype::cast`].
    fn cast<T: WithDType, U: WithDType>(
        src: (&Self::Buffer<T>, &Layout),
        out: &mut Self::Out<U>,
    ) -> Result<()>;
}
