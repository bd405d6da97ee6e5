# A broken problem file: its forward raises, which is the problem's fault, not a kernel's.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        raise RuntimeError("this reference is broken on purpose")


n = 8


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
