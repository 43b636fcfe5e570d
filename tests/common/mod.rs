//! Shared test helpers: seeded random data, strided views with their expected contents computed independently,
//! tolerances per dtype, and the macro that runs one generic test body on every device.
#![allow(dead_code)]

use typed_tensor::prelude::*;

/// xorshift64*: deterministic data without depending on the crate under test.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    pub fn vec(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}

pub const M: usize = 5;
pub const N: usize = 7;
pub type Mat = Rank2<M, N>;

/// A (5, 7) view of each kind, with its logical elements (row-major) computed by hand.
pub struct View<T: WithDType, D: Device> {
    pub kind: &'static str,
    pub tensor: Tensor<T, Mat, D>,
    pub expected: Vec<T>,
}

/// Contiguous, transposed, narrowed and broadcast (5, 7) views of values drawn from [lo, hi).
pub fn views<T: WithDType, D: Device>(seed: u64, lo: f64, hi: f64) -> Vec<View<T, D>> {
    let mut rng = Rng::new(seed);
    let mut draw =
        |n: usize| -> Vec<T> { rng.vec(n, lo, hi).into_iter().map(T::from_f64).collect() };

    let dense = draw(M * N);
    let contiguous = Tensor::<T, Mat, D>::from_vec(dense.clone()).unwrap();

    // A (7, 5) buffer viewed transposed: element (i, j) is src[j][i].
    let src_t = draw(N * M);
    let transposed = Tensor::<T, Rank2<N, M>, D>::from_vec(src_t.clone())
        .unwrap()
        .t();
    let exp_t = (0..M * N).map(|k| src_t[(k % N) * M + k / N]).collect();

    // A (5, 10) buffer narrowed to columns 2..9: element (i, j) is src[i][j + 2].
    let src_n = draw(M * 10);
    let narrowed = Tensor::<T, Rank2<M, 10>, D>::from_vec(src_n.clone())
        .unwrap()
        .narrow::<Axis<1>, 2, N>();
    let exp_n = (0..M * N)
        .map(|k| src_n[(k / N) * 10 + k % N + 2])
        .collect();

    // A (7,) row repeated 5 times (stride 0).
    let src_b = draw(N);
    let broadcast = Tensor::<T, Rank1<N>, D>::from_vec(src_b.clone())
        .unwrap()
        .broadcast::<Mat>();
    let exp_b = (0..M * N).map(|k| src_b[k % N]).collect();

    vec![
        View {
            kind: "contiguous",
            tensor: contiguous,
            expected: dense,
        },
        View {
            kind: "transposed",
            tensor: transposed,
            expected: exp_t,
        },
        View {
            kind: "narrowed",
            tensor: narrowed,
            expected: exp_n,
        },
        View {
            kind: "broadcast",
            tensor: broadcast,
            expected: exp_b,
        },
    ]
}

/// Whether `D`'s views share their tensor's buffer (strided views: `Cpu`, `Cuda`) or are dense copies
/// (`Embedded`).
pub fn views_share<D: Device>() -> bool {
    use typed_tensor::device::Kernels;
    use typed_tensor::layout::ViewOf;
    !<<D as Kernels>::View<Rank0> as ViewOf<Rank0>>::DENSE
}

/// Relative tolerance for results computed in (or rounded to) `T`: a couple of ulps.
pub fn tolerance<T: WithDType>() -> f64 {
    match T::DTYPE {
        DType::F16 => 2e-3,
        DType::BF16 => 1.6e-2,
        DType::F32 => 1e-6,
        DType::F64 => 1e-13,
        _ => 0.0,
    }
}

/// Asserts `got` matches `want` elementwise within the dtype's tolerance (NaN matches NaN).
pub fn assert_close<T: WithDType>(what: &str, got: &[T], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let tol = tolerance::<T>();
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.to_f64();
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w.is_infinite() {
            g == *w
        } else {
            (g - w).abs() <= tol * w.abs().max(1e-3) + tol * 1e-3
        };
        assert!(
            ok,
            "{what} [{}]: element {i}: got {g}, want {w} (tol {tol})",
            T::DTYPE
        );
    }
}

/// A tensor of uniform values in [-1, 1) from `seed`.
pub fn random<T: FloatDType, S: ConstShape, D: Device>(seed: u64) -> Tensor<T, S, D> {
    let values = Rng::new(seed).vec(S::NUMEL, -1.0, 1.0);
    Tensor::from_vec(values.into_iter().map(T::from_f64).collect()).unwrap()
}

/// The message `f` panics with (it must panic).
#[allow(dead_code)] // not every test binary checks panics
pub fn panic_message<R>(f: impl FnOnce() -> R) -> String {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(_) => panic!("expected a panic"),
        Err(payload) => match payload.downcast::<String>() {
            Ok(message) => *message,
            Err(payload) => payload
                .downcast_ref::<&str>()
                .expect("a panic message")
                .to_string(),
        },
    }
}

/// Asserts `|got - want| <= tol * (1 + |want|)` elementwise (sums of many products: matmul, conv).
pub fn assert_within<T: WithDType>(what: &str, got: &[T], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.to_f64();
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what} [{}] element {i}: got {g}, want {w}",
            T::DTYPE
        );
    }
}

/// Runs `$body::<D>()` as one test per device: `Cpu` always, `Cuda` with the `cuda` feature when a GPU is there
/// (otherwise the test prints why it skipped).
#[macro_export]
macro_rules! device_tests {
    ($($name:ident => $body:ident;)*) => {
        mod cpu {
            $(
                #[test]
                fn $name() {
                    super::$body::<typed_tensor::device::Cpu>();
                }
            )*
        }
        #[cfg(feature = "cuda")]
        mod cuda {
            use typed_tensor::device::Cuda;
            $(
                #[test]
                fn $name() {
                    if let Err(e) = Cuda::init() {
                        eprintln!("skipped {} on cuda: {e}", stringify!($name));
                        return;
                    }
                    super::$body::<Cuda>();
                }
            )*
        }
    };
}

/// Runs `$body::<Embedded>()` as one test each, for the generic bodies whose shapes are all static (the embedded
/// device has no runtime dims). Its tensors are arrays held by value, and the test build is unoptimised (opt-level
/// 0 gives every temporary its own stack slot), so each body runs on a thread with [`EMBEDDED_STACK`] bytes.
#[macro_export]
macro_rules! embedded_tests {
    ($($name:ident => $body:ident;)*) => {
        mod embedded {
            $(
                #[test]
                fn $name() {
                    $crate::common::on_stack(
                        $crate::common::EMBEDDED_STACK,
                        super::$body::<typed_tensor::device::Embedded>,
                    );
                }
            )*
        }
    };
}

/// The stack of an embedded-device test thread: the largest body needs about 8 MiB unoptimised.
#[allow(dead_code)] // not every test binary runs embedded bodies
pub const EMBEDDED_STACK: usize = 32 << 20;

/// Runs `f` on a new thread with `bytes` of stack and returns its result; a panic in `f` is the caller's panic.
#[allow(dead_code)] // not every test binary needs it
pub fn on_stack<R: Send + 'static>(bytes: usize, f: impl FnOnce() -> R + Send + 'static) -> R {
    let worker = std::thread::Builder::new().stack_size(bytes).spawn(f);
    match worker.expect("spawn a test thread").join() {
        Ok(r) => r,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// The message `f` panics with and the file and line the panic reports (its `#[track_caller]` location).
#[allow(dead_code)] // not every test binary checks panics
pub fn panic_location<R>(f: impl FnOnce() -> R) -> (String, String, u32) {
    use std::cell::RefCell;
    thread_local! {
        static LAST: RefCell<Option<(String, u32)>> = const { RefCell::new(None) };
    }
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(at) = info.location() {
                LAST.with(|last| *last.borrow_mut() = Some((at.file().to_owned(), at.line())));
            }
            previous(info);
        }));
    });
    let message = panic_message(f);
    let (file, line) = LAST
        .with(|last| last.borrow_mut().take())
        .expect("the panic hook saw a location");
    (message, file, line)
}

/// `f` applied to every lane along `axis` of row-major `values` with `dims` (each lane in order), the results
/// written back in place: the reference of the lane ops (softmax, the norms, the scans).
#[allow(dead_code)] // not every test binary checks lane ops
pub fn per_lane(
    values: &[f64],
    dims: &[usize],
    axis: usize,
    f: impl Fn(&[f64]) -> Vec<f64>,
) -> Vec<f64> {
    let stride: usize = dims[axis + 1..].iter().product();
    let n = dims[axis];
    let mut out = vec![0.0; values.len()];
    for start in 0..values.len() {
        if !(start / stride).is_multiple_of(n) {
            continue; // not the first element of its lane
        }
        let lane: Vec<f64> = (0..n).map(|i| values[start + i * stride]).collect();
        for (i, v) in f(&lane).into_iter().enumerate() {
            out[start + i * stride] = v;
        }
    }
    out
}
