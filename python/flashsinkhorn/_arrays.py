"""Arrays in and out: hand the C++ core what it can read without copying, give results back in the
caller's framework, dtype and device.

Zero-copy: NumPy arrays (float32/float64, unit column stride) go to the binding as they are; it reads
them through the NumPy C API, and converts anything else NumPy accepts (lists, integer or float16
arrays, unreadable layouts) once, in C++. CPU torch tensors of float32/float64 go as DLPack capsules
(`torch.utils.dlpack.to_dlpack`: the same memory, no Python-level `__dlpack__` protocol on the call
path). Torch copies happen only for other dtypes (→ float64, float16/bfloat16 → float32), tensors with
the negative bit set. CUDA tensors go to the solver by address (`device_address`, C-contiguous ones)
or as CUDA DLPack capsules (`core_array`), read in place on the device in the order of the caller's
current stream, when the core has CUDA and the device is not 'cpu' (else they are copied to the
host, and results moved back); the potentials and the x, y
gradients are then written by the core into CUDA tensors made here (`empty_device`). The other
products (plan products, weight gradients, Hessian products) still take host arrays: their inputs are
copied to the host and their results moved back to the tensor's device (solver.hpp, "CUDA inputs",
lists the core's host paths).

Results come out of the core as NumPy arrays in the working dtype; torch callers get them through the
zero-copy `torch.from_numpy`, except the solve's potentials and value, which the core hands to torch
callers as DLPack capsules (`Frame.from_core`): no NumPy array is made for them, and the import runs
the same torch DLPack code as the inputs' export (after a long solve, when the caches have lost it,
one torch code path instead of two).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core

try:
    import torch
    from torch.utils.dlpack import to_dlpack as _to_dlpack
except ImportError:  # torch is optional
    torch = None

# DLPack capsule → tensor, without torch.utils.dlpack.from_dlpack's Python-level protocol checks
# (the public function calls this one for capsules).
_from_dlpack = None if torch is None else getattr(torch._C, "_from_dlpack", None) or torch.utils.dlpack.from_dlpack
_DEVICE_ADDRESS = _core.DEVICE_ADDRESS  # the first item of a device address (device_address)

Array = Any  # numpy.ndarray | torch.Tensor | anything np.asarray accepts


def is_tensor(value: Any) -> bool:
    return torch is not None and isinstance(value, torch.Tensor)


class Frame:
    """Where results go back to: NumPy, or torch with a dtype and a device.

    `numpy_dtype` is the working dtype as a NumPy type (what the core reads and writes on the host),
    `single` is True for float32, `on_host` is False for tensors on a GPU (results are moved there),
    `cuda_index` is the GPU of CUDA tensors (None otherwise). Frames are immutable; `Frame.of` hands
    out shared instances for NumPy, CPU and CUDA tensors."""

    __slots__ = ("torch", "dtype", "device", "numpy_dtype", "single", "on_host", "cuda_index")

    def __init__(self, torch: bool, dtype: Any, device: Any = None) -> None:
        self.torch = torch
        self.dtype = dtype
        self.device = device  # torch.device when torch
        self.numpy_dtype = _NUMPY_OF[dtype] if torch else dtype
        self.single = self.numpy_dtype is np.float32
        self.on_host = not torch or device.type == "cpu"
        self.cuda_index = None
        if torch and device.type == "cuda":
            self.cuda_index = device.index if device.index is not None else _current_cuda_device()

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
        for value in arrays:  # NumPy arrays (and None) only: no torch type check at all
            if value is not None and type(value) is not np.ndarray:
                break
        else:
            dtype = first.dtype  # identity with NumPy's built-in descriptors, then a dictionary
            frame = _FLOAT64_FRAME if dtype is _FLOAT64 else _FLOAT32_FRAME if dtype is _FLOAT32 else None
            return frame if frame is not None else _numpy_frame(dtype)
        if torch is not None:
            tensor = torch.Tensor
            ref = first if isinstance(first, tensor) else next((v for v in arrays if isinstance(v, tensor)), None)
            if ref is not None:
                if ref.is_cpu:
                    frame = _CPU_TENSOR_FRAMES.get(ref.dtype)
                    if frame is not None:
                        return frame
                elif ref.is_cuda:  # one shared frame per (dtype, GPU): no torch.device made per call
                    key = (ref.dtype, ref.get_device())
                    frame = _CUDA_TENSOR_FRAMES.get(key)
                    if frame is None:
                        frame = _CUDA_TENSOR_FRAMES[key] = Frame(True, _working_torch_dtype(ref.dtype), ref.device)
                    return frame
                return Frame(True, _working_torch_dtype(ref.dtype), ref.device)
        return _numpy_frame(first.dtype if isinstance(first, np.ndarray) else np.asarray(first).dtype)

    def empty_host(self, shape: tuple[int, ...]) -> np.ndarray:
        """An output buffer the core can write: always NumPy (a torch frame gets it back through the
        zero-copy `torch.from_numpy` in give_back)."""
        return np.empty(shape, dtype=self.numpy_dtype)

    def empty_device(self, shape: int | tuple[int, ...]) -> Any:
        """An output tensor on the frame's GPU that the core writes in place (CUDA frames only)."""
        return torch.empty(shape, dtype=self.dtype, device=self.device)

    def give_back(self, host: np.ndarray) -> Array:
        """A NumPy result of the core (already in the working dtype) in the caller's framework and
        device."""
        if not self.torch:
            return host
        tensor = torch.from_numpy(host)
        return tensor if self.on_host else tensor.to(self.device)

    def from_core(self, capsule: Any) -> Any:
        """A host DLPack capsule of the core (solve_fields with dlpack=True: the working dtype, owned by
        the capsule) as a tensor on the frame's device (torch frames only)."""
        tensor = _from_dlpack(capsule)
        return tensor if self.on_host else tensor.to(self.device)


def _current_cuda_device() -> int:
    return torch.cuda.current_device()


_NUMPY_OF = {} if torch is None else {torch.float32: np.float32, torch.float64: np.float64}
_FLOAT32, _FLOAT64 = np.dtype(np.float32), np.dtype(np.float64)
_FLOAT32_FRAME, _FLOAT64_FRAME = Frame(False, np.float32), Frame(False, np.float64)
_NUMPY_FRAMES = {_FLOAT32: _FLOAT32_FRAME, _FLOAT64: _FLOAT64_FRAME}
_CPU_TENSOR_FRAMES = {} if torch is None else {t: Frame(True, t, torch.device("cpu")) for t in _NUMPY_OF}
_CUDA_TENSOR_FRAMES: dict = {}  # (tensor dtype, GPU index) → Frame, filled by Frame.of


def _numpy_frame(dtype: np.dtype) -> Frame:
    frame = _NUMPY_FRAMES.get(dtype)
    return frame if frame is not None else Frame(False, _working_numpy_dtype(dtype))


def _working_numpy_dtype(dtype: np.dtype) -> Any:
    if dtype in (np.float32, np.float64):
        return dtype.type
    return np.float32 if dtype == np.float16 else np.float64


def _working_torch_dtype(dtype: Any) -> Any:
    if dtype in (torch.float32, torch.float64):
        return dtype
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else torch.float64


def core_array(value: Array | None, frame: Frame) -> Any:
    """An input of the solver's construction as the binding takes it: a CUDA tensor of float32/float64
    read in place on the GPU (C-contiguous: as its `device_address`; other readable layouts: as a
    DLPack capsule of its own memory), made readable on the device where it is not (other dtypes
    converted, the negative bit resolved, rows made contiguous: torch operations on the GPU);
    everything else as `host_array` gives it."""
    if value is None or torch is None or not isinstance(value, torch.Tensor) or value.is_cpu:
        return host_array(value, frame)
    dtype = value.dtype
    if (dtype is torch.float32 or dtype is torch.float64) and not value.is_neg():
        # readable as it is (requires_grad or not: nothing is recorded)
        if value.is_contiguous():
            return device_address(value)
        if value.ndim != 2 or value.shape[1] <= 1 or value.stride(1) == 1:
            return _to_dlpack(value)
    tensor = value.detach()
    if tensor.dtype not in (torch.float32, torch.float64):
        tensor = tensor.to(_working_torch_dtype(tensor.dtype))
    tensor = tensor.resolve_neg()
    if tensor.ndim == 2 and tensor.shape[1] > 1 and tensor.stride(1) != 1:
        tensor = tensor.contiguous()
    return _to_dlpack(tensor)


def device_address(tensor: Any) -> tuple:
    """A C-contiguous float32/float64 CUDA tensor as the binding reads or writes it in place without
    a DLPack capsule (python/bindings/arrays.hpp, "a device address"): the caller has checked the
    dtype, the layout and the negative bit; the tuple holds the tensor, which keeps the memory alive."""
    return (_DEVICE_ADDRESS, tensor, tensor.data_ptr(), tensor.shape, tensor.dtype is torch.float32,
            tensor.get_device())


def current_stream(frame: Frame) -> int | None:
    """The caller's current CUDA stream on the frame's GPU (the value of its cudaStream_t; 0 is the
    legacy default stream), None for host frames. torch's raw getter (the one Triton launches
    with) where it exists: torch.cuda.current_stream() builds a Stream object, 9–11 µs of an
    H200 host's time per call (bench/studies/cuda_call_breakdown.py)."""
    if frame.cuda_index is None:
        return None
    if _RAW_STREAM is not None:
        return _RAW_STREAM(frame.cuda_index)
    return torch.cuda.current_stream(frame.cuda_index).cuda_stream


_RAW_STREAM = getattr(torch._C, "_cuda_getCurrentRawStream", None) if torch is not None else None


def host_array(value: Array | None, frame: Frame) -> Any:
    """`value` as the binding takes it: NumPy arrays and array-likes unchanged (the binding reads
    NumPy in place, converts the rest once), tensors as a DLPack capsule of host memory in
    float32/float64 (zero-copy for CPU float tensors; layouts the core cannot read are copied by
    the binding)."""
    if value is None or torch is None or not isinstance(value, torch.Tensor):
        return value
    dtype = value.dtype
    if value.is_cpu and (dtype is torch.float64 or dtype is torch.float32) and not value.is_neg():
        return _to_dlpack(value)  # the tensor's own memory (requires_grad or not: nothing is recorded)
    tensor = value.detach()
    if not tensor.is_cpu:
        tensor = tensor.cpu()  # the host paths of CUDA frames (see the module docstring)
    if tensor.dtype not in (torch.float32, torch.float64):
        tensor = tensor.to(_working_torch_dtype(tensor.dtype))
    return _to_dlpack(tensor.resolve_neg())
