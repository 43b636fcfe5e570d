"""PyTorch reference checkpoints for tests/suite/checkpoints.rs (issue 45, item 4).

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


FAMILIES = {"resnet": resnet}


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
