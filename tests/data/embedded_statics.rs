pub static F32: Tensor<f32, Rank2<2, 4>, Embedded> = Tensor::from_array_const(
    [[0.1, -0.0, f32::from_bits(0x7fc00000), f32::from_bits(0x7f800001)],
     [1e-40, 3.4028235e38, f32::NEG_INFINITY, 3.0]],
);
pub static F64: Tensor<f64, Rank0, Embedded> = Tensor::from_array_const(
    -2.5e300,
);
pub static F16: Tensor<f16, Rank3<1, 2, 2>, Embedded> = Tensor::from_array_const(
    [[[f16::from_bits(0x2e66), f16::from_bits(0x7e00)],
      [f16::from_bits(0x8000), f16::from_bits(0x7bff)]]],
);
pub static BF16: Tensor<bf16, Rank1<3>, Embedded> = Tensor::from_array_const(
    [bf16::from_bits(0xbfc0), bf16::from_bits(0x7f80), bf16::from_bits(0x0080)],
);
pub static U8: Tensor<u8, Rank1<2>, Embedded> = Tensor::from_array_const(
    [0, 255],
);
pub static U32: Tensor<u32, Rank1<2>, Embedded> = Tensor::from_array_const(
    [7, 4294967295],
);
pub static I64: Tensor<i64, Rank2<2, 1>, Embedded> = Tensor::from_array_const(
    [[-9223372036854775808],
     [-3]],
);
