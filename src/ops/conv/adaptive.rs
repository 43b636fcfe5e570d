//! Adaptive average pooling (PyTorch's `adaptive_avg_pool1d`/`2d`): the output size is in the type and each
//! output cell averages its bin of the input, bin `i` of `n -> out` spanning `[floor(i n / out),
//! ceil((i + 1) n / out))` (bins may overlap when `out` does not divide `n`). Averaging bins along an axis is a
//! product with a fixed `(n, out)` matrix of `1 / bin length` entries, so the op is one matrix product per
//! pooled axis: every device runs it with its matmul kernel (cuBLAS on `Cuda`), no heap is needed on
//! `Embedded`, and the gradient is the products'.

use crate::device::Device;
use crate::dtype::FloatDType;
use crate::shape::Rank2;
use crate::tensor::Tensor;

/// The `(N_IN, N_OUT)` matrix whose column `j` averages bin `j` of an axis of `N_IN` entries.
fn bin_means<T: FloatDType, D: Device, const N_IN: usize, const N_OUT: usize>(
) -> Tensor<T, Rank2<N_IN, N_OUT>, D> {
    let mut fill = |m: &mut [T]| {
        for (k, x) in m.iter_mut().enumerate() {
            let (i, j) = (k / N_OUT, k % N_OUT);
            let start = j * N_IN / N_OUT;
            let end = ((j + 1) * N_IN).div_ceil(N_OUT);
            *x = if (start..end).contains(&i) {
                T::from_f64(1.0 / (end - start) as f64)
            } else {
                T::ZERO
            };
        }
    };
    Tensor::filled_with("adaptive_avg_pool", Default::default(), &mut fill)
}

impl<T: FloatDType, const N: usize, const C: usize, const H: usize, const W: usize, D: Device>
    Tensor<T, crate::shape::Rank4<N, C, H, W>, D>
{
    /// Adaptive average pooling of `(N, C, H, W)` to `(N, C, OH, OW)` (see the module docs; `OH = OW = 1` is
    /// global average pooling). Both output sizes must be at least 1 when the input is not empty (a `const`
    /// assertion).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x: Tensor<f32, Rank4<1, 1, 3, 3>, Cpu> = Tensor::arange(); // 0..9
    /// let y: Tensor<f32, Rank4<1, 1, 2, 2>, Cpu> = x.adaptive_avg_pool2d();
    /// assert_eq!(y.to_vec(), [2., 3., 5., 6.]); // overlapping 2x2 bins
    /// ```
    pub fn adaptive_avg_pool2d<const OH: usize, const OW: usize>(
        &self,
    ) -> Tensor<T, crate::shape::Rank4<N, C, OH, OW>, D> {
        const {
            assert!(
                OH > 0 && OW > 0,
                "adaptive_avg_pool2d: the output sizes must be at least 1"
            )
        };
        let rows = bin_means::<T, D, H, OH>().t(); // (OH, H)
        rows.matmul(&self.matmul(&bin_means::<T, D, W, OW>()))
    }
}

impl<T: FloatDType, const N: usize, const C: usize, const L: usize, D: Device>
    Tensor<T, crate::shape::Rank3<N, C, L>, D>
{
    /// Adaptive average pooling of `(N, C, L)` to `(N, C, OL)` (see the module docs).
    pub fn adaptive_avg_pool1d<const OL: usize>(
        &self,
    ) -> Tensor<T, crate::shape::Rank3<N, C, OL>, D> {
        const {
            assert!(
                OL > 0,
                "adaptive_avg_pool1d: the output size must be at least 1"
            )
        };
        self.matmul(&bin_means::<T, D, L, OL>())
    }
}

#[cfg(feature = "std")]
mod traced {
    use super::*;
    use crate::autograd::Traced;
    use crate::shape::{Rank3, Rank4};

    impl<
            T: FloatDType,
            const N: usize,
            const C: usize,
            const H: usize,
            const W: usize,
            D: Device,
        > Traced<T, Rank4<N, C, H, W>, D>
    {
        /// Adaptive average pooling (see [`Tensor::adaptive_avg_pool2d`]); the gradient spreads each output's
        /// evenly over its bin.
        pub fn adaptive_avg_pool2d<const OH: usize, const OW: usize>(
            &self,
        ) -> Traced<T, Rank4<N, C, OH, OW>, D> {
            const {
                assert!(
                    OH > 0 && OW > 0,
                    "adaptive_avg_pool2d: the output sizes must be at least 1"
                )
            };
            let rows = Traced::constant(bin_means::<T, D, H, OH>().t());
            rows.matmul(&self.matmul(&bin_means::<T, D, W, OW>()))
        }
    }

    impl<T: FloatDType, const N: usize, const C: usize, const L: usize, D: Device>
        Traced<T, Rank3<N, C, L>, D>
    {
        /// Adaptive average pooling (see [`Tensor::adaptive_avg_pool1d`]).
        pub fn adaptive_avg_pool1d<const OL: usize>(&self) -> Traced<T, Rank3<N, C, OL>, D> {
            const {
                assert!(
                    OL > 0,
                    "adaptive_avg_pool1d: the output size must be at least 1"
                )
            };
            self.matmul(&bin_means::<T, D, L, OL>())
        }
    }
}
