"""The library's own device memory, in torch.cuda's terms.

The CUDA backend allocates its buffers (prepared clouds, potentials, scratch) from one CUDA memory
pool per GPU, not from torch's caching allocator, so torch.cuda.max_memory_allocated() does not see
them. These read that pool's counters (bytes):

    memory_allocated(device)      in use by live solvers now
    max_memory_allocated(device)  the most in use at once since reset_peak_memory_stats(device)
                                  (or since the first solver on the device)
    memory_reserved(device)       held from the driver: in use, or cached for the next solver
                                  (empty_cache() gives the cached part back)

A call's whole device footprint on torch tensors is then torch's peak (the inputs and the outputs
made for the caller) plus max_memory_allocated(). `device`: None (torch's current CUDA device, 0
without torch), an index, 'cuda', 'cuda:k' or a torch.device. Without CUDA every count is 0.

Example:
    fs.reset_peak_memory_stats()
    fs.sinkhorn(x, y, eps=0.1)                 # x, y CUDA tensors
    print(fs.max_memory_allocated() / 2**20, "MiB inside the solver")
"""

from __future__ import annotations

from typing import Any

from . import _core


def _index(device: Any) -> int:
    if device is None:
        try:
            import torch
        except ImportError:
            return 0
        return torch.cuda.current_device() if torch.cuda.is_available() else 0
    if isinstance(device, int):
        return device
    text = str(device)
    if text == "cuda":
        return _index(None)
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    raise ValueError(f"device must be None, an index, 'cuda' or 'cuda:k', got {device!r}")


def memory_allocated(device: Any = None) -> int:
    """Bytes of the solvers' device memory pool in use now on `device`."""
    return _core.device_memory(_index(device))[0]


def max_memory_allocated(device: Any = None) -> int:
    """The most bytes of the solvers' pool in use at once on `device` since reset_peak_memory_stats."""
    return _core.device_memory(_index(device))[1]


def memory_reserved(device: Any = None) -> int:
    """Bytes the solvers' pool holds from the driver on `device` (in use or cached)."""
    return _core.device_memory(_index(device))[2]


def reset_peak_memory_stats(device: Any = None) -> None:
    """Restarts max_memory_allocated(device) from the memory in use now."""
    _core.reset_peak_device_memory(_index(device))
