//! A tour of the typed API: `cargo run --release --example quickstart` (add `--features cuda` for the GPU part).

use typed_tensor::prelude::*;

fn main() -> Result<()> {
    // The shape is read off the nested array: Rank2<2, 3>.
    let a = Tensor::<f32, _, Cpu>::from_array([[1., 2., 3.], [4., 5., 6.]]);
    let b: Tensor<f32, Rank1<3>, Cpu> = Tensor::arange(); // [0, 1, 2]

    // (3,) broadcasts onto (2, 3): the output type is computed by the compiler.
    let c: Tensor<f32, Rank2<2, 3>, Cpu> = (&a + &b).exp();
    println!("exp(a + b) =\n{c}\n");

    // Views share storage: a transpose, a row, a column, a narrowed slice.
    let t: Tensor<f32, Rank2<3, 2>, Cpu> = a.t();
    let row: Tensor<f32, Rank1<3>, Cpu> = a.i(1);
    let col: Tensor<f32, Rank1<2>, Cpu> = a.i((.., 2));
    let mid: Tensor<f32, Rank2<2, 1>, Cpu> = a.narrow::<Axis<1>, 1, 1>();
    println!(
        "a.t() = {t}\na.i(1) = {row}\na.i((.., 2)) = {col}\na.narrow::<Axis<1>, 1, 1>() = {mid}\n"
    );

    // Runtime data is checked at run time, with errors that say what and where.
    match Tensor::<f32, Rank2<2, 3>, Cpu>::from_vec(vec![1.0; 5]) {
        Ok(_) => unreachable!(),
        Err(e) => println!("from_vec with 5 elements: {e}"),
    }
    match a.try_i(2) {
        Ok(_) => unreachable!(),
        Err(e) => println!("a.try_i(2): {e}\n"),
    }

    // Masks, where, casts.
    let x = Tensor::<f32, _, Cpu>::from_array([-1.5, 0.25, 300.0]);
    let zero = Tensor::<f32, Rank1<3>, Cpu>::zeros();
    let relu = x.gt(&zero).where_cond(&x, &zero);
    println!("relu via where_cond: {relu}");
    println!("as u8 (saturating): {}\n", x.to_dtype::<u8>());

    // Runtime-sized dims mix with static ones: a batch of any size.
    let batch = Tensor::<f32, (usize, Const<3>), Cpu>::ones_with_shape((4, Const));
    println!("batch + b = {}\n", &batch + &b);

    #[cfg(feature = "cuda")]
    match a.to_device::<Cuda>() {
        Ok(g) => println!("on the GPU: {}", (&g * 2.0).sqrt()),
        Err(e) => println!("no GPU here ({e}); the same code runs on Cuda when one is present"),
    }
    Ok(())
}
