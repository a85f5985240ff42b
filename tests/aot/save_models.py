"""Saves the TorchScript models the AOT tests compile (random weights).

Usage: save_models.py OUT_DIR
Writes resnet18.pt and mobilenet_v3_small.pt (torchvision), gpt2.pt (a GPT-2
style decoder built from torch.nn), gate.pt (an `if` on tensor data),
nonzero.pt (a data-dependent shape), mlp.pt (pointwise-only, for CUDA),
gate_other.pt (gate with other weights) and not_torchscript.pt (a file that
is not TorchScript).
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


class Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        mask = torch.ones(t, t, device=x.device).tril() == 0
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt2(nn.Module):
    def __init__(self, vocab: int = 512, ctx: int = 64, dim: int = 64, heads: int = 4,
                 layers: int = 2):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(ctx, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        pos = torch.arange(ids.size(1), device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class Gate(nn.Module):
    """Takes one branch or the other depending on the input's values."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        h = self.lin(x)
        if bool(h.sum() > x.sum()):
            y = torch.relu(h) * 2.0 + 1.0
        else:
            y = torch.tanh(h) - x
        return y.exp().sum(1)


class NonZero(nn.Module):
    """nonzero has a data-dependent output shape: tgc cannot capture it."""

    def forward(self, x):
        y = (x * 2.0).relu()
        idx = torch.nonzero(y > 0.5)
        return y.sigmoid() + idx.to(torch.float32).sum()


class Mlp(nn.Module):
    """Pointwise ops around a matmul: every kernel has a CUDA lowering."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 32)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2.0 + torch.sigmoid(x)


def randomize(model):
    """Random batch-norm statistics and affine parameters, and Kaiming-scaled
    linear layers: torchvision's initialization leaves mobilenet_v3_small's
    outputs near 1e-9, too small for a comparison with eager to mean much."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.1, 0.1)
        elif isinstance(m, nn.Linear):
            nn.init.kaiming_uniform_(m.weight)
    return model


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    models = {
        "resnet18": randomize(torchvision.models.resnet18(weights=None)),
        "mobilenet_v3_small": randomize(torchvision.models.mobilenet_v3_small(weights=None)),
        "gpt2": Gpt2(),
        "gate": Gate(),
        "nonzero": NonZero(),
        "mlp": Mlp(),
        "gate_other": Gate(),  # same signature, other weights: a mismatch
    }
    for name, model in models.items():
        torch.jit.save(torch.jit.script(model.eval()), os.path.join(out, name + ".pt"))
    with open(os.path.join(out, "not_torchscript.pt"), "w") as f:
        f.write("this is a text file, not a TorchScript archive\n")
    # Example inputs for `tgc-aot run --input NAME=FILE`: one per gate branch.
    torch.save(torch.rand(4, 16) + 0.5, os.path.join(out, "gate_pos.pt"))
    torch.save(-torch.rand(4, 16) - 0.5, os.path.join(out, "gate_neg.pt"))


if __name__ == "__main__":
    main()
