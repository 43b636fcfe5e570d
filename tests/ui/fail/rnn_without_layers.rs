// A recurrent stack has at least one layer (PyTorch's num_layers >= 1).
use typed_tensor::nn::LSTM;
use typed_tensor::prelude::*;

fn main() {
    let _lstm = LSTM::<f32, 4, 8, 0, Cpu>::new(0);
}
