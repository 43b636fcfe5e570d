// An LSTM cell's weights stack its four gates: a hidden size of 5 needs 4 · 5 = 20 rows, not 15.
use typed_tensor::prelude::*;

fn main() {
    let x = Tensor::<f32, Rank2<2, 3>, Cpu>::zeros();
    let state = Tensor::<f32, Rank2<2, 5>, Cpu>::zeros();
    let w_ih = Tensor::<f32, Rank2<15, 3>, Cpu>::zeros();
    let w_hh = Tensor::<f32, Rank2<15, 5>, Cpu>::zeros();
    let _next = x.lstm_cell((&state, &state), &w_ih, &w_hh, None, None);
}
