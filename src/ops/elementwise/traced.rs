//! Elementwise ops: arithmetic with suffix broadcasting (a broadcast operand's gradient is summed back to its
//! shape), scalars, and the differentiable unary functions.

use crate::autograd::{record_with, Gradients, Slot, Traceable, Traced};
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::ops::{self, CmpOp};
use crate::shape::{BroadcastShapes, Shape};
use crate::tensor::{padded_shape, Grad, Padded, Tensor};

/// The gradients of a broadcast binary op at the output's dims (see [`Traced::broadcast_binary`]): from the
/// output's gradient `g`, which inputs want one, the operands `a` and `b` expanded to the output's dims, and the
/// output.
type BinaryGrads<T, D> =
    fn(&Grad<T, D>, [bool; 2], &Grad<T, D>, &Grad<T, D>, &Grad<T, D>) -> [Option<Grad<T, D>>; 2];

/// What a broadcast binary op's rule keeps: the inputs' slots, the operands and the output (padded), and the
/// op's gradients.
type BinaryCaptured<T, D> = ([Slot; 2], [Grad<T, D>; 3], BinaryGrads<T, D>);

/// The backward rule of every broadcast binary op: the gradients at the output's dims, each summed back to its
/// operand's dims. Compiled once per element type and device.
fn broadcast_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    ([sa, sb], [a, b, out], grads): BinaryCaptured<T, D>,
    store: &mut Gradients,
) {
    let shape = g.shape();
    let (ea, eb) = (a.expand_to(shape), b.expand_to(shape));
    let [ga, gb] = grads(&g, [sa.wanted(), sb.wanted()], &ea, &eb, &out);
    if let Some(ga) = ga {
        sa.give_padded(store, ga.sum_to(a.shape()));
    }
    if let Some(gb) = gb {
        sb.give_padded(store, gb.sum_to(b.shape()));
    }
}

/// What `+` and `-` keep for their backward rule: the inputs' slots, the operands' padded shapes and whether `b`'s
/// gradient is negated. Their gradients are the output's, summed back to each operand's shape, so no value is held
/// until the backward pass.
type SumCaptured = ([Slot; 2], [Padded; 2], bool);

/// The backward rule of `+` and `-`.
fn sum_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    ([sa, sb], [pa, pb], negate_b): SumCaptured,
    store: &mut Gradients,
) {
    if sa.wanted() {
        sa.give_padded(store, g.sum_to(pa));
    }
    if sb.wanted() {
        // Negated after the sum: the same values (negation is exact), one pass over the smaller tensor.
        let gb = g.sum_to(pb);
        sb.give_padded(store, if negate_b { gb.unary(ops::Neg) } else { gb });
    }
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// `self + rhs` or, `negate_b`, `self - rhs`, already computed as `value`: recorded with [`sum_rule`].
    fn sum_binary<S2: Shape>(
        &self,
        rhs: &Traced<T, S2, D>,
        value: Tensor<T, <S as BroadcastShapes<S2>>::Output, D>,
        negate_b: bool,
    ) -> Traced<T, <S as BroadcastShapes<S2>>::Output, D>
    where
        S: BroadcastShapes<S2>,
    {
        let shapes = [
            padded_shape(&self.value.dims()),
            padded_shape(&rhs.value.dims()),
        ];
        let captured = ([self.slot(), rhs.slot()], shapes, negate_b);
        record_with(value, &[&self.node, &rhs.node], captured, sum_rule::<T, D>)
    }

    /// `op(self, rhs)` with suffix broadcasting; `grads(g, wanted, a, b, out)` gives the gradients of `a` and `b`
    /// at the output's shape (each computed only if wanted), which are then summed back to the operands' shapes.
    /// `grads` is a `fn` generic over the element type and device only, so the rule is compiled once for every
    /// shape.
    fn broadcast_binary<S2: Shape>(
        &self,
        rhs: &Traced<T, S2, D>,
        value: Tensor<T, <S as BroadcastShapes<S2>>::Output, D>,
        grads: BinaryGrads<T, D>,
    ) -> Traced<T, <S as BroadcastShapes<S2>>::Output, D>
    where
        S: BroadcastShapes<S2>,
    {
        let saved = [self.value.padded(), rhs.value.padded(), value.padded()];
        let captured = ([self.slot(), rhs.slot()], saved, grads);
        record_with(
            value,
            &[&self.node, &rhs.node],
            captured,
            broadcast_rule::<T, D>,
        )
    }

    /// `self + rhs` (the method behind `+`).
    #[track_caller]
    pub fn add<R>(&self, rhs: &R) -> Traced<T, <S as BroadcastShapes<R::Shape>>::Output, D>
    where
        R: Traceable<Elem = T, Device = D>,
        S: BroadcastShapes<R::Shape>,
    {
        let rhs = rhs.traced();
        let value = &self.value + &rhs.value;
        self.sum_binary(&rhs, value, false)
    }

    /// `self - rhs`.
    #[track_caller]
    pub fn sub<R>(&self, rhs: &R) -> Traced<T, <S as BroadcastShapes<R::Shape>>::Output, D>
    where
        R: Traceable<Elem = T, Device = D>,
        S: BroadcastShapes<R::Shape>,
    {
        let rhs = rhs.traced();
        let value = &self.value - &rhs.value;
        self.sum_binary(&rhs, value, true)
    }

    /// `self * rhs`.
    #[track_caller]
    pub fn mul<R>(&self, rhs: &R) -> Traced<T, <S as BroadcastShapes<R::Shape>>::Output, D>
    where
        R: Traceable<Elem = T, Device = D>,
        S: BroadcastShapes<R::Shape>,
    {
        fn grads<T: FloatDType, D: Device>(
            g: &Grad<T, D>,
            [wa, wb]: [bool; 2],
            a: &Grad<T, D>,
            b: &Grad<T, D>,
            _: &Grad<T, D>,
        ) -> [Option<Grad<T, D>>; 2] {
            [
                wa.then(|| g.zip_same(ops::Mul, b)),
                wb.then(|| g.zip_same(ops::Mul, a)),
            ]
        }
        let rhs = rhs.traced();
        let value = &self.value * &rhs.value;
        self.broadcast_binary(&rhs, value, grads::<T, D>)
    }

    /// `self / rhs`.
    #[track_caller]
    pub fn div<R>(&self, rhs: &R) -> Traced<T, <S as BroadcastShapes<R::Shape>>::Output, D>
    where
        R: Traceable<Elem = T, Device = D>,
        S: BroadcastShapes<R::Shape>,
    {
        fn grads<T: FloatDType, D: Device>(
            g: &Grad<T, D>,
            [wa, wb]: [bool; 2],
            _: &Grad<T, D>,
            b: &Grad<T, D>,
            out: &Grad<T, D>,
        ) -> [Option<Grad<T, D>>; 2] {
            let ga = g.zip_same(ops::Div, b);
            // d(a / b)/db = -(a / b) / b = -out / b.
            let gb = wb.then(|| ga.zip_same(ops::Mul, out).unary(ops::Neg));
            [wa.then_some(ga), gb]
        }
        let rhs = rhs.traced();
        let value = &self.value / &rhs.value;
        self.broadcast_binary(&rhs, value, grads::<T, D>)
    }

    /// The elementwise maximum; where both are equal each gets half the gradient (as PyTorch does).
    #[track_caller]
    pub fn maximum<R>(&self, rhs: &R) -> Traced<T, <S as BroadcastShapes<R::Shape>>::Output, D>
    where
        R: Traceable<Elem = T, Device = D>,
        S: BroadcastShapes<R::Shape>,
    {
        let rhs = rhs.traced();
        let value = self.value.maximum(&rhs.value);
        self.broadcast_binary(&rhs, value, max_gradients::<T, D>)
    }

    /// The elementwise minimum; ties split the gradient.
    #[track_caller]
    pub fn minimum<R>(&self, rhs: &R) -> Traced<T, <S as BroadcastShapes<R::Shape>>::Output, D>
    where
        R: Traceable<Elem = T, Device = D>,
        S: BroadcastShapes<R::Shape>,
    {
        let rhs = rhs.traced();
        let value = self.value.minimum(&rhs.value);
        self.broadcast_binary(&rhs, value, min_gradients::<T, D>)
    }
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// Every element clamped between tensors of bounds (see [`Tensor::clamp_tensor`]): the gradient flows to
    /// `self` inside the bounds and to the bound that holds outside them (split in half at a tie, as `maximum`
    /// and `minimum` split it).
    #[track_caller]
    pub fn clamp_tensor<R1, R2>(&self, lo: &R1, hi: &R2) -> Self
    where
        R1: Traceable<Elem = T, Device = D>,
        R2: Traceable<Elem = T, Device = D>,
        S: BroadcastShapes<R1::Shape, Output = S> + BroadcastShapes<R2::Shape, Output = S>,
    {
        self.maximum(lo).minimum(hi)
    }
}

macro_rules! traced_float_binary {
    ($($(#[$m:meta])* $name:ident => $grads:ident;)*) => {
        impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
            $(
                $(#[$m])*
                #[track_caller]
                pub fn $name<R>(&self, rhs: &R) -> Traced<T, <S as BroadcastShapes<R::Shape>>::Output, D>
                where
                    R: Traceable<Elem = T, Device = D>,
                    S: BroadcastShapes<R::Shape>,
                {
                    let rhs = rhs.traced();
                    let value = self.value.$name(&rhs.value);
                    self.broadcast_binary(&rhs, value, $grads::<T, D>)
                }
            )*
        }
    };
}
traced_float_binary! {
    /// `atan2(self, rhs)`: gradients `b / (a^2 + b^2)` and `-a / (a^2 + b^2)`.
    atan2 => atan2_gradients;
    /// `self ^ rhs`: gradients `b a^(b - 1)` and `a^b ln a` (0 where `a` is 0, as PyTorch).
    pow => pow_gradients;
    /// C's remainder: gradients `1` and `-trunc(a / b)` (as PyTorch's `fmod`).
    fmod => fmod_gradients;
    /// Python's remainder: gradients `1` and `-floor(a / b)` (as PyTorch's `remainder`).
    remainder => remainder_gradients;
}

fn atan2_gradients<T: FloatDType, D: Device>(
    g: &Grad<T, D>,
    [wa, wb]: [bool; 2],
    a: &Grad<T, D>,
    b: &Grad<T, D>,
    _: &Grad<T, D>,
) -> [Option<Grad<T, D>>; 2] {
    let scale = g.zip_same(ops::Div, &a.sqr().zip_same(ops::Add, &b.sqr()));
    [
        wa.then(|| scale.zip_same(ops::Mul, b)),
        wb.then(|| scale.zip_same(ops::Mul, a).unary(ops::Neg)),
    ]
}

fn pow_gradients<T: FloatDType, D: Device>(
    g: &Grad<T, D>,
    [wa, wb]: [bool; 2],
    a: &Grad<T, D>,
    b: &Grad<T, D>,
    out: &Grad<T, D>,
) -> [Option<Grad<T, D>>; 2] {
    let ga = wa.then(|| {
        let d = a
            .zip_same(ops::Pow, &b.affine(1.0, -1.0))
            .zip_same(ops::Mul, b);
        g.zip_same(ops::Mul, &d)
    });
    let gb = wb.then(|| {
        // ln a with the zeros of `a` read as 1: their term is then `out * 0 = 0`.
        let zeros = a.mask_scalar(CmpOp::Eq, T::ZERO);
        let log = a.zip_same(ops::Add, &zeros).ln();
        g.zip_same(ops::Mul, &out.zip_same(ops::Mul, &log))
    });
    [ga, gb]
}

fn fmod_gradients<T: FloatDType, D: Device>(
    g: &Grad<T, D>,
    w: [bool; 2],
    a: &Grad<T, D>,
    b: &Grad<T, D>,
    _: &Grad<T, D>,
) -> [Option<Grad<T, D>>; 2] {
    quotient_gradients(g, w, a, b, |q| q.trunc())
}

fn remainder_gradients<T: FloatDType, D: Device>(
    g: &Grad<T, D>,
    w: [bool; 2],
    a: &Grad<T, D>,
    b: &Grad<T, D>,
    _: &Grad<T, D>,
) -> [Option<Grad<T, D>>; 2] {
    quotient_gradients(g, w, a, b, |q| q.floor())
}

/// Gradients of `a - round(a / b) b`: `g` for `a`, `-round(a / b) g` for `b`.
fn quotient_gradients<T: FloatDType, D: Device>(
    g: &Grad<T, D>,
    [wa, wb]: [bool; 2],
    a: &Grad<T, D>,
    b: &Grad<T, D>,
    round: fn(&Grad<T, D>) -> Grad<T, D>,
) -> [Option<Grad<T, D>>; 2] {
    let gb = wb.then(|| {
        let q = round(&a.zip_same(ops::Div, b));
        g.zip_same(ops::Mul, &q).unary(ops::Neg)
    });
    [wa.then(|| g.clone()), gb]
}

/// Gradients of max: `a` gets `g` where `a > b`, `b` where `b > a`, both half on ties.
fn max_gradients<T: FloatDType, D: Device>(
    g: &Grad<T, D>,
    w: [bool; 2],
    a: &Grad<T, D>,
    b: &Grad<T, D>,
    _: &Grad<T, D>,
) -> [Option<Grad<T, D>>; 2] {
    pick_gradients(g, w, a, b, CmpOp::Gt)
}

/// Gradients of min: as [`max_gradients`] with `<`.
fn min_gradients<T: FloatDType, D: Device>(
    g: &Grad<T, D>,
    w: [bool; 2],
    a: &Grad<T, D>,
    b: &Grad<T, D>,
    _: &Grad<T, D>,
) -> [Option<Grad<T, D>>; 2] {
    pick_gradients(g, w, a, b, CmpOp::Lt)
}

/// Gradients of max/min: `a` gets `g` where `wins(a, b)`, `b` where `wins(b, a)`, both half on ties.
fn pick_gradients<T: FloatDType, D: Device>(
    g: &Grad<T, D>,
    [wa, wb]: [bool; 2],
    a: &Grad<T, D>,
    b: &Grad<T, D>,
    wins: CmpOp,
) -> [Option<Grad<T, D>>; 2] {
    let half_tie = a.mask_same(CmpOp::Eq, b).affine(0.5, 0.0);
    let weight = |x: &Grad<T, D>, y: &Grad<T, D>| {
        g.zip_same(
            ops::Mul,
            &x.mask_same(wins, y).zip_same(ops::Add, &half_tie),
        )
    };
    [wa.then(|| weight(a, b)), wb.then(|| weight(b, a))]
}

/// The gradient of an op with a scalar operand `c` (and of `neg`): `g`, `-g`, `g c` or `g / c`.
#[derive(Clone, Copy)]
enum ScalarGrad {
    Pass,
    Negate,
    Times,
    Over,
}

fn scalar_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, route, c): (Slot, ScalarGrad, T),
    store: &mut Gradients,
) {
    slot.give_padded_with(store, || match route {
        ScalarGrad::Pass => g,
        ScalarGrad::Negate => -&g,
        ScalarGrad::Times => &g * c,
        ScalarGrad::Over => &g / c,
    });
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// `-x`.
    pub fn neg(&self) -> Self {
        self.scalar_op(-&self.value, ScalarGrad::Negate, T::ZERO)
    }

    /// Records `value`, an op of this value and the scalar `c`, whose gradient takes `route`.
    fn scalar_op(&self, value: Tensor<T, S, D>, route: ScalarGrad, c: T) -> Self {
        record_with(
            value,
            &[&self.node],
            (self.slot(), route, c),
            scalar_rule::<T, D>,
        )
    }
}

// `std::ops` between traced values, parameters and plain tensors: a traced value on the left, any operand on the
// right, borrowed or owned.
macro_rules! traced_binop {
    ($tr:ident, $method:ident) => {
        traced_binop!(@impl $tr, $method, &Traced<T, S2, D>);
        traced_binop!(@impl $tr, $method, Traced<T, S2, D>);
        traced_binop!(@impl $tr, $method, &crate::autograd::Var<T, S2, D>);
        traced_binop!(@impl $tr, $method, &Tensor<T, S2, D>);
    };
    (@impl $tr:ident, $method:ident, $rhs:ty) => {
        impl<T: FloatDType, S: Shape + BroadcastShapes<S2>, S2: Shape, D: Device> core::ops::$tr<$rhs>
            for &Traced<T, S, D>
        {
            type Output = Traced<T, <S as BroadcastShapes<S2>>::Output, D>;
            #[track_caller]
            fn $method(self, rhs: $rhs) -> Self::Output {
                Traced::$method(self, &rhs)
            }
        }
        impl<T: FloatDType, S: Shape + BroadcastShapes<S2>, S2: Shape, D: Device> core::ops::$tr<$rhs>
            for Traced<T, S, D>
        {
            type Output = Traced<T, <S as BroadcastShapes<S2>>::Output, D>;
            #[track_caller]
            fn $method(self, rhs: $rhs) -> Self::Output {
                Traced::$method(&self, &rhs)
            }
        }
    };
}
traced_binop!(Add, add);
traced_binop!(Sub, sub);
traced_binop!(Mul, mul);
traced_binop!(Div, div);

// A scalar of the element type on the right.
macro_rules! traced_scalar_op {
    ($($tr:ident $method:ident => $route:ident;)*) => {$(
        impl<T: FloatDType, S: Shape, D: Device> core::ops::$tr<T> for &Traced<T, S, D> {
            type Output = Traced<T, S, D>;
            fn $method(self, c: T) -> Self::Output {
                let value = core::ops::$tr::$method(&self.value, c);
                self.scalar_op(value, ScalarGrad::$route, c)
            }
        }
        impl<T: FloatDType, S: Shape, D: Device> core::ops::$tr<T> for Traced<T, S, D> {
            type Output = Traced<T, S, D>;
            fn $method(self, c: T) -> Self::Output {
                core::ops::$tr::$method(&self, c)
            }
        }
    )*};
}
traced_scalar_op! {
    Add add => Pass;
    Sub sub => Pass;
    Mul mul => Times;
    Div div => Over;
}

impl<T: FloatDType, S: Shape, D: Device> core::ops::Neg for &Traced<T, S, D> {
    type Output = Traced<T, S, D>;
    fn neg(self) -> Self::Output {
        Traced::neg(self)
    }
}
impl<T: FloatDType, S: Shape, D: Device> core::ops::Neg for Traced<T, S, D> {
    type Output = Traced<T, S, D>;
    fn neg(self) -> Self::Output {
        Traced::neg(&self)
    }
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// `on_true` where `mask` is non-zero, `on_false` elsewhere; each side's gradient is the output's where it
    /// was picked.
    #[track_caller]
    pub fn where_cond<R>(mask: &Tensor<u8, S, D>, on_true: &Self, on_false: &R) -> Self
    where
        R: Traceable<Elem = T, Shape = S, Device = D>,
    {
        let on_false = on_false.traced();
        let value = mask.where_cond(&on_true.value, &on_false.value);
        fn rule<T: FloatDType, D: Device>(
            g: Grad<T, D>,
            ([st, sf], picked): ([Slot; 2], Grad<T, D>),
            store: &mut Gradients,
        ) {
            st.give_padded_with(store, || g.zip_same(ops::Mul, &picked));
            sf.give_padded_with(store, || g.zip_same(ops::Mul, &picked.affine(-1.0, 1.0)));
        }
        let picked = mask
            .to_dtype::<T>()
            .mask_scalar(CmpOp::Ne, T::ZERO)
            .padded();
        let captured = ([on_true.slot(), on_false.slot()], picked);
        record_with(
            value,
            &[&on_true.node, &on_false.node],
            captured,
            rule::<T, D>,
        )
    }
}
