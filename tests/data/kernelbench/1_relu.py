# A KernelBench-format problem written for kforge's tests: elementwise ReLU. Its get_inputs()
# draws from torch.rand (non-negative), as KernelBench's newest files do.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 16
dim = 1024


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
