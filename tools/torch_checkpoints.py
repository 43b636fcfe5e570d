"""PyTorch reference checkpoints for tests/suite/checkpoints/ (issue 45, item 4).

Each family is a small model built with fixed seeds. For each, two files go to tests/data/checkpoints/:
  <family>.safetensors     the model's state_dict, exactly as `safetensors.torch.save_file` writes it: the file
                           the Rust test loads with `io::load` into the model written the natural way;
  <family>.io.safetensors  the input, the outputs, and the gradients of a scalar loss with respect to the input
                           and every parameter (`grad.<name>`), in each mode the family is checked in
                           (`<mode>.output`, `<mode>.grad.input`, ...), plus what the mode changes (BatchNorm's
                           running statistics after a training step: `train.state.<name>`).
The tests need no Python; run this only to regenerate the fixtures (the files are committed):

    python3 -m venv /tmp/torch-venv
    /tmp/torch-venv/bin/pip install torch==2.5.1 safetensors==0.4.5 numpy==2.1.3
    /tmp/torch-venv/bin/python tools/torch_checkpoints.py
"""

import copy
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

PINNED = "2.5.1"
OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "checkpoints")


def state(model):
    return {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}


def run(model, x, labels, mode, loss_of):
    """Output and gradients of `loss_of(output, labels)` for the input and every parameter, in `mode`."""
    model.train(mode == "train")
    x = x.clone().requires_grad_(True)
    model.zero_grad(set_to_none=True)
    out = model(x)
    loss = loss_of(out, labels)
    loss.backward()
    result = {f"{mode}.output": out.detach(), f"{mode}.loss": loss.detach().reshape(()),
              f"{mode}.grad.input": x.grad.detach()}
    for name, p in model.named_parameters():
        result[f"{mode}.grad.{name}"] = p.grad.detach()
    return result


# (a) A ResNet-style CNN: conv + BatchNorm2d stem, a residual block, a strided conv with a bias, global average
# pooling and a linear head.
class ConvBn(nn.Module):
    def __init__(self, cin, cout, stride=1, bias=False):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=bias)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return self.bn(self.conv(x))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = ConvBn(c, c)
        self.conv2 = ConvBn(c, c)

    def forward(self, x):
        return F.relu(x + self.conv2(F.relu(self.conv1(x))))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = ConvBn(1, 8)
        self.block = Block(8)
        self.down = ConvBn(8, 16, stride=2, bias=True)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.block(F.relu(self.stem(x)))
        x = F.relu(self.down(x))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def resnet():
    torch.manual_seed(0)
    model = ResNet()
    with torch.no_grad():
        # BatchNorm starts at weight 1, bias 0, mean 0, var 1: move all four off their defaults, so that a
        # parameter read from the wrong place shows.
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.2)
        model.train()
        for _ in range(3):
            model(torch.randn(4, 1, 8, 8) * 2.0 + 0.5)
    saved = state(model)
    x = torch.randn(4, 1, 8, 8)
    labels = torch.tensor([3, 0, 7, 3])
    loss_of = F.cross_entropy
    io = {"input": x, "labels": labels}
    io.update(run(copy.deepcopy(model), x, labels, "eval", loss_of))
    trained = copy.deepcopy(model)
    io.update(run(trained, x, labels, "train", loss_of))
    for name, buf in trained.named_buffers():
        io[f"train.state.{name}"] = buf.detach().clone()
    return saved, io


def perturb(model, std):
    """Adds noise to every parameter: layers start from one copy (`nn.TransformerEncoder` deep-copies its
    layer) and norms at 1 and 0, so a parameter read from the wrong place would not show otherwise."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * std)


# (b) Multi-head attention on its own: cross-attention (L = 3 queries, S = 4 keys and values), a boolean key
# padding mask, an additive attention mask, the per-head weights returned and in the loss.
def mha():
    torch.manual_seed(1)
    model = nn.MultiheadAttention(8, 2, batch_first=True)
    perturb(model, 0.1)
    q, k, v = torch.randn(2, 3, 8), torch.randn(2, 4, 8), torch.randn(2, 4, 8)
    padding = torch.tensor([[False, False, False, False], [False, True, False, True]])
    attn_mask = torch.randn(3, 4) * 0.5
    r_out, r_w = torch.randn(2, 3, 8), torch.randn(2, 2, 3, 4)
    io = {"query": q, "key": k, "value": v, "key_padding_mask": padding.to(torch.uint8),
          "attn_mask": attn_mask, "r_out": r_out, "r_weights": r_w}
    qs, ks, vs = (t.clone().requires_grad_(True) for t in (q, k, v))
    out, w = model(qs, ks, vs, key_padding_mask=padding, attn_mask=attn_mask, need_weights=True,
                   average_attn_weights=False)
    loss = (out * r_out).sum() + (w * r_w).sum()
    loss.backward()
    io.update({"eval.output": out.detach(), "eval.weights": w.detach(), "eval.loss": loss.detach(),
               "eval.grad.query": qs.grad, "eval.grad.key": ks.grad, "eval.grad.value": vs.grad})
    for name, p in model.named_parameters():
        io[f"eval.grad.{name}"] = p.grad.detach()
    return state(model), io


# (c) A 2-layer transformer encoder language model: an embedding, the encoder (post-norm with ReLU, or pre-norm
# with GELU and a final norm), a linear head; a causal mask and a key padding mask; next-token cross entropy.
class Lm(nn.Module):
    def __init__(self, norm_first):
        super().__init__()
        self.embed = nn.Embedding(16, 8)
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=norm_first,
                                           activation="gelu" if norm_first else "relu")
        self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8) if norm_first else None,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(8, 16)

    def forward(self, tokens, padding):
        causal = torch.triu(torch.ones(tokens.shape[1], tokens.shape[1], dtype=torch.bool), 1)
        x = self.encoder(self.embed(tokens), mask=causal, src_key_padding_mask=padding, is_causal=True)
        return self.head(x)


def transformer(norm_first):
    def family():
        torch.manual_seed(2)
        model = Lm(norm_first)
        perturb(model, 0.1)
        tokens = torch.randint(0, 16, (2, 5))
        targets = torch.randint(0, 16, (2, 5))
        padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
        model.train(False)
        out = model(tokens, padding)
        loss = F.cross_entropy(out.reshape(-1, 16), targets.reshape(-1))
        loss.backward()
        io = {"tokens": tokens, "targets": targets, "key_padding_mask": padding.to(torch.uint8),
              "eval.output": out.detach(), "eval.loss": loss.detach()}
        for name, p in model.named_parameters():
            io[f"eval.grad.{name}"] = p.grad.detach()
        return state(model), io
    return family


# (d) A 2-layer bidirectional LSTM and GRU over a padded batch with per-sample lengths (a packed sequence),
# from given initial states; the loss reads every output and final state. States are written (layers,
# directions, B, H) and outputs (B, L, directions, H): PyTorch's (layers·directions, B, H) and (B, L, 2H) in the
# same memory order.
def recurrent(kind):
    def family():
        torch.manual_seed(3)
        cls = nn.LSTM if kind == "lstm" else nn.GRU
        model = cls(3, 4, num_layers=2, bidirectional=True, batch_first=True)
        x = torch.randn(3, 5, 3)
        lengths = torch.tensor([5, 3, 1])
        h0 = torch.randn(4, 3, 4)
        c0 = torch.randn(4, 3, 4)
        r_out, r_h, r_c = torch.randn(3, 5, 8), torch.randn(4, 3, 4), torch.randn(4, 3, 4)
        xs, h0s, c0s = (t.clone().requires_grad_(True) for t in (x, h0, c0))
        packed = nn.utils.rnn.pack_padded_sequence(xs, lengths, batch_first=True, enforce_sorted=False)
        out, final = model(packed, (h0s, c0s) if kind == "lstm" else h0s)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=5)
        h_n = final[0] if kind == "lstm" else final
        loss = (out * r_out).sum() + (h_n * r_h).sum()
        if kind == "lstm":
            loss = loss + (final[1] * r_c).sum()
        loss.backward()
        four = lambda t: t.detach().reshape(2, 2, 3, 4)
        io = {"input": x, "lengths": lengths.to(torch.int32), "h0": four(h0), "c0": four(c0),
              "r_out": r_out.reshape(3, 5, 2, 4), "r_h": four(r_h), "r_c": four(r_c),
              "eval.output": out.detach().reshape(3, 5, 2, 4), "eval.h_n": four(h_n),
              "eval.loss": loss.detach(), "eval.grad.input": xs.grad, "eval.grad.h0": four(h0s.grad)}
        if kind == "lstm":
            io["eval.c_n"] = four(final[1])
            io["eval.grad.c0"] = four(c0s.grad)
        for name, p in model.named_parameters():
            io[f"eval.grad.{name}"] = p.grad.detach()
        return state(model), io
    return family


# (e) A 2-layer transformer decoder over an encoder's output (`memory`, given), both norm orders: causal
# self-attention with a target padding mask, a memory padding mask; the loss reads every output.
def decoder(norm_first):
    def family():
        torch.manual_seed(4)
        layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=norm_first,
                                           activation="gelu" if norm_first else "relu")
        model = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(8) if norm_first else None)
        perturb(model, 0.1)
        tgt, memory, r = torch.randn(2, 4, 8), torch.randn(2, 6, 8), torch.randn(2, 4, 8)
        tgt_padding = torch.tensor([[False] * 4, [False, False, False, True]])
        memory_padding = torch.tensor([[False] * 6, [False, False, True, False, True, True]])
        causal = torch.triu(torch.ones(4, 4, dtype=torch.bool), 1)
        ts, ms = tgt.clone().requires_grad_(True), memory.clone().requires_grad_(True)
        model.train(False)
        out = model(ts, ms, tgt_mask=causal, tgt_key_padding_mask=tgt_padding,
                    memory_key_padding_mask=memory_padding, tgt_is_causal=True)
        loss = (out * r).sum()
        loss.backward()
        io = {"tgt": tgt, "memory": memory, "r": r, "tgt_key_padding_mask": tgt_padding.to(torch.uint8),
              "memory_key_padding_mask": memory_padding.to(torch.uint8), "eval.output": out.detach(),
              "eval.loss": loss.detach(), "eval.grad.tgt": ts.grad, "eval.grad.memory": ms.grad}
        for name, p in model.named_parameters():
            io[f"eval.grad.{name}"] = p.grad.detach()
        return state(model), io
    return family


FAMILIES = {"resnet": resnet, "mha": mha, "transformer_post_norm": transformer(False),
            "transformer_pre_norm": transformer(True), "lstm": recurrent("lstm"), "gru": recurrent("gru"),
            "decoder_post_norm": decoder(False), "decoder_pre_norm": decoder(True)}


def main():
    if torch.__version__.split("+")[0] != PINNED:
        sys.exit(f"torch {PINNED} is pinned; this is {torch.__version__}")
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(OUT, exist_ok=True)
    for name, family in FAMILIES.items():
        saved, io = family()
        save_file(saved, os.path.join(OUT, f"{name}.safetensors"))
        save_file({k: v.contiguous() for k, v in io.items()}, os.path.join(OUT, f"{name}.io.safetensors"))
        print(name, len(saved), "tensors in the state_dict,", len(io), "in the io file")


if __name__ == "__main__":
    main()
