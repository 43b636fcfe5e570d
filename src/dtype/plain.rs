//! Plain bytes: the element types and the arrays of them, seen as bytes and as one another without copying.
//!
//! The casts go through `zerocopy`, which `half` already depends on for `f16` and `bf16`. (bytemuck would need
//! half's `bytemuck` feature for those two, and that feature compiles `syn` and `bytemuck_derive` into every
//! user's build: about 2 s of a cold build on two cores.)

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// A `Copy` type without padding for which every bit pattern is a value: every element type ([`WithDType`]),
/// every accumulator ([`Accumulator`]) and every (nested) array of them. A buffer of it can be seen as bytes,
/// or as a buffer of another plain type, without copying.
///
/// Implemented for every type with zerocopy's `FromBytes`, `IntoBytes`, `Immutable` and `KnownLayout`.
///
/// [`WithDType`]: super::WithDType
/// [`Accumulator`]: super::Accumulator
pub trait Plain:
    FromBytes + IntoBytes + Immutable + KnownLayout + Copy + Send + Sync + 'static
{
}

impl<T: FromBytes + IntoBytes + Immutable + KnownLayout + Copy + Send + Sync + 'static> Plain
    for T
{
}

/// `a`'s bytes as a slice of `B` (a `[T; N]` as its elements, an inline buffer's words as its elements). Panics
/// if the bytes do not fit `B` (misaligned, or a length that is not a whole number of `B`): a bug at the call
/// site, as every caller casts between types whose sizes and alignments it knows to fit.
#[inline(always)]
pub(crate) fn cast_slice<A: Plain, B: Plain>(a: &[A]) -> &[B] {
    match <[B]>::ref_from_bytes(a.as_bytes()) {
        Ok(b) => b,
        Err(_) => cast_failed::<A, B>(),
    }
}

/// [`cast_slice`] for a mutable slice.
#[inline(always)]
pub(crate) fn cast_slice_mut<A: Plain, B: Plain>(a: &mut [A]) -> &mut [B] {
    match <[B]>::mut_from_bytes(a.as_mut_bytes()) {
        Ok(b) => b,
        Err(_) => cast_failed::<A, B>(),
    }
}

/// A value whose bytes are all zero (0 and 0.0 for every element type).
#[inline(always)]
pub(crate) fn zeroed<T: Plain>() -> T {
    T::new_zeroed()
}

#[cold]
#[inline(never)]
fn cast_failed<A, B>() -> ! {
    panic!(
        "typed-tensor internal error: a slice of {} does not fit {}",
        core::any::type_name::<A>(),
        core::any::type_name::<B>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    #[test]
    fn casts_keep_the_bytes() {
        let words = [0x3c00_4000_3c00_4000u64, 0];
        let halves: &[f16] = cast_slice(&words);
        assert_eq!(halves.len(), 8);
        assert_eq!(halves[0], f16::from_f32(2.0));
        assert_eq!(halves[1], f16::from_f32(1.0));
        let nested = [[1.0f32, 2.0], [3.0, 4.0]];
        assert_eq!(
            cast_slice::<[[f32; 2]; 2], f32>(core::slice::from_ref(&nested)),
            [1.0, 2.0, 3.0, 4.0]
        );
        let mut buf = [0u64; 1];
        cast_slice_mut::<u64, bf16>(&mut buf)[3] = bf16::ONE;
        assert_eq!(buf[0], 0x3f80 << 48);
        assert_eq!(zeroed::<[[f64; 3]; 2]>(), [[0.0; 3]; 2]);
        assert!(cast_slice::<[f32; 0], f32>(&[[], []]).is_empty());
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn a_partial_element_is_refused() {
        let bytes = [0u8; 3];
        let _: &[u16] = cast_slice(&bytes);
    }
}
