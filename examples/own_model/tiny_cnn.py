"""A small image classifier of your own, as edgebench takes it: a factory function that
returns a ``torch.nn.Module``.

    python -m edgebench.full --model-path examples/own_model --models tiny_cnn:build \
        --data my_images/ --weights my_checkpoint.pt

``build`` takes no arguments (edgebench calls it in every process that needs the model);
the weights are what it gives (random here), or ``--weights PATH``, a state_dict of it.
"""
from __future__ import annotations

import torch
from torch import nn

NUM_CLASSES = 5
INPUT_SIZE = (3, 64, 64)


class TinyCNN(nn.Module):
    """Three conv blocks (conv, batch norm, ReLU, max pool), global average pool, a linear head."""

    def __init__(self, num_classes: int = NUM_CLASSES, width: int = 16):
        super().__init__()
        layers, cin = [], 3
        for cout in (width, width * 2, width * 4):
            layers += [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                       nn.ReLU(inplace=True), nn.MaxPool2d(2)]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(cin, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean((2, 3)))


class TwoHeads(TinyCNN):
    """The same network with a second output (the pooled features): a model whose output
    is not one [batch, classes] tensor, like a detector's boxes and scores."""

    def forward(self, x: torch.Tensor):
        f = self.features(x).mean((2, 3))
        return self.head(f), f


def build() -> nn.Module:
    return TinyCNN()


def two_heads() -> nn.Module:
    return TwoHeads()
