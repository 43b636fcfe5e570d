//! Saving and loading parameters in the safetensors format: round trips for every float dtype and every integer
//! buffer dtype, and each kind of mismatch named.

use typed_tensor::autograd::Var;
use typed_tensor::io::{from_bytes, load, save, to_bytes, SafetensorsError};
use typed_tensor::nn::{Conv2d, Flatten, LayerNorm, Linear, MaxPool2d, ReLU};
use typed_tensor::prelude::*;

type Cnn = (
    Conv2d<f32, 1, 2, 3, 4, 4, Cpu, 1, 1>,
    ReLU,
    MaxPool2d<2, 2, 0, 2, 2>,
    Flatten<8>,
    Linear<f32, 8, 3, Cpu>,
);

fn cnn(seed: u64) -> Cnn {
    (
        Conv2d::new(seed),
        ReLU,
        MaxPool2d,
        Flatten,
        Linear::new(seed + 1),
    )
}

#[test]
fn round_trip_through_a_file() {
    let model = cnn(1);
    let path = std::env::temp_dir().join(format!(
        "typed-tensor-io-{}.safetensors",
        std::process::id()
    ));
    save(&model, &path).unwrap();
    let fresh = cnn(99);
    assert_ne!(
        fresh.0.weight.value().to_vec(),
        model.0.weight.value().to_vec()
    );
    load(&fresh, &path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        fresh.0.weight.value().to_vec(),
        model.0.weight.value().to_vec()
    );
    assert_eq!(fresh.0.bias.value().to_vec(), model.0.bias.value().to_vec());
    assert_eq!(
        fresh.4.weight.value().to_vec(),
        model.4.weight.value().to_vec()
    );
    assert_eq!(fresh.4.bias.value().to_vec(), model.4.bias.value().to_vec());
}

/// A model built with `zeros()` (no seed) is all zeros until a checkpoint is loaded into it, and then computes
/// what the saved model does; the same for an embedding table.
#[test]
fn zeros_models_load_checkpoints() {
    use typed_tensor::nn::{Embedding, Module};
    let model = cnn(3);
    let blank: Cnn = (Conv2d::zeros(), ReLU, MaxPool2d, Flatten, Linear::zeros());
    let x = Tensor::<f32, Rank4<2, 1, 4, 4>, Cpu>::randn(4);
    assert!(blank.forward(x.clone()).to_vec().iter().all(|&v| v == 0.0));
    from_bytes(&blank, &to_bytes(&model).unwrap()).unwrap();
    assert_eq!(blank.forward(x.clone()).to_vec(), model.forward(x).to_vec());
    let table = Embedding::<f32, 5, 3, Cpu>::new(7);
    let empty = Embedding::<f32, 5, 3, Cpu>::zeros();
    assert!(empty.weight.value().to_vec().iter().all(|&v| v == 0.0));
    from_bytes(&empty, &to_bytes(&table).unwrap()).unwrap();
    assert_eq!(empty.weight.value().to_vec(), table.weight.value().to_vec());
}

/// A depthwise layer's weight has PyTorch's shape `(C, 1, K, K)`: it round-trips, and a dense `(C, C, K, K)`
/// checkpoint is refused, naming the shapes.
#[test]
fn grouped_conv_weights_have_pytorchs_shape() {
    type Depthwise = Conv2d<f32, 4, 4, 3, 8, 8, Cpu, 1, 1, 1, 4, 1>;
    let trained = Depthwise::new(1);
    let fresh = Depthwise::zeros();
    from_bytes(&fresh, &to_bytes(&trained).unwrap()).unwrap();
    assert_eq!(
        fresh.weight.value().to_vec(),
        trained.weight.value().to_vec()
    );
    let dense = Conv2d::<f32, 4, 4, 3, 8, 8, Cpu, 1, 1>::new(2);
    let err = from_bytes(&fresh, &to_bytes(&dense).unwrap()).unwrap_err();
    assert!(
        err.to_string().contains("[4, 4, 3, 3]") && err.to_string().contains("[4, 1, 3, 3]"),
        "{err}"
    );
}

/// A layer without a bias saves and loads its weight alone, as PyTorch's `bias=False` layers do; a file with a
/// bias does not load into it, and a file without one does not load into a layer that has one.
#[test]
fn layers_without_bias_round_trip() {
    use typed_tensor::nn::NoBias;
    let trained = Linear::<f32, 3, 2, Cpu, NoBias>::new(1);
    let bytes = to_bytes(&trained).unwrap();
    let fresh = Linear::<f32, 3, 2, Cpu, NoBias>::zeros();
    from_bytes(&fresh, &bytes).unwrap();
    assert_eq!(
        fresh.weight.value().to_vec(),
        trained.weight.value().to_vec()
    );
    let with_bias = Linear::<f32, 3, 2, Cpu>::zeros();
    let err = from_bytes(&with_bias, &bytes).unwrap_err().to_string();
    assert!(err.contains("bias"), "{err}");
    let err = from_bytes(
        &fresh,
        &to_bytes(&Linear::<f32, 3, 2, Cpu>::new(2)).unwrap(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("bias"), "{err}");
}

#[test]
fn every_float_dtype_round_trips_bit_exactly() {
    let params = (
        Var::new(Tensor::<f16, _, Cpu>::from_array([
            f16::from_f32(1.5),
            f16::NEG_INFINITY,
        ])),
        Var::new(Tensor::<bf16, _, Cpu>::from_array([
            [bf16::from_f32(-2.0)],
            [bf16::MIN_POSITIVE],
        ])),
        Var::new(Tensor::<f32, Rank0, Cpu>::full(f32::NAN)),
        Var::new(Tensor::<f64, Rank1<3>, Cpu>::from_array([
            1e-300, -0.0, 3.0,
        ])),
    );
    let bytes = to_bytes(&params).unwrap();
    let fresh = (
        Var::new(Tensor::<f16, Rank1<2>, Cpu>::zeros()),
        Var::new(Tensor::<bf16, Rank2<2, 1>, Cpu>::zeros()),
        Var::new(Tensor::<f32, Rank0, Cpu>::zeros()),
        Var::new(Tensor::<f64, Rank1<3>, Cpu>::zeros()),
    );
    from_bytes(&fresh, &bytes).unwrap();
    let bits16 = |v: Vec<f16>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits16(fresh.0.value().to_vec()),
        bits16(params.0.value().to_vec())
    );
    assert_eq!(
        fresh
            .1
            .value()
            .to_vec()
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<_>>(),
        params
            .1
            .value()
            .to_vec()
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<_>>()
    );
    assert!(fresh.2.value().to_scalar().is_nan());
    assert_eq!(
        fresh
            .3
            .value()
            .to_vec()
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<_>>(),
        params
            .3
            .value()
            .to_vec()
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<_>>()
    );
}

#[test]
fn mismatches_are_named() {
    let bytes = to_bytes(&cnn(1)).unwrap();

    // Another dtype.
    let wide = (
        Conv2d::<f64, 1, 2, 3, 4, 4, Cpu, 1, 1>::new(0),
        ReLU,
        MaxPool2d::<2, 2, 0, 2, 2>,
        Flatten::<8>,
        Linear::<f64, 8, 3, Cpu>::new(0),
    );
    let err = from_bytes(&wide, &bytes).unwrap_err();
    assert!(
        matches!(err, SafetensorsError::DType { ref name, .. } if name == "0.weight"),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "load: `0.weight` is stored as F32, the model declares F64"
    );

    // Another shape.
    let other = (
        Conv2d::<f32, 1, 2, 3, 4, 4, Cpu, 1, 1>::new(0),
        ReLU,
        MaxPool2d::<2, 2, 0, 2, 2>,
        Flatten::<8>,
        Linear::<f32, 8, 5, Cpu>::new(0),
    );
    let err = from_bytes(&other, &bytes).unwrap_err();
    assert_eq!(
        err.to_string(),
        "load: `4.weight` is stored with shape [3, 8], the model declares [5, 8]"
    );

    // A parameter the file lacks, and tensors the model lacks.
    let bigger = (cnn(0), LayerNorm::<f32, 3, Cpu>::new(1e-5));
    let err = from_bytes(&bigger, &bytes).unwrap_err();
    assert!(
        matches!(err, SafetensorsError::Missing { ref name } if name == "0.0.weight"),
        "{err}"
    );
    let smaller = Linear::<f32, 8, 3, Cpu>::new(0);
    let err = from_bytes(&(ReLU, ReLU, ReLU, ReLU, smaller), &bytes).unwrap_err();
    assert_eq!(
        err.to_string(),
        "load: the file has tensors the model does not declare: [\"0.bias\", \"0.weight\"]"
    );

    // Not a safetensors file, and no file.
    assert!(matches!(
        from_bytes(&cnn(0), b"not safetensors"),
        Err(SafetensorsError::Format { op: "load", .. })
    ));
    assert!(matches!(
        load(&cnn(0), "/nonexistent/typed-tensor.safetensors"),
        Err(SafetensorsError::Io { op: "load", .. })
    ));
}

/// Integer buffers of every integer dtype, i8 and i32 included, save under their safetensors dtypes and load back
/// exactly (extremes and negatives).
#[test]
fn integer_buffers_round_trip() {
    use typed_tensor::nn::{Buffer, Parameters};
    #[derive(Parameters)] // each field visited under its name: `a`, `b`, ...
    struct Ints {
        a: Buffer<i8, Rank1<4>, Cpu>,
        b: Buffer<i32, Rank2<2, 2>, Cpu>,
        c: Buffer<u8, Rank1<2>, Cpu>,
        d: Buffer<u32, Rank1<2>, Cpu>,
        e: Buffer<i64, Rank1<2>, Cpu>,
    }
    let saved = Ints {
        a: Buffer::new(Tensor::from_array([i8::MIN, -1, 0, i8::MAX])),
        b: Buffer::new(Tensor::from_array([[i32::MIN, -7], [65536, i32::MAX]])),
        c: Buffer::new(Tensor::from_array([0, 255])),
        d: Buffer::new(Tensor::from_array([1, u32::MAX])),
        e: Buffer::new(Tensor::from_array([i64::MIN, 3])),
    };
    let bytes = to_bytes(&saved).unwrap();
    let fresh = Ints {
        a: Buffer::new(Tensor::zeros()),
        b: Buffer::new(Tensor::zeros()),
        c: Buffer::new(Tensor::zeros()),
        d: Buffer::new(Tensor::zeros()),
        e: Buffer::new(Tensor::zeros()),
    };
    from_bytes(&fresh, &bytes).unwrap();
    assert_eq!(fresh.a.value().to_vec(), [i8::MIN, -1, 0, i8::MAX]);
    assert_eq!(fresh.b.value().to_vec(), [i32::MIN, -7, 65536, i32::MAX]);
    assert_eq!(fresh.c.value().to_vec(), [0, 255]);
    assert_eq!(fresh.d.value().to_vec(), [1, u32::MAX]);
    assert_eq!(fresh.e.value().to_vec(), [i64::MIN, 3]);
    // Static Rust source of negative i8/i32 values reads back as the same literals.
    let mut src = String::new();
    typed_tensor::io::write_static(&mut src, "A", &saved.a.value()).unwrap();
    assert!(src.contains("[-128, -1, 0, 127]"), "{src}");
}

/// The JSON header of a safetensors file (after its 8-byte length).
fn header(bytes: &[u8]) -> String {
    let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    String::from_utf8(bytes[8..8 + len].to_vec()).unwrap()
}

/// A weight two layers share is one tensor in the file, its second name an alias in the metadata (the form
/// `safetensors.torch.save_model` writes), and loads back into both; a file holding either name, or both (each
/// loaded in walk order, the later winning, as PyTorch's `load_state_dict` copies each key), loads too; one
/// holding neither names the first.
#[test]
fn tied_weights_are_stored_once() {
    let tied = |seed: u64| {
        let w = Var::new(Tensor::<f32, Rank2<5, 3>, Cpu>::randn(seed));
        (
            w.clone(),
            Var::new(Tensor::<f32, Rank1<3>, Cpu>::randn(seed + 1)),
            w,
        )
    };
    let model = tied(1);
    let bytes = to_bytes(&model).unwrap();
    let json = header(&bytes);
    assert!(json.contains(r#""__metadata__":{"2":"0"}"#), "{json}");
    assert!(
        json.contains(r#""0":{"#) && !json.contains(r#""2":{"#),
        "{json}"
    );

    let fresh = tied(7);
    from_bytes(&fresh, &bytes).unwrap();
    assert_eq!(fresh.0.value().to_vec(), model.0.value().to_vec());
    assert_eq!(fresh.2.value().to_vec(), model.0.value().to_vec());
    assert_eq!(fresh.0.id(), fresh.2.id());

    // A file holding only the later name (`()` takes the place of the first: the names are "1" and "2").
    let later = (
        (),
        Var::new(Tensor::<f32, Rank1<3>, Cpu>::zeros()),
        Var::new(Tensor::<f32, Rank2<5, 3>, Cpu>::ones()),
    );
    from_bytes(&fresh, &to_bytes(&later).unwrap()).unwrap();
    assert_eq!(fresh.0.value().to_vec(), vec![1.0; 15]);

    // Both names, as an untied model or `torch.save` of a state dict writes them: the later one wins.
    let both = (
        Var::new(Tensor::<f32, Rank2<5, 3>, Cpu>::full(2.0)),
        Var::new(Tensor::<f32, Rank1<3>, Cpu>::zeros()),
        Var::new(Tensor::<f32, Rank2<5, 3>, Cpu>::full(3.0)),
    );
    from_bytes(&fresh, &to_bytes(&both).unwrap()).unwrap();
    assert_eq!(fresh.0.value().to_vec(), vec![3.0; 15]);

    // Neither name: the first is missing, and the model is as it was.
    let neither = ((), Var::new(Tensor::<f32, Rank1<3>, Cpu>::zeros()));
    let err = from_bytes(&fresh, &to_bytes(&neither).unwrap()).unwrap_err();
    assert!(
        matches!(err, SafetensorsError::Missing { ref name } if name == "0"),
        "{err}"
    );
    assert_eq!(fresh.2.value().to_vec(), vec![3.0; 15]);

    // Loaded into an untied model, the file's one tensor is the first name's; the alias is not a tensor.
    let untied = (
        Var::new(Tensor::<f32, Rank2<5, 3>, Cpu>::zeros()),
        Var::new(Tensor::<f32, Rank1<3>, Cpu>::zeros()),
        Var::new(Tensor::<f32, Rank2<5, 3>, Cpu>::zeros()),
    );
    let err = from_bytes(&untied, &bytes).unwrap_err();
    assert!(
        matches!(err, SafetensorsError::Missing { ref name } if name == "2"),
        "{err}"
    );
}

/// `TensorFile` names what it cannot give: a name the file lacks, bytes that are not a safetensors file, a file
/// that is not there; and reads runtime shapes.
#[test]
fn tensor_file_errors_are_named() {
    use typed_tensor::io::TensorFile;
    let layer = Linear::<f32, 3, 2, Cpu>::new(0);
    let file = TensorFile::from_bytes(to_bytes(&layer).unwrap()).unwrap();
    let err = file.tensor::<f32, Rank1<2>, Cpu>("bias.0").unwrap_err();
    assert_eq!(err.to_string(), "load: the file has no tensor `bias.0`");
    let bias = file
        .tensor_with_shape::<f32, (usize,), Cpu>("bias", (2,))
        .unwrap();
    assert_eq!(bias.to_vec(), layer.bias.value().to_vec());
    let err = file
        .tensor_with_shape::<f32, (usize,), Cpu>("bias", (3,))
        .unwrap_err();
    assert!(matches!(err, SafetensorsError::Shape { .. }), "{err}");
    let err = TensorFile::from_bytes(vec![1, 2, 3]).err().unwrap();
    assert!(
        err.to_string().starts_with("load: not a safetensors file"),
        "{err}"
    );
    let err = TensorFile::open("/nonexistent/typed-tensor.safetensors")
        .err()
        .unwrap();
    assert!(
        matches!(err, SafetensorsError::Io { op: "load", .. }),
        "{err}"
    );
}
