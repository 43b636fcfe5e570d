//! Build-time size checks whose errors name the numbers: each function panics (in a `const` block, a build
//! error at the user's call) with the rule worked out on the user's sizes, "conv2d: output height
//! (32 + 2·1 − 3) / 2 + 1 = 16, but the output type says 15", so the message gives the number to write.
//! Stable Rust's `const` panics take only a literal; `const_panic` formats the integers.

use super::{numel_static_eq, static_numel, MAX_RANK};
use const_panic::FmtArg;
pub use const_panic::{concat_panic, PanicVal};

/// A shape's static dims (a runtime one as `None`) and its rank, as the checks read them.
pub type StaticShape = ([Option<usize>; MAX_RANK], usize);

/// `S`'s [`StaticShape`].
pub const fn of<S: super::Shape>() -> StaticShape {
    (S::STATIC_DIMS, S::RANK)
}

/// `S`'s dims as sizes, 0 for a runtime dim (the size rules that read them skip or never see one).
pub const fn static_dims<S: super::Shape>() -> [usize; MAX_RANK] {
    let mut out = [0; MAX_RANK];
    let mut i = 0;
    while i < S::RANK {
        if let Some(d) = S::STATIC_DIMS[i] {
            out[i] = d;
        }
        i += 1;
    }
    out
}

/// An integer in a message (here and for the callers of [`output_is`], [`fail`] and [`concat_panic`]).
pub const fn n(value: usize) -> PanicVal<'static> {
    PanicVal::from_usize(value, FmtArg::DISPLAY)
}

/// Text in a message.
pub const fn t(text: &str) -> PanicVal<'_> {
    PanicVal::write_str(text)
}

/// One axis of a sliding window (convolution, pooling, unfold): the input's size, the kernel, its placement and
/// rounding.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// The input's size along the axis.
    pub size: usize,
    /// Taps along the axis.
    pub kernel: usize,
    /// Step between windows.
    pub stride: usize,
    /// Zero padding before the input.
    pub before: usize,
    /// Zero padding after the input.
    pub after: usize,
    /// Spacing between taps.
    pub dilation: usize,
    /// Round the window count up (pooling's `ceil_mode`), less one when the last window would start in the
    /// trailing padding.
    pub ceil: bool,
}

impl Window {
    /// One axis of a geometry: its `[before, after]` padding, dilation and rounding.
    pub const fn along(
        size: usize,
        kernel: usize,
        stride: usize,
        [before, after]: [usize; 2],
        dilation: usize,
        ceil: bool,
    ) -> Self {
        Window {
            size,
            kernel,
            stride,
            before,
            after,
            dilation,
            ceil,
        }
    }

    /// The window's reach, `dilation (kernel - 1) + 1` (0 for an empty kernel).
    const fn span(&self) -> usize {
        if self.kernel == 0 {
            0
        } else {
            self.dilation * (self.kernel - 1) + 1
        }
    }

    /// The output size, `(size + before + after - span) / stride + 1` (rounded up in ceil mode), or `None`
    /// when the window is malformed or does not fit the padded input.
    pub const fn out(&self) -> Option<usize> {
        if self.kernel == 0 || self.stride == 0 || self.dilation == 0 {
            return None;
        }
        let padded = self.size + self.before + self.after;
        if padded < self.span() {
            return None;
        }
        let room = padded - self.span();
        let mut out = if self.ceil {
            room.div_ceil(self.stride)
        } else {
            room / self.stride
        } + 1;
        if self.ceil && (out - 1) * self.stride >= self.size + self.before {
            out -= 1;
        }
        Some(out)
    }

    /// The output size of the transposed window, `(size - 1) stride - before - after + span`, or `None` when
    /// the padding trims it to nothing (or the input or kernel is empty).
    pub const fn transposed_out(&self) -> Option<usize> {
        if self.size == 0 || self.kernel == 0 || self.stride == 0 || self.dilation == 0 {
            return None;
        }
        let full = (self.size - 1) * self.stride + self.span();
        if full <= self.before + self.after {
            return None;
        }
        Some(full - self.before - self.after)
    }

    /// The padding as it reads in a formula: `2·P` or `B + A`, behind a sign.
    const fn padding_terms(&self, sign: &'static str) -> [PanicVal<'static>; 4] {
        if self.before == self.after {
            [t(sign), t("2·"), n(self.before), t("")]
        } else {
            [t(sign), n(self.before), t(sign), n(self.after)]
        }
    }

    /// Panics unless the kernel, stride and dilation are positive and the kernel fits the padded input.
    const fn check_well_formed(&self, op: &str, axis: &str) {
        if self.kernel == 0 || self.stride == 0 || self.dilation == 0 {
            let message: &[&[PanicVal<'_>]] = &[&[
                t(op),
                t(": the "),
                t(axis),
                t(" window needs a kernel, stride and dilation of at least 1; it has kernel "),
                n(self.kernel),
                t(", stride "),
                n(self.stride),
                t(", dilation "),
                n(self.dilation),
            ]];
            concat_panic(message);
        }
    }
}

/// Panics unless `out` is the window arithmetic's output size along `axis` ("height", "width", ...).
pub const fn window_out(op: &str, axis: &str, w: Window, out: usize) {
    w.check_well_formed(op, axis);
    let padded = w.size + w.before + w.after;
    if padded < w.span() {
        let message: &[&[PanicVal<'_>]] = &[&[
            t(op),
            t(": the kernel spans "),
            n(w.span()),
            t(" along the "),
            t(axis),
            t(", more than the padded input's "),
            n(padded),
            t("; no window fits"),
        ]];
        concat_panic(message);
    }
    let Some(got) = w.out() else { return };
    if got == out {
        return;
    }
    let reach = if w.dilation == 1 {
        [t(" − "), n(w.kernel), t(""), t(""), t("")]
    } else {
        [
            t(" − "),
            n(w.dilation),
            t("·("),
            n(w.kernel),
            t(" − 1) − 1"),
        ]
    };
    let rounded = (padded - w.span()).div_ceil(w.stride) + 1;
    let (open, close) = match (w.ceil, rounded != got) {
        (false, _) => ("(", " + 1"),
        (true, false) => ("ceil((", ") + 1"),
        (true, true) => (
            "ceil((",
            ") + 1 − 1 (the last window would start in the trailing padding)",
        ),
    };
    let message: &[&[PanicVal<'_>]] = &[
        &[t(op), t(": output "), t(axis), t(" "), t(open)],
        &[n(w.size)],
        &w.padding_terms(" + "),
        &reach,
        &[t(") / "), n(w.stride), t(close)],
        &[t(" = "), n(got), t(", but the output type says "), n(out)],
    ];
    concat_panic(message);
}

/// Panics unless `out` is the transposed window's output size along `axis` plus `output_padding`, and the
/// output padding is below the stride or the dilation (PyTorch's rule).
pub const fn transposed_out(op: &str, axis: &str, w: Window, output_padding: usize, out: usize) {
    w.check_well_formed(op, axis);
    if output_padding >= w.stride && output_padding >= w.dilation {
        let message: &[&[PanicVal<'_>]] = &[&[
            t(op),
            t(": the output padding along the "),
            t(axis),
            t(" ("),
            n(output_padding),
            t(") must be smaller than the stride ("),
            n(w.stride),
            t(") or the dilation ("),
            n(w.dilation),
            t(")"),
        ]];
        concat_panic(message);
    }
    let Some(got) = w.transposed_out() else {
        let message: &[&[PanicVal<'_>]] = &[&[
            t(op),
            t(": the output "),
            t(axis),
            t(" would be empty: the input's "),
            n(w.size),
            t(" with a kernel spanning "),
            n(w.span()),
            t(" is trimmed by "),
            n(w.before + w.after),
            t(" of padding"),
        ]];
        concat_panic(message);
    };
    let got = got + output_padding;
    if got == out {
        return;
    }
    let reach = if w.dilation == 1 {
        [t(" + "), n(w.kernel), t(""), t(""), t("")]
    } else {
        [
            t(" + "),
            n(w.dilation),
            t("·("),
            n(w.kernel),
            t(" − 1) + 1"),
        ]
    };
    let extra = if output_padding > 0 {
        [t(" + "), n(output_padding)]
    } else {
        [t(""), t("")]
    };
    let message: &[&[PanicVal<'_>]] = &[
        &[t(op), t(": output "), t(axis), t(" (")],
        &[n(w.size), t(" − 1)·"), n(w.stride)],
        &w.padding_terms(" − "),
        &reach,
        &extra,
        &[t(" = "), n(got), t(", but the output type says "), n(out)],
    ];
    concat_panic(message);
}

/// Panics unless a convolution's channels agree with `groups`: `c_in = weight_in · groups` and `groups`
/// divides `c_out` (forward), or `groups` divides `c_in` and `c_out = weight_out · groups` (transposed, where
/// the weight holds output channels per group).
pub const fn conv_channels(
    op: &str,
    transposed: bool,
    groups: usize,
    c_in: usize,
    weight_channels: usize,
    c_out: usize,
) {
    if groups == 0 {
        let message: &[&[PanicVal<'_>]] = &[&[t(op), t(": GROUPS must be at least 1")]];
        concat_panic(message);
    }
    if !transposed && c_in != weight_channels * groups {
        let message: &[&[PanicVal<'_>]] = &[&[
            t(op),
            t(": the input has "),
            n(c_in),
            t(" channels, but the weight's second dim "),
            n(weight_channels),
            t(" · GROUPS "),
            n(groups),
            t(" = "),
            n(weight_channels * groups),
        ]];
        concat_panic(message);
    }
    if !transposed && c_out % groups != 0 {
        let message: &[&[PanicVal<'_>]] = &[&[
            t(op),
            t(": the weight's "),
            n(c_out),
            t(" output channels are not a multiple of GROUPS = "),
            n(groups),
        ]];
        concat_panic(message);
    }
    if transposed && c_in % groups != 0 {
        let message: &[&[PanicVal<'_>]] = &[&[
            t(op),
            t(": the input's "),
            n(c_in),
            t(" channels are not a multiple of GROUPS = "),
            n(groups),
        ]];
        concat_panic(message);
    }
    if transposed && c_out != weight_channels * groups {
        let message: &[&[PanicVal<'_>]] = &[&[
            t(op),
            t(": output channels "),
            n(weight_channels),
            t(" per group (the weight's second dim) · "),
            n(groups),
            t(" groups = "),
            n(weight_channels * groups),
            t(", but the output type says "),
            n(c_out),
        ]];
        concat_panic(message);
    }
}

/// A shape as it reads in a message, `[2, 3, usize]` (a runtime dim as `usize`), padded with empty text.
pub const fn shape(
    dims: [Option<usize>; MAX_RANK],
    rank: usize,
) -> [PanicVal<'static>; 2 * MAX_RANK + 1] {
    let mut out = [t(""); 2 * MAX_RANK + 1];
    out[0] = t("[");
    let mut i = 0;
    while i < rank {
        out[2 * i + 1] = match dims[i] {
            Some(d) => n(d),
            None => t("usize"),
        };
        out[2 * i + 2] = t(if i + 1 < rank { ", " } else { "]" });
        i += 1;
    }
    if rank == 0 {
        out[1] = t("]");
    }
    out
}

/// Panics unless two shapes' element counts agree where both are static (`reshape`).
pub const fn same_numel(op: &str, (from, from_rank): StaticShape, (to, to_rank): StaticShape) {
    let (a, b) = (static_numel(from), static_numel(to));
    if !numel_static_eq(a, b) {
        let (Some(a), Some(b)) = (a, b) else { return };
        let message: &[&[PanicVal<'_>]] = &[
            &[t(op), t(": the input ")],
            &shape(from, from_rank),
            &[t(" has "), n(a), t(" elements, the target ")],
            &shape(to, to_rank),
            &[t(" has "), n(b)],
        ];
        concat_panic(message);
    }
}

/// Panics unless a shape broadcasts to a target where both dims are static: aligned from the right, each of
/// its dims equal to the target's or 1.
pub const fn broadcast(op: &str, (src, src_rank): StaticShape, (dst, dst_rank): StaticShape) {
    if src_rank > dst_rank {
        let message: &[&[PanicVal<'_>]] = &[
            &[t(op), t(": the input ")],
            &shape(src, src_rank),
            &[t(" has more axes than the target ")],
            &shape(dst, dst_rank),
        ];
        concat_panic(message);
    }
    let mut i = 0;
    while i < src_rank {
        let (a, b) = (src_rank - 1 - i, dst_rank - 1 - i);
        if let (Some(s), Some(d)) = (src[a], dst[b])
            && s != d
            && s != 1
        {
            let message: &[&[PanicVal<'_>]] = &[
                &[t(op), t(": the input ")],
                &shape(src, src_rank),
                &[t(" does not broadcast to ")],
                &shape(dst, dst_rank),
                &[
                    t(": its axis "),
                    n(a),
                    t(" has "),
                    n(s),
                    t(", which must be the target's "),
                    n(d),
                    t(" or 1"),
                ],
            ];
            concat_panic(message);
        }
        i += 1;
    }
}

/// Panics unless `perm` lists each of the `rank` axes once.
pub const fn permutation(op: &str, perm: [usize; MAX_RANK], rank: usize) {
    if super::is_permutation(perm, rank) {
        return;
    }
    let mut dims = [None; MAX_RANK];
    let mut i = 0;
    while i < rank {
        dims[i] = Some(perm[i]);
        i += 1;
    }
    let message: &[&[PanicVal<'_>]] = &[
        &[
            t(op),
            t(": every axis must appear exactly once; the axes given are "),
        ],
        &shape(dims, rank),
    ];
    concat_panic(message);
}

/// Panics unless every input and output size of a resampling (interpolation, adaptive pooling) is at least 1.
pub const fn nonzero_sizes(op: &str, [h, w]: [usize; 2], [oh, ow]: [usize; 2]) {
    if h == 0 || w == 0 || oh == 0 || ow == 0 {
        let message: &[&[PanicVal<'_>]] = &[&[
            t(op),
            t(": every size must be at least 1; the input is "),
            n(h),
            t("×"),
            n(w),
            t(" and the output "),
            n(oh),
            t("×"),
            n(ow),
        ]];
        concat_panic(message);
    }
}

/// Panics unless `found == expected`, saying `"{op}: {what} {rule} = {expected}, but the output type says
/// {found}"`; `rule` shows the arithmetic on the user's numbers (built by the caller from `parts`).
pub const fn output_is(op: &str, what: &str, rule: &[PanicVal<'_>], expected: usize, found: usize) {
    if expected != found {
        let message: &[&[PanicVal<'_>]] = &[
            &[t(op), t(": "), t(what), t(" ")],
            rule,
            &[
                t(" = "),
                n(expected),
                t(", but the output type says "),
                n(found),
            ],
        ];
        concat_panic(message);
    }
}

/// Panics with `op: ` and the pieces.
pub const fn fail(op: &str, parts: &[PanicVal<'_>]) -> ! {
    let message: &[&[PanicVal<'_>]] = &[&[t(op), t(": ")], parts];
    concat_panic(message)
}
