// mean, var, logsumexp and norm are float reductions: cast integers first.
use typed_tensor::prelude::*;

fn main() {
    let a: Tensor<u32, Rank1<3>, Cpu> = Tensor::ones();
    let _m = a.mean_all();
}
