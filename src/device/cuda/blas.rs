//! Matrix products through cuBLAS (`cublasGemmStridedBatchedEx`), opened at run time.
//!
//! The library is loaded on the first product, not at link time: the `cuda` feature builds and runs on a machine
//! without cuBLAS, where every product takes the PTX kernels of `src/ops/matmul/matmul.cu`. `TYPED_TENSOR_CUBLAS` names the
//! library file to open (`off` keeps cuBLAS out); by default the loader tries `libcublas.so.13`, `.12`, `.11` and
//! `libcublas.so` on the library path.
//!
//! cuBLAS is column-major and we are row-major, so `C = A B` is asked for as `Cᵀ = Bᵀ Aᵀ`: a row-major operand
//! with unit column stride is its own transpose in column-major terms (`N`, leading dimension = row stride), and a
//! transposed view (unit row stride) is passed as `T` with its column stride: neither is copied. Layouts it cannot
//! take (two non-unit strides, a broadcast row, sizes past `i32`) go to the kernels.

use super::kernels::GemmDims;
use super::{cuda_err, state};
use crate::dtype::{DType, FloatDType};
use crate::error::{Error, Result};
use alloc::format;
use alloc::string::{String, ToString};
use core::cell::Cell;
use core::ffi::{c_int, c_longlong, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// Which implementation runs the CUDA matrix products (matmul, and the products inside the convolutions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatmulBackend {
    /// cuBLAS, for every product whose layouts it can take and that has at least 2^20 multiply-adds (the
    /// default); the kernels for the others (where cuBLAS's per-call host time would dominate) and when cuBLAS
    /// is not installed.
    Cublas,
    /// The library's own PTX kernels (`src/ops/matmul/matmul.cu`; tensor cores for f16, and bf16 on Ampere and newer).
    Kernels,
}

std::thread_local! {
    static PREFERRED: Cell<MatmulBackend> = const { Cell::new(MatmulBackend::Cublas) };
    static LAST: Cell<Option<MatmulBackend>> = const { Cell::new(None) };
}

static ALLOW_TF32: AtomicBool = AtomicBool::new(false);

/// Runs `f` with this thread's products preferring `backend` (see [`crate::device::Cuda::with_matmul_backend`]).
pub(crate) fn with_backend<R>(backend: MatmulBackend, f: impl FnOnce() -> R) -> R {
    struct Restore(MatmulBackend);
    impl Drop for Restore {
        fn drop(&mut self) {
            PREFERRED.with(|p| p.set(self.0));
        }
    }
    let _restore = Restore(PREFERRED.with(|p| p.replace(backend)));
    f()
}

/// The backend that ran this thread's last product.
pub(crate) fn last_backend() -> Option<MatmulBackend> {
    LAST.with(Cell::get)
}

/// Records which backend ran a product on this thread.
pub(crate) fn ran_on(backend: MatmulBackend) {
    LAST.with(|l| l.set(Some(backend)));
}

pub(crate) fn set_allow_tf32(allow: bool) {
    ALLOW_TF32.store(allow, Ordering::Relaxed);
}

pub(crate) fn allow_tf32() -> bool {
    ALLOW_TF32.load(Ordering::Relaxed)
}

// The few cuBLAS values this file uses (cublas_api.h and library_types.h; stable since CUDA 11).
const CUBLAS_STATUS_SUCCESS: c_int = 0;
const CUBLAS_OP_N: c_int = 0;
const CUBLAS_OP_T: c_int = 1;
const CUBLAS_GEMM_DEFAULT: c_int = -1;
const CUBLAS_COMPUTE_32F: c_int = 68;
const CUBLAS_COMPUTE_32F_FAST_TF32: c_int = 77;
const CUBLAS_COMPUTE_64F: c_int = 70;
const CUDA_R_32F: c_int = 0;
const CUDA_R_64F: c_int = 1;
const CUDA_R_16F: c_int = 2;
const CUDA_R_16BF: c_int = 14;

type Handle = *mut c_void;
type CreateFn = unsafe extern "C" fn(*mut Handle) -> c_int;
type VersionFn = unsafe extern "C" fn(Handle, *mut c_int) -> c_int;
type SetStreamFn = unsafe extern "C" fn(Handle, *mut c_void) -> c_int;
#[allow(clippy::type_complexity)]
type GemmFn = unsafe extern "C" fn(
    Handle,
    c_int,         // transa
    c_int,         // transb
    c_int,         // m
    c_int,         // n
    c_int,         // k
    *const c_void, // alpha
    *const c_void, // A
    c_int,         // Atype
    c_int,         // lda
    c_longlong,    // strideA
    *const c_void, // B
    c_int,         // Btype
    c_int,         // ldb
    c_longlong,    // strideB
    *const c_void, // beta
    *mut c_void,   // C
    c_int,         // Ctype
    c_int,         // ldc
    c_longlong,    // strideC
    c_int,         // batchCount
    c_int,         // computeType
    c_int,         // algo
) -> c_int;

/// The opened library and one handle on the device's stream.
struct Blas {
    handle: Handle,
    gemm: GemmFn,
    version: u32,
    /// Keeps the functions above loaded; never unloaded (the handle lives as long as the process, like the
    /// context).
    _lib: libloading::Library,
}

// SAFETY: the handle is only used under the `Mutex` below, one call at a time, and cuBLAS handles may move
// between threads that use the same device.
unsafe impl Send for Blas {}

static BLAS: OnceLock<core::result::Result<Mutex<Blas>, String>> = OnceLock::new();

fn candidates() -> core::result::Result<alloc::vec::Vec<String>, String> {
    match std::env::var("TYPED_TENSOR_CUBLAS") {
        Ok(v) if v == "off" || v == "0" => {
            Err("cuBLAS is turned off (TYPED_TENSOR_CUBLAS=off)".into())
        }
        Ok(path) if !path.is_empty() => Ok(alloc::vec![path]),
        _ => Ok(if cfg!(windows) {
            ["cublas64_13.dll", "cublas64_12.dll", "cublas64_11.dll"]
                .map(String::from)
                .to_vec()
        } else {
            [
                "libcublas.so.13",
                "libcublas.so.12",
                "libcublas.so.11",
                "libcublas.so",
            ]
            .map(String::from)
            .to_vec()
        }),
    }
}

fn open() -> core::result::Result<Mutex<Blas>, String> {
    let names = candidates()?;
    let mut tried = alloc::vec::Vec::new();
    let lib = names
        .iter()
        .find_map(|name| {
            // SAFETY: loading cuBLAS runs its initialisers, which only set up the library's own state.
            match unsafe { libloading::Library::new(name) } {
                Ok(lib) => Some(lib),
                Err(e) => {
                    tried.push(format!("{name}: {e}"));
                    None
                }
            }
        })
        .ok_or_else(|| format!("cuBLAS not found ({})", tried.join("; ")))?;
    let missing = |e: libloading::Error| format!("cuBLAS lacks a function: {e}");
    // SAFETY: each symbol is looked up by its C name and given the signature cublas_api.h declares for it.
    let (create, version, set_stream, gemm) = unsafe {
        (
            *lib.get::<CreateFn>(b"cublasCreate_v2\0").map_err(missing)?,
            *lib.get::<VersionFn>(b"cublasGetVersion_v2\0")
                .map_err(missing)?,
            *lib.get::<SetStreamFn>(b"cublasSetStream_v2\0")
                .map_err(missing)?,
            *lib.get::<GemmFn>(b"cublasGemmStridedBatchedEx\0")
                .map_err(missing)?,
        )
    };
    let st = state("cublas").map_err(|e| e.to_string())?;
    let status = |what: &str, code: c_int| {
        if code == CUBLAS_STATUS_SUCCESS {
            Ok(())
        } else {
            Err(format!("{what} failed with cuBLAS status {code}"))
        }
    };
    let mut handle: Handle = core::ptr::null_mut();
    // SAFETY: the device's context is current (`state` made it so); the calls write one handle and one integer
    // to our locals, and the stream is the device's, which lives as long as the process.
    let v = unsafe {
        status("cublasCreate", create(&mut handle))?;
        status(
            "cublasSetStream",
            set_stream(handle, st.stream.as_inner() as *mut c_void),
        )?;
        let mut v: c_int = 0;
        status("cublasGetVersion", version(handle, &mut v))?;
        v
    };
    Ok(Mutex::new(Blas {
        handle,
        gemm,
        version: v as u32,
        _lib: lib,
    }))
}

fn blas() -> core::result::Result<&'static Mutex<Blas>, &'static str> {
    BLAS.get_or_init(open).as_ref().map_err(String::as_str)
}

/// cuBLAS's version number (major * 10000 + minor * 100 + patch), or why it is not used.
pub(crate) fn version() -> Result<u32> {
    state("cublas")?;
    let blas = blas().map_err(|why| Error::Cuda {
        op: "cublas",
        message: why.into(),
    })?;
    Ok(blas.lock().unwrap_or_else(|e| e.into_inner()).version)
}

/// How cuBLAS reads one row-major strided operand `P` (`rows` x `cols`) so that it sees `Pᵀ` in column-major
/// terms: transposed or not, and the leading dimension. `None` when no such description exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Operand {
    pub trans: bool,
    pub ld: u64,
}

pub(crate) fn operand(rows: u64, cols: u64, row_stride: u64, col_stride: u64) -> Option<Operand> {
    // A size-1 axis's stride is never followed, so it does not constrain the choice.
    if col_stride == 1 || cols == 1 {
        // Pᵀ is `cols` x `rows` column-major with columns `row_stride` apart.
        let ld = if rows == 1 { cols.max(1) } else { row_stride };
        if ld >= cols.max(1) {
            return Some(Operand { trans: false, ld });
        }
    }
    if row_stride == 1 || rows == 1 {
        // P itself is `rows` x `cols` column-major with columns `col_stride` apart; cuBLAS transposes it.
        let ld = if cols == 1 { rows.max(1) } else { col_stride };
        if ld >= rows.max(1) {
            return Some(Operand { trans: true, ld });
        }
    }
    None
}

/// The arguments of one `cublasGemmStridedBatchedEx` call computing `C = A B` (as `Cᵀ = Bᵀ Aᵀ`), or `None` when
/// cuBLAS cannot take these layouts or sizes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Call {
    pub trans_b: bool,
    pub trans_a: bool,
    pub m: c_int,
    pub n: c_int,
    pub k: c_int,
    pub ldb: c_int,
    pub lda: c_int,
    pub ldc: c_int,
    pub stride_b: c_longlong,
    pub stride_a: c_longlong,
    pub stride_c: c_longlong,
    pub batch: c_int,
}

/// Products of fewer multiply-adds stay with the kernels: cuBLAS spends 12-19 us of host time per call on the H100
/// machine against the kernels' 4-5 us, more than such a product's GPU time (a (32, 64) x (64, 64) product is
/// host-bound on either path; a 256^3 one runs in 24 us through cuBLAS, 37 us through the kernels).
/// Measured in benches/cuda.rs (`small matmul` lines).
pub(crate) const MIN_MULTIPLY_ADDS: u64 = 1 << 20;

/// The cuBLAS call for the product `d` (`Cᵀ = Bᵀ Aᵀ` in its column-major terms), or `None` when it cannot read
/// the layouts in place or the product has fewer than `min_work` multiply-adds (those stay with the kernels).
/// Outside a CUDA graph capture `min_work` is [`MIN_MULTIPLY_ADDS`]; inside one it is 1, since cuBLAS's host time
/// is then paid once, and only its GPU time is replayed.
pub(crate) fn plan_from(d: &GemmDims, min_work: u64) -> Option<Call> {
    // Empty products and K = 0 (a zero-filled output) stay with the kernels, and so do small ones.
    let work = [d.m, d.n, d.k]
        .iter()
        .fold(d.batch, |w, &x| w.saturating_mul(x));
    if work < min_work.max(1) {
        return None;
    }
    let a = operand(d.m, d.k, d.a[1], d.a[2])?;
    let b = operand(d.k, d.n, d.b[1], d.b[2])?;
    let ldc = if d.m == 1 { d.n } else { d.c[1] };
    if ldc < d.n {
        return None;
    }
    let int = |v: u64| c_int::try_from(v).ok();
    let long = |v: u64| c_longlong::try_from(v).ok();
    Some(Call {
        trans_b: b.trans,
        trans_a: a.trans,
        m: int(d.n)?,
        n: int(d.m)?,
        k: int(d.k)?,
        ldb: int(b.ld)?,
        lda: int(a.ld)?,
        ldc: int(ldc)?,
        stride_b: long(d.b[0])?,
        stride_a: long(d.a[0])?,
        stride_c: long(d.c[0])?,
        batch: int(d.batch)?,
    })
}

/// Runs the product through cuBLAS when this thread prefers it, the library is loaded and the layouts allow;
/// `Ok(false)` leaves it to the kernels.
pub(crate) fn try_gemm<T: FloatDType>(
    op: &'static str,
    dims: &GemmDims,
    a: u64,
    b: u64,
    c: u64,
) -> Result<bool> {
    if PREFERRED.with(Cell::get) != MatmulBackend::Cublas {
        return Ok(false);
    }
    let min_work = if super::graph::capturing() {
        1
    } else {
        MIN_MULTIPLY_ADDS
    };
    let Some(call) = plan_from(dims, min_work) else {
        return Ok(false);
    };
    let Ok(blas) = blas() else {
        return Ok(false);
    };
    let (dtype, compute) = match T::DTYPE {
        DType::F16 => (CUDA_R_16F, CUBLAS_COMPUTE_32F),
        DType::BF16 => (CUDA_R_16BF, CUBLAS_COMPUTE_32F),
        DType::F32 if allow_tf32() => (CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32),
        DType::F32 => (CUDA_R_32F, CUBLAS_COMPUTE_32F),
        DType::F64 => (CUDA_R_64F, CUBLAS_COMPUTE_64F),
        _ => return Ok(false),
    };
    // alpha = 1, beta = 0 in the compute type (f32 for every 32F compute type, f64 for 64F).
    let (one32, zero32, one64, zero64) = (1f32, 0f32, 1f64, 0f64);
    let (alpha, beta): (*const c_void, *const c_void) = if compute == CUBLAS_COMPUTE_64F {
        (&one64 as *const f64 as _, &zero64 as *const f64 as _)
    } else {
        (&one32 as *const f32 as _, &zero32 as *const f32 as _)
    };
    let op_of = |t: bool| if t { CUBLAS_OP_T } else { CUBLAS_OP_N };
    state(op)?;
    let gate = super::graph::launch_gate(op)?;
    let blas = blas.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: the handle was created on this context and runs on the device's stream; `plan` checked that each
    // operand's description (transpose, leading dimension, batch stride) addresses exactly the elements the
    // strided layouts behind `a`, `b` and `c` address, which lie inside their buffers, and that every size fits
    // cuBLAS's integers. alpha and beta point at locals of the compute type that live across the call.
    let code = unsafe {
        (blas.gemm)(
            blas.handle,
            op_of(call.trans_b),
            op_of(call.trans_a),
            call.m,
            call.n,
            call.k,
            alpha,
            b as *const c_void,
            dtype,
            call.ldb,
            call.stride_b,
            a as *const c_void,
            dtype,
            call.lda,
            call.stride_a,
            beta,
            c as *mut c_void,
            dtype,
            call.ldc,
            call.stride_c,
            call.batch,
            compute,
            CUBLAS_GEMM_DEFAULT,
        )
    };
    drop((blas, gate));
    if code != CUBLAS_STATUS_SUCCESS {
        return Err(cuda_err(
            op,
            format!("cublasGemmStridedBatchedEx failed with cuBLAS status {code}"),
        ));
    }
    ran_on(MatmulBackend::Cublas);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(d: &GemmDims) -> Option<Call> {
        plan_from(d, MIN_MULTIPLY_ADDS)
    }

    /// A batch of 2^20 products: every test shape below passes the size threshold.
    fn dims(m: u64, k: u64, n: u64, a: [u64; 3], b: [u64; 3]) -> GemmDims {
        GemmDims {
            batch: 1 << 20,
            m,
            n,
            k,
            a,
            b,
            c: [m * n, n],
        }
    }

    #[test]
    fn row_major_operands_are_their_own_transpose() {
        // (3, 4) x (4, 5), contiguous: Cᵀ (5 x 3) = Bᵀ (5 x 4, ld 5) Aᵀ (4 x 3, ld 4).
        let call = plan(&dims(3, 4, 5, [12, 4, 1], [20, 5, 1])).unwrap();
        assert_eq!(
            call,
            Call {
                trans_b: false,
                trans_a: false,
                m: 5,
                n: 3,
                k: 4,
                ldb: 5,
                lda: 4,
                ldc: 5,
                stride_b: 20,
                stride_a: 12,
                stride_c: 15,
                batch: 1 << 20,
            }
        );
    }

    #[test]
    fn transposed_views_are_passed_transposed_not_copied() {
        // A = Xᵀ for a (4, 3) buffer X: strides (1, 3). B = Yᵀ for a (5, 4) buffer Y: strides (1, 4).
        let call = plan(&dims(3, 4, 5, [12, 1, 3], [20, 1, 4])).unwrap();
        assert_eq!((call.trans_a, call.lda), (true, 3));
        assert_eq!((call.trans_b, call.ldb), (true, 4));
        // A narrowed (K = 4 of 10 columns): leading dimension 10, and a broadcast batch (stride 0) passes.
        let call = plan(&dims(3, 4, 5, [0, 10, 1], [20, 5, 1])).unwrap();
        assert_eq!((call.trans_a, call.lda, call.stride_a), (false, 10, 0));
    }

    #[test]
    fn layouts_cublas_cannot_express_go_to_the_kernels() {
        // Two non-unit strides (every other column), a broadcast row, an empty K.
        assert_eq!(plan(&dims(3, 4, 5, [24, 8, 2], [20, 5, 1])), None);
        assert_eq!(plan(&dims(3, 4, 5, [0, 0, 1], [20, 5, 1])), None);
        assert_eq!(plan(&dims(3, 0, 5, [0, 0, 1], [0, 5, 1])), None);
        // Sizes past cuBLAS's 32-bit integers.
        assert_eq!(plan(&dims(1 << 31, 4, 5, [0, 4, 1], [20, 5, 1])), None);
    }

    #[test]
    fn small_products_stay_with_the_kernels() {
        let mut d = dims(64, 128, 128, [0, 128, 1], [0, 128, 1]);
        d.batch = 1; // 2^20 multiply-adds: the smallest cuBLAS takes
        assert!(plan(&d).is_some());
        d.m = 63;
        assert_eq!(plan(&d), None);
        assert!(plan_from(&d, 1).is_some(), "inside a capture");
        d.k = 0;
        assert_eq!(plan_from(&d, 1), None, "an empty K stays with the kernels");
    }

    #[test]
    fn size_one_axes_ignore_their_strides() {
        // A row vector (1, K) with any row stride, a column (K, 1) with any column stride.
        assert_eq!(
            operand(1, 7, 0, 1),
            Some(Operand {
                trans: false,
                ld: 7
            })
        );
        assert_eq!(
            operand(7, 1, 3, 99),
            Some(Operand {
                trans: false,
                ld: 3
            })
        );
        assert_eq!(
            operand(7, 1, 1, 0),
            Some(Operand {
                trans: false,
                ld: 1
            })
        );
        // A row whose elements are one broadcast value (column stride 0) has no description.
        assert_eq!(operand(1, 7, 5, 0), None);
        assert_eq!(
            operand(1, 1, 0, 0),
            Some(Operand {
                trans: false,
                ld: 1
            })
        );
    }
}
