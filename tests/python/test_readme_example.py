"""The README's training example runs as printed (so that it cannot rot): the Python block that
trains particles with SamplesLoss is taken from README.md and executed, on the GPU when torch sees
one, else on the CPU. It must move the particles towards the target cloud (mean +2 per
coordinate): 20 Adam steps of at most lr = 0.05 each move a coordinate's mean by up to 1."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("flashsinkhorn._core")
torch = pytest.importorskip("torch")

from conftest import REPO  # noqa: E402


def readme_training_block() -> str:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    training = [b for b in blocks if "SamplesLoss" in b and ".backward()" in b]
    assert len(training) == 1, "README.md should hold exactly one SamplesLoss training example"
    return training[0]


def test_readme_training_example_moves_the_particles_towards_the_target():
    namespace: dict = {}
    torch.manual_seed(0)
    exec(compile(readme_training_block(), "README.md (training example)", "exec"), namespace)
    x, y, value = namespace["x"], namespace["y"], namespace["value"]
    assert torch.isfinite(value).item()
    moved = x.detach().mean(dim=0)
    assert torch.all(moved > 0.5), f"particle means {moved.tolist()} did not move towards the target (2, 2, 2)"
    # And the loss went down: the final particles are closer than a fresh draw of the start.
    start = torch.randn(x.shape, device=x.device)
    assert namespace["loss"](x.detach(), y).item() < namespace["loss"](start, y).item()
