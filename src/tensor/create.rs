//! Creating tensors and reading them back as arrays.

use super::{check_output, device_ok, or_panic, Tensor};
use crate::device::{ArrayStorage, Embedded};
use crate::dtype::{FloatDType, WithDType};
use crate::error::{Error, Result};
use crate::layout::Dense;
use crate::ops::Device;
use crate::shape::{Const, ConstShape, Dims, Shape};

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

/// Nested arrays that `from_array` accepts: `T` (rank 0), `[T; A]`, `[[T; B]; A]`, ... up to rank 6. The
/// shape is read off the array type.
pub trait NestedArray<T: WithDType>: crate::dtype::Plain {
    /// The shape of a tensor holding this array.
    type Shape: ConstShape<Array<T> = Self>;
}

impl<T: WithDType> NestedArray<T> for T {
    type Shape = ();
}
macro_rules! nested_array {
    ($($n:ident)*; $arr:ty) => {
        impl<T: WithDType, $(const $n: usize),*> NestedArray<T> for $arr {
            type Shape = ($(Const<$n>,)*);
        }
    };
}
nested_array!(A; [T; A]);
nested_array!(A B; [[T; B]; A]);
nested_array!(A B C; [[[T; C]; B]; A]);
nested_array!(A B C D; [[[[T; D]; C]; B]; A]);
nested_array!(A B C D E; [[[[[T; E]; D]; C]; B]; A]);
nested_array!(A B C D E F; [[[[[[T; F]; E]; D]; C]; B]; A]);

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Every element `value`, for a shape with runtime dims. `Error::ShapeOverflow` when the shape is too large
    /// to address, `Error::OutOfMemory` when the host cannot allocate it (a device's own error on a GPU): a
    /// request larger than memory is an error, not an abort.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let err = Tensor::<f32, (usize,), Cpu>::try_full_with_shape((1 << 44,), 0.0).unwrap_err(); // 64 TiB
    /// assert_eq!(err.to_string(), "full: out of memory allocating 70368744177664 bytes");
    /// ```
    pub fn try_full_with_shape(shape: S, value: T) -> Result<Self> {
        let n = checked_numel::<T>("full", &shape.dims())?;
        Ok(Self::from_storage(shape, D::full(n, value)?))
    }
    /// Every element `value`, for a shape with runtime dims: `Tensor::<f32, (usize, Const<3>), Cpu>::full_with_shape((5, Const), 1.0)`.
    /// Panics with [`Self::try_full_with_shape`]'s error.
    #[track_caller]
    pub fn full_with_shape(shape: S, value: T) -> Self {
        or_panic(Self::try_full_with_shape(shape, value))
    }
    /// Zeros, for a shape with runtime dims.
    #[track_caller]
    pub fn zeros_with_shape(shape: S) -> Self {
        Self::full_with_shape(shape, T::ZERO)
    }
    /// Ones, for a shape with runtime dims.
    #[track_caller]
    pub fn ones_with_shape(shape: S) -> Self {
        Self::full_with_shape(shape, T::ONE)
    }

    /// A tensor holding `data` in row-major order; `Error::LengthMismatch` unless it has exactly
    /// `shape.numel()` elements (`Error::ShapeOverflow` when that count does not fit the address space).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let err = Tensor::<f32, (usize, usize), Cpu>::from_slice_with_shape((3, 0x5555_5555_5555_5556), &[1., 2.])
    ///     .unwrap_err(); // 3 x 0x5555_5555_5555_5556 wraps to 2
    /// assert_eq!(
    ///     err.to_string(),
    ///     "from_slice: shape [3, 6148914691236517206] is too large to address (more than isize::MAX elements or bytes)"
    /// );
    /// ```
    pub fn from_slice_with_shape(shape: S, data: &[T]) -> Result<Self> {
        check_len::<T, S>("from_slice", shape, data.len())?;
        Ok(Self::from_storage(shape, D::from_slice(data)?))
    }

    /// A fresh tensor of `shape` whose elements `fill` writes, in row-major order: in place where the device's
    /// memory is the host's, through a vector elsewhere (so no heap is needed on the embedded device). Panics
    /// with `Error::ShapeOverflow` naming `op` when the shape is too large to address.
    ///
    /// `fill` is a trait object, and the fills are built in functions generic over the element type alone
    /// ([`fill_rand`], ...), so a model's many parameter shapes share one copy of each fill loop; the device's
    /// [`Kernels::filled`](crate::device::Kernels::filled) builds the storage, on the CPU in one out-of-line copy
    /// per element type.
    #[track_caller]
    pub(crate) fn filled_with(op: &'static str, shape: S, fill: &mut dyn FnMut(&mut [T])) -> Self {
        let n = or_panic(checked_numel::<T>(op, &shape.dims()));
        Self::from_storage(shape, device_ok(D::filled::<T, S>(n, fill)))
    }

    /// Like [`Self::from_slice_with_shape`], reusing the vector's allocation on the CPU.
    #[cfg(feature = "alloc")]
    pub fn from_vec_with_shape(shape: S, data: Vec<T>) -> Result<Self> {
        check_len::<T, S>("from_vec", shape, data.len())?;
        Ok(Self::from_storage(shape, D::from_vec(data)?))
    }
}

/// `0, 1, 2, ...` into `out`.
fn fill_arange<T: WithDType>(out: &mut [T]) {
    for (i, x) in out.iter_mut().enumerate() {
        *x = T::from_i64(i as i64);
    }
}

/// A fill writing `sample` draws from the seeded stream, each rounded to `T`. Out of line: the stream's setup
/// is shared by the constructors of every shape.
#[inline(never)]
fn fill_rand<T: WithDType>(seed: u64, sample: fn(&mut SeededRng) -> f64) -> impl FnMut(&mut [T]) {
    let mut rng = SeededRng::new(seed);
    move |out| out.fill_with(|| T::from_f64(sample(&mut rng)))
}

/// [`Tensor::uniform`]'s samples: each of [`fill_rand`]'s uniform samples `u`, rounded to `T`, mapped to
/// `low + (high - low) u` as `affine(high - low, low)` maps it (both coefficients rounded to `T`, the result
/// rounded once), so the values are those of `rand(seed).affine(high - low, low)`.
fn fill_uniform<T: FloatDType>(seed: u64, low: f64, high: f64) -> impl FnMut(&mut [T]) {
    let mut rng = SeededRng::new(seed);
    let (mul, add) = (T::from_f64(high - low).to_f64(), T::from_f64(low).to_f64());
    move |out| out.fill_with(|| T::from_f64(T::from_f64(rng.uniform()).to_f64() * mul + add))
}

/// The element count of a fresh buffer of `dims`, or `Error::ShapeOverflow` naming `op` when the count or the
/// buffer's bytes exceed `isize::MAX`. Shape-free and out of line: every shape's constructors share it.
#[inline(never)]
fn checked_numel<T: WithDType>(op: &'static str, dims: &Dims) -> Result<usize> {
    check_output::<T>(op, dims)?;
    Ok(dims.numel())
}

/// `Error::LengthMismatch` naming `op` unless `shape` holds exactly `found` elements.
fn check_len<T: WithDType, S: Shape>(op: &'static str, shape: S, found: usize) -> Result<()> {
    let expected = checked_numel::<T>(op, &shape.dims())?;
    if expected != found {
        return Err(Error::LengthMismatch {
            op,
            shape: shape.dims(),
            expected,
            found,
        });
    }
    Ok(())
}

impl<T: WithDType, S: ConstShape, D: Device> Tensor<T, S, D> {
    /// Every element `value`.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let t = Tensor::<u8, Rank2<2, 2>, Cpu>::full(7);
    /// assert_eq!(t.to_array(), [[7, 7], [7, 7]]);
    /// ```
    pub fn full(value: T) -> Self {
        Self::full_with_shape(S::default(), value)
    }
    /// All zeros.
    pub fn zeros() -> Self {
        Self::full(T::ZERO)
    }
    /// All ones.
    pub fn ones() -> Self {
        Self::full(T::ONE)
    }

    /// `0, 1, 2, ...` in row-major order (values past the dtype's range follow the cast rules).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let t: Tensor<f32, Rank2<2, 2>, Cpu> = Tensor::arange();
    /// assert_eq!(t.to_array(), [[0., 1.], [2., 3.]]);
    /// ```
    pub fn arange() -> Self {
        Self::filled_with("arange", S::default(), &mut fill_arange::<T>)
    }

    /// A tensor from a nested array; the shape is inferred from the array type.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let t = Tensor::<i64, _, Cpu>::from_array([[1, 2, 3], [4, 5, 6]]);
    /// let _: &Tensor<i64, Rank2<2, 3>, Cpu> = &t;
    /// ```
    pub fn from_array<A: NestedArray<T, Shape = S>>(array: A) -> Self {
        // An empty shape has nothing to copy.
        let flat: &[T] = if S::NUMEL == 0 {
            &[]
        } else {
            crate::dtype::cast_slice(core::slice::from_ref(&array))
        };
        device_ok(Self::from_slice_with_shape(S::default(), flat))
    }

    /// A tensor from a flat slice in row-major order; `Error::LengthMismatch` on a wrong length.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let err = Tensor::<f32, Rank2<2, 3>, Cpu>::from_slice(&[1.0; 5]).unwrap_err();
    /// assert_eq!(err.to_string(), "from_slice: shape [2, 3] needs 6 elements, found 5");
    /// ```
    pub fn from_slice(data: &[T]) -> Result<Self> {
        Self::from_slice_with_shape(S::default(), data)
    }

    /// A tensor from a vector in row-major order; `Error::LengthMismatch` on a wrong length.
    #[cfg(feature = "alloc")]
    pub fn from_vec(data: Vec<T>) -> Result<Self> {
        Self::from_vec_with_shape(S::default(), data)
    }

    /// The elements as the nested array of the shape: `[[T; 3]; 2]` for `Rank2<2, 3>`.
    pub fn try_to_array(&self) -> Result<S::Array<T>> {
        let mut out: S::Array<T> = crate::dtype::zeroed();
        if S::NUMEL > 0 {
            let flat = crate::dtype::cast_slice_mut(core::slice::from_mut(&mut out));
            D::read_into(self.buffer(), &self.layout(), flat)?;
        }
        Ok(out)
    }

    /// The elements as the nested array of the shape. Panics only if the device fails.
    pub fn to_array(&self) -> S::Array<T> {
        device_ok(self.try_to_array())
    }
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// A tensor of this one's shape (runtime dims included), every element `value` (PyTorch's `full_like`).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, (usize, Const<2>), Cpu>::zeros_with_shape((3, Const));
    /// assert_eq!(x.full_like(1.5).to_vec(), [1.5; 6]);
    /// assert_eq!(x.ones_like().dims(), x.dims());
    /// ```
    pub fn full_like(&self, value: T) -> Self {
        Self::full_with_shape(self.shape, value)
    }
    /// Zeros of this one's shape (PyTorch's `zeros_like`).
    pub fn zeros_like(&self) -> Self {
        self.full_like(T::ZERO)
    }
    /// Ones of this one's shape (PyTorch's `ones_like`).
    pub fn ones_like(&self) -> Self {
        self.full_like(T::ONE)
    }
}

impl<T: WithDType, const R: usize, const C: usize, D: Device> Tensor<T, (Const<R>, Const<C>), D> {
    /// Ones on the main diagonal, zeros elsewhere (PyTorch's `eye(R, C)`; square or not).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let i = Tensor::<f32, Rank2<2, 3>, Cpu>::eye();
    /// assert_eq!(i.to_array(), [[1., 0., 0.], [0., 1., 0.]]);
    /// ```
    pub fn eye() -> Self {
        Self::filled_with("eye", Default::default(), &mut |out: &mut [T]| {
            for (k, x) in out.iter_mut().enumerate() {
                *x = if k / C == k % C { T::ONE } else { T::ZERO };
            }
        })
    }
}

impl<T: WithDType, const N: usize, D: Device> Tensor<T, (Const<N>,), D> {
    /// `start, start + step, ..., start + (N - 1) step`, each computed in f64 and rounded to `T` (PyTorch's
    /// `arange(start, end, step)` with the length `N` in the type instead of `end`).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let t = Tensor::<f32, Rank1<4>, Cpu>::arange_step(1.0, 0.5);
    /// assert_eq!(t.to_array(), [1.0, 1.5, 2.0, 2.5]);
    /// ```
    pub fn arange_step(start: f64, step: f64) -> Self {
        Self::filled_with("arange_step", Default::default(), &mut |out: &mut [T]| {
            for (i, x) in out.iter_mut().enumerate() {
                *x = T::from_f64(start + i as f64 * step);
            }
        })
    }

    /// `N` values evenly spaced from `start` to `end`, both included (PyTorch's `linspace(start, end, N)`): the
    /// first half counted up from `start`, the second down from `end` (as PyTorch computes them), so both ends are
    /// exact; `[start]` when `N` is 1.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let t = Tensor::<f64, Rank1<5>, Cpu>::linspace(0.0, 1.0);
    /// assert_eq!(t.to_array(), [0.0, 0.25, 0.5, 0.75, 1.0]);
    /// ```
    pub fn linspace(start: f64, end: f64) -> Self {
        Self::filled_with("linspace", Default::default(), &mut |out: &mut [T]| {
            let step = if N > 1 {
                (end - start) / (N - 1) as f64
            } else {
                0.0
            };
            for (i, x) in out.iter_mut().enumerate() {
                let v = if i < N / 2 {
                    start + i as f64 * step
                } else {
                    end - (N - 1 - i) as f64 * step
                };
                *x = T::from_f64(if N == 1 { start } else { v });
            }
        })
    }
}

impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// [`Self::rand`] for a shape with runtime dims.
    pub fn rand_with_shape(shape: S, seed: u64) -> Self {
        Self::filled_with("rand", shape, &mut fill_rand::<T>(seed, SeededRng::uniform))
    }

    /// [`Self::uniform`] for a shape with runtime dims.
    pub fn uniform_with_shape(shape: S, low: f64, high: f64, seed: u64) -> Self {
        Self::filled_with("uniform", shape, &mut fill_uniform::<T>(seed, low, high))
    }
}

impl<T: FloatDType, S: ConstShape, D: Device> Tensor<T, S, D> {
    /// Uniform samples in `[0, 1)` from a seeded ChaCha8 stream (reproducible across platforms).
    pub fn rand(seed: u64) -> Self {
        Self::rand_with_shape(S::default(), seed)
    }

    /// Uniform samples in `[low, high)` (up to the rounding to `T`): [`Self::rand`]'s samples scaled and shifted,
    /// the same values as `Tensor::rand(seed).affine(high - low, low)` made in one pass (PyTorch's
    /// `uniform_(low, high)`; how the `nn` layers initialise their parameters).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let t = Tensor::<f32, Rank2<3, 4>, Cpu>::uniform(-0.5, 0.5, 7);
    /// assert!(t.to_vec().iter().all(|&x| (-0.5..0.5).contains(&x)));
    /// assert_eq!(t.to_vec(), Tensor::<f32, Rank2<3, 4>, Cpu>::rand(7).affine(1.0, -0.5).to_vec());
    /// ```
    pub fn uniform(low: f64, high: f64, seed: u64) -> Self {
        Self::uniform_with_shape(S::default(), low, high, seed)
    }

    /// Standard normal samples (Box-Muller over the seeded ChaCha8 stream of [`Self::rand`]).
    pub fn randn(seed: u64) -> Self {
        Self::filled_with(
            "randn",
            S::default(),
            &mut fill_rand::<T>(seed, SeededRng::normal),
        )
    }
}

impl<T: WithDType, D: Device> Tensor<T, (), D> {
    /// The value of a rank-0 tensor.
    pub fn to_scalar(&self) -> T {
        self.to_array()
    }
}

impl<T: WithDType, S: ConstShape> Tensor<T, S, Embedded> {
    /// A tensor holding `array`, in a `const` or `static` item: weights in the binary, at no run-time cost. The
    /// shape comes from the item's type (use [`Self::from_array`] to infer it from the array).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// static W: Tensor<f32, Rank2<2, 3>, Embedded> =
    ///     Tensor::from_array_const([[1., 0., -1.], [0.5, 0.5, 0.5]]);
    /// let x = Tensor::<f32, _, Embedded>::from_array([2., 4., 6.]);
    /// assert_eq!(W.matmul(&x).to_array(), [-4., 6.]);
    /// ```
    pub const fn from_array_const(array: S::Array<T>) -> Self {
        Tensor {
            storage: ArrayStorage::new(array),
            shape: S::SHAPE,
            view: Dense,
        }
    }

    /// The elements as the nested array of the shape, borrowed: no copy.
    pub const fn as_array(&self) -> &S::Array<T> {
        self.storage.array()
    }
}

/// Seeded random numbers for `rand`/`randn` (and the test suite).
pub(crate) struct SeededRng {
    rng: rand_chacha::ChaCha8Rng,
    spare: Option<f64>,
}

impl SeededRng {
    pub(crate) fn new(seed: u64) -> Self {
        use rand_core::SeedableRng;
        SeededRng {
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed),
            spare: None,
        }
    }
    /// Uniform in [0, 1) with 53 random bits.
    pub(crate) fn uniform(&mut self) -> f64 {
        use rand_core::RngCore;
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Standard normal (Box-Muller, both outputs used).
    pub(crate) fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let u1 = 1.0 - self.uniform(); // (0, 1]: ln is finite
        let u2 = self.uniform();
        let r = libm::sqrt(-2.0 * libm::log(u1));
        let theta = 2.0 * core::f64::consts::PI * u2;
        self.spare = Some(r * libm::sin(theta));
        r * libm::cos(theta)
    }
}
