# A broken problem file: its forward never returns for real tensors (KFORGE_TIMEOUT_S bounds it).
import time

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        if type(x) is torch.Tensor:  # fake tensors (shape inference) pass
            while True:
                time.sleep(1)
        return x * 2


n = 8


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
