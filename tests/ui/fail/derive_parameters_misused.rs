// `#[derive(Parameters)]` reads structs, and a field takes `#[parameters(skip)]` or `#[parameters(flatten)]`:
// anything else is refused by name, at the item or the attribute.
use typed_tensor::nn::Parameters;

#[derive(Parameters)]
enum Choice {
    A,
    B,
}

#[derive(Parameters)]
struct Layer {
    #[parameters(ignore)]
    scale: f64,
}

fn main() {}
