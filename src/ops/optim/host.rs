//! Fused optimizer updates on host memory (`Cpu` and `Embedded`): one pass over the parameter, its moments and
//! its gradient instead of a dozen tensor ops (each a pass and an allocation).

use super::{AdamStep, OptimKernels};
use crate::device::host::elementwise::{simd, DenseLoop};
use crate::dtype::{Accumulator, FloatDType};
use crate::error::{Error, Result};
use crate::layout::Layout;

/// `OptimKernels::adam_step` on host memory: the gradient must be dense (the tensor layer makes it so).
pub(crate) fn adam_step<T: FloatDType>(
    w: &mut [T],
    m: &mut [T],
    v: &mut [T],
    (g, lg): (&[T], &Layout),
    step: AdamStep,
) -> Result<()> {
    let range = lg.contiguous_range().ok_or(Error::Unsupported {
        op: "adam_step of a strided gradient",
        dtype: T::DTYPE,
        device: "host",
    })?;
    let n = range.len();
    adam(&mut w[..n], &mut m[..n], &mut v[..n], &g[range], step);
    Ok(())
}

/// [`AdamStep`] over dense slices of one length, computed in the accumulator type (f32 for f16/bf16/f32), in the
/// CPU's widest vector clone (the square root and division dominate; IEEE-exact in every clone).
pub(crate) fn adam<T: FloatDType>(w: &mut [T], m: &mut [T], v: &mut [T], g: &[T], s: AdamStep) {
    simd(Adam { w, m, v, g, s })
}

struct Adam<'a, T> {
    w: &'a mut [T],
    m: &'a mut [T],
    v: &'a mut [T],
    g: &'a [T],
    s: AdamStep,
}

impl<T: FloatDType> DenseLoop for Adam<'_, T> {
    #[inline(always)]
    fn run(self) {
        let Adam { w, m, v, g, s } = self;
        adam_loop(w, m, v, g, s)
    }
}

#[inline(always)]
fn adam_loop<T: FloatDType>(w: &mut [T], m: &mut [T], v: &mut [T], g: &[T], s: AdamStep) {
    let c = |x: f64| T::Acc::from_f64(x);
    let (lr_t, b1, b2, eps, l2, keep) = (
        c(s.lr_t),
        c(s.beta1),
        c(s.beta2),
        c(s.eps),
        c(s.l2),
        c(s.keep),
    );
    let (one_b1, one_b2, inv_bc2) = (c(1.0 - s.beta1), c(1.0 - s.beta2), c(1.0 / s.bc2));
    for (((w, m), v), &g) in w.iter_mut().zip(m.iter_mut()).zip(v.iter_mut()).zip(g) {
        let wa = w.to_acc();
        let g = g.to_acc().add(l2.mul(wa));
        let ma = b1.mul(m.to_acc()).add(one_b1.mul(g));
        let va = b2.mul(v.to_acc()).add(one_b2.mul(g.mul(g)));
        let denom = va.mul(inv_bc2).sqrt().add(eps);
        *w = T::from_acc(keep.mul(wa).sub(lr_t.mul(ma).div(denom)));
        *m = T::from_acc(ma);
        *v = T::from_acc(va);
    }
}

macro_rules! host_optim_kernels {
    ($device:ty) => {
        // SAFETY: the update writes initialised values into buffers that already hold them.
        unsafe impl OptimKernels for $device {
            #[inline]
            fn adam_step<T: FloatDType>(
                w: &mut [T],
                m: &mut [T],
                v: &mut [T],
                grad: (&[T], &Layout),
                step: AdamStep,
            ) -> Result<()> {
                adam_step(w, m, v, grad, step)
            }
        }
    };
}

host_optim_kernels!(crate::device::Embedded);
#[cfg(feature = "alloc")]
host_optim_kernels!(crate::device::Cpu);
