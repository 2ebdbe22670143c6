"""The classic MNIST convolutional net.

Source: the PyTorch MNIST example (github.com/pytorch/examples, mnist/main.py):
two 3x3 convolutions (32 and 64 channels), max-pool, dropout 0.25, a 9216 -> 128
linear layer, dropout 0.5, a 128 -> 10 linear layer, log-softmax; trained with
Adadelta (lr 1.0) on the negative log-likelihood loss. 1,199,882 parameters.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MnistNet(nn.Module):
    """x: float32 B x 1 x 28 x 28 -> log-probabilities B x 10."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Log-probabilities of the 10 digits for each image."""
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)
