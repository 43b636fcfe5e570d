//! The embedded device ([`Embedded`]): every tensor is one dense row-major array of its static shape, held by
//! value, and every kernel runs the host's heap-free loops ([`crate::device::host`]) into a fresh array.

mod storage;

pub use storage::ArrayStorage;

use super::host::elementwise::as_slots;
use super::host::kernels as host;
use super::{Kernels, Write};
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::{Dense, Layout};
use crate::shape::Shape;
#[cfg(feature = "alloc")]
use alloc::vec::Vec;
use core::mem::MaybeUninit;

/// The embedded device: every tensor is one dense row-major array of its static shape, held by value.
///
/// `Tensor<f32, Rank2<4, 4>, Embedded>` is a `[[f32; 4]; 4]` and nothing more: no heap (the device works without
/// the `alloc` feature), no reference count, no strides. Its size is `size_of::<S::Array<T>>()`, so a model's
/// memory is a compile-time fact, and a tensor can sit in a `static`: weights in the binary, built with
/// [`Tensor::from_array_const`](crate::Tensor::from_array_const). Shapes must be static: a runtime (`usize`)
/// dim fails the build.
///
/// What changes against `Cpu` is the cost model, not the API: the same generic code runs
/// on both. Views (`t()`, `narrow`, `broadcast`, `.i(..)`) are copies into a fresh array, since there is no
/// shared buffer to view; elementwise ops, reductions, softmax and the norms, matmul, indexing, joining,
/// convolution and pooling run on the calling thread with loops that need no scratch memory (a direct
/// convolution instead of the CPU's im2col + GEMM), and tiny tensors take the same inline paths as on the CPU.
/// Nothing allocates, and an op fails only for runtime data (an index out of range). Tensors live where their
/// owner puts them (the stack, a `static`), so size them for the target. Autograd, `nn` and the optimizers are
/// for `Cpu` and `Cuda`; only the `Vec` forms (`to_vec`, `from_vec`) need the `alloc` feature.
///
/// ```
/// use typed_tensor::prelude::*;
/// let a = Tensor::<f32, _, Embedded>::from_array([[1., 2.], [3., 4.]]);
/// let b = a.t();                                   // a transposed copy
/// let c = a.matmul(&b);
/// assert_eq!(c.to_array(), [[5., 11.], [11., 25.]]);
/// assert_eq!(core::mem::size_of_val(&c), 16);      // four f32, nothing else
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Embedded;

// SAFETY: every kernel below initialises its whole output on `Ok` (the host loops write one value per output
// position; the rest start from `zeroed`), and only `Operand::Out` reads the destination.
unsafe impl Kernels for Embedded {
    type Buffer<T: WithDType> = [T];
    type Out<T: WithDType> = [MaybeUninit<T>];
    type Storage<T: WithDType, S: Shape> = ArrayStorage<T, S>;
    type View<S: Shape> = Dense;
    type Loose<T: WithDType> = core::convert::Infallible;
    const SHAPE_FREE: bool = false;
    const NAME: &'static str = "embedded";

    #[inline(always)]
    fn buffer<T: WithDType, S: Shape>(storage: &ArrayStorage<T, S>) -> &[T] {
        storage.as_slice()
    }

    #[inline(always)]
    fn buffer_mut<T: WithDType, S: Shape>(storage: &mut ArrayStorage<T, S>) -> Option<&mut [T]> {
        Some(storage.as_mut_slice())
    }

    #[inline(always)]
    unsafe fn alloc_with<T: WithDType, S: Shape>(
        _op: &'static str,
        n: usize,
        write: &mut Write<'_, [MaybeUninit<T>]>,
    ) -> Result<ArrayStorage<T, S>> {
        debug_assert_eq!(n, ArrayStorage::<T, S>::LEN);
        // Zeros first (folded into the writes for these small arrays), so the array holds values whatever
        // `write` does.
        let mut out = ArrayStorage::zeroed();
        // SAFETY: `write` writes only initialised values (this method's contract).
        write(unsafe { as_slots(out.as_mut_slice()) })?;
        Ok(out)
    }

    unsafe fn alloc_loose<T: WithDType>(
        op: &'static str,
        _n: usize,
        _write: &mut Write<'_, [MaybeUninit<T>]>,
    ) -> Result<core::convert::Infallible> {
        // Every tensor here is an array sized by its shape: there is no storage without one.
        Err(crate::error::Error::Unsupported {
            op,
            dtype: T::DTYPE,
            device: Self::NAME,
        })
    }

    #[inline(always)]
    fn loose<T: WithDType, S: Shape>(
        _storage: &ArrayStorage<T, S>,
    ) -> Option<&core::convert::Infallible> {
        None
    }

    #[inline(always)]
    fn tighten<T: WithDType, S: Shape>(storage: core::convert::Infallible) -> ArrayStorage<T, S> {
        match storage {}
    }

    #[inline(always)]
    unsafe fn out_of<T: WithDType>(buffer: &mut [T]) -> &mut [MaybeUninit<T>] {
        // SAFETY: whatever writes through the slots writes only values (this method's contract).
        unsafe { as_slots(buffer) }
    }

    #[inline]
    fn view<T: WithDType, S0: Shape, S: Shape>(
        storage: &ArrayStorage<T, S0>,
        layout: &Layout,
    ) -> Result<(ArrayStorage<T, S>, Dense)> {
        let mut out = ArrayStorage::zeroed();
        // SAFETY: `copy` writes only values.
        host::copy((storage.as_slice(), layout), unsafe {
            as_slots(out.as_mut_slice())
        });
        Ok((out, Dense))
    }

    #[inline]
    fn full<T: WithDType, S: Shape>(n: usize, value: T) -> Result<ArrayStorage<T, S>> {
        debug_assert_eq!(n, ArrayStorage::<T, S>::LEN);
        let mut out = ArrayStorage::zeroed();
        out.as_mut_slice().fill(value);
        Ok(out)
    }

    #[inline]
    fn from_slice<T: WithDType, S: Shape>(data: &[T]) -> Result<ArrayStorage<T, S>> {
        let mut out = ArrayStorage::zeroed();
        out.as_mut_slice().copy_from_slice(data);
        Ok(out)
    }

    #[inline(always)]
    fn host_slice<T: WithDType>(buffer: &[T]) -> Option<&[T]> {
        Some(buffer)
    }

    #[inline(always)]
    fn host_slice_mut<T: WithDType, S: Shape>(
        storage: &mut ArrayStorage<T, S>,
    ) -> Option<&mut [T]> {
        Some(storage.as_mut_slice())
    }

    #[inline(always)]
    fn host_zeros<T: WithDType, S: Shape>(n: usize) -> Option<ArrayStorage<T, S>> {
        debug_assert_eq!(n, ArrayStorage::<T, S>::LEN);
        Some(ArrayStorage::zeroed())
    }

    #[cfg(feature = "alloc")]
    fn to_vec<T: WithDType>(buffer: &[T], layout: &Layout) -> Result<Vec<T>> {
        let mut out = alloc::vec![T::ZERO; layout.numel()];
        // SAFETY: `copy` writes only values.
        host::copy((buffer, layout), unsafe { as_slots(&mut out) });
        Ok(out)
    }

    super::host::kernels::host_kernel_methods!(crate::device::host::kernels::copy);
}
