# A normalization with parameters: LayerNorm over the last two dimensions of (batch, rows, cols),
# its weight and bias built by the constructor from a tuple init input.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super(Model, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch = 3
rows = 16
cols = 24


def get_inputs():
    return [torch.randn(batch, rows, cols)]


def get_init_inputs():
    return [(rows, cols)]
