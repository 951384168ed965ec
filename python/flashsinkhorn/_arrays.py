"""Arrays in and out: hand the C++ core what it can read without copying, give results back in the
caller's framework, dtype and device.

Zero-copy: NumPy arrays and CPU torch tensors that are float32/float64 with unit column stride go
to the core as they are (DLPack; a CPU tensor as its NumPy view `tensor.numpy()`, the same memory, which
the binding reads faster than through `tensor.__dlpack__`). Copies happen only for other dtypes (→ float64, float16/bfloat16
→ float32), non-unit column strides, and — until the CUDA backend accepts device views — CUDA
tensors, which are copied to the host before the call; results are moved back to the tensor's device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    import torch
except ImportError:  # torch is optional
    torch = None

Array = Any  # numpy.ndarray | torch.Tensor | anything np.asarray accepts


def is_tensor(value: Any) -> bool:
    return torch is not None and isinstance(value, torch.Tensor)


class Frame:
    """Where results go back to: NumPy, or torch with a dtype and a device.

    `numpy_dtype` is the working dtype as a NumPy type (what the core reads and writes on the host),
    `single` is True for float32: both precomputed once per call."""

    __slots__ = ("torch", "dtype", "device", "numpy_dtype", "single")

    def __init__(self, torch: bool, dtype: Any, device: Any = None) -> None:
        self.torch = torch
        self.dtype = dtype
        self.device = device  # torch.device when torch
        self.numpy_dtype = _NUMPY_OF[dtype] if torch else dtype
        self.single = self.numpy_dtype is np.float32

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Frame) and (self.torch, self.dtype, self.device) == (other.torch, other.dtype,
                                                                                     other.device)

    def __hash__(self) -> int:
        return hash((self.torch, self.dtype, self.device))

    def __repr__(self) -> str:
        return f"Frame(torch={self.torch!r}, dtype={self.dtype!r}, device={self.device!r})"

    @staticmethod
    def of(*arrays: Array) -> "Frame":
        """The frame of the first point cloud; torch as soon as any argument is a tensor."""
        first = arrays[0]
        if torch is not None:
            tensor = torch.Tensor
            ref = first if isinstance(first, tensor) else next((v for v in arrays if isinstance(v, tensor)), None)
            if ref is not None:
                return Frame(True, _working_torch_dtype(ref.dtype), ref.device)
        dtype = first.dtype if isinstance(first, np.ndarray) else np.asarray(first).dtype
        return Frame(False, _working_numpy_dtype(dtype))

    @property
    def cuda_index(self) -> int | None:
        if self.torch and self.device.type == "cuda":
            return self.device.index if self.device.index is not None else torch.cuda.current_device()
        return None

    def empty_host(self, shape: tuple[int, ...]) -> Array:
        """An output buffer the core can write: always NumPy (a torch frame gets it back through the
        zero-copy `torch.from_numpy` in give_back)."""
        return np.empty(shape, dtype=self.numpy_dtype)

    def give_back(self, host: Array) -> Array:
        """A host result (NumPy or CPU tensor) in the caller's framework, dtype and device."""
        if self.torch:
            if not isinstance(host, torch.Tensor):  # NumPy from the core: cast there (cheaper than in torch)
                host = torch.from_numpy(host if host.dtype == self.numpy_dtype else host.astype(self.numpy_dtype))
            if self.device.type != "cpu":
                host = host.to(self.device)
            return host
        return host if host.dtype == self.dtype else host.astype(self.dtype)

    def scalar(self, value: float) -> Any:
        if self.torch:
            return torch.scalar_tensor(value, dtype=self.dtype, device=self.device)
        return float(value)


_NUMPY_OF = {} if torch is None else {torch.float32: np.float32, torch.float64: np.float64}


def _working_numpy_dtype(dtype: np.dtype) -> Any:
    if dtype in (np.float32, np.float64):
        return dtype.type
    return np.float32 if dtype == np.float16 else np.float64


def _working_torch_dtype(dtype: Any) -> Any:
    if dtype in (torch.float32, torch.float64):
        return dtype
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else torch.float64


def host_array(value: Array | None, frame: Frame) -> Array | None:
    """`value` as a NumPy array or CPU tensor the core reads in place (copied only when it must be)."""
    if value is None:
        return None
    if torch is not None and isinstance(value, torch.Tensor):
        tensor = value.detach()
        if tensor.device.type != "cpu":
            tensor = tensor.cpu()  # the host copy that goes away once the CUDA backend takes device views
        if tensor.dtype not in (torch.float32, torch.float64):
            tensor = tensor.to(_working_torch_dtype(tensor.dtype))
        if tensor.dim() == 2 and tensor.shape[1] > 1 and tensor.stride(1) != 1:
            tensor = tensor.contiguous()
        elif tensor.dim() == 2 and tensor.shape[0] > 1 and tensor.stride(0) < tensor.shape[1]:
            tensor = tensor.contiguous()
        # A CPU tensor's NumPy view: zero-copy and far cheaper for the binding than tensor.__dlpack__.
        return tensor.numpy() if not (tensor.is_conj() or tensor.is_neg()) else tensor
    array = np.asarray(value)
    if array.dtype not in (np.float32, np.float64):
        array = array.astype(_working_numpy_dtype(array.dtype))
    if array.ndim == 2 and not array.flags.c_contiguous:
        rows_ok = array.shape[0] <= 1 or (array.strides[0] >= array.strides[1] * array.shape[1]
                                          and array.strides[0] % array.itemsize == 0)
        if (array.shape[1] > 1 and array.strides[1] != array.itemsize) or not rows_ok:
            array = np.ascontiguousarray(array)
    elif array.ndim == 1 and array.strides and array.strides[0] % array.itemsize != 0:
        array = np.ascontiguousarray(array)
    return array
