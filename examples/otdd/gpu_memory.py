"""Peak GPU memory of one measured region, seen two ways.

  allocator: torch.cuda.max_memory_allocated (torch's caching allocator: inputs, outputs, torch
             temporaries) + flashsinkhorn.max_memory_allocated (the library's own device pool),
             both peaks since the region began (their sum bounds the joint peak from above);
  nvidia-smi: the device's memory.used polled every ~20 ms by one `nvidia-smi ... -lms 20`
             process, reported as the absolute peak and as the peak minus the reading before the
             region (what the region added on top of the CUDA context and what was resident).

nvidia-smi sees every process on the GPU and the CUDA context; the allocator sees only allocations.
Where nvidia-smi is missing or the device is not CUDA the record says so instead of a number.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from typing import Any

import torch

MIB = 2**20
POLL_MS = 20


class NvidiaSmiSampler:
    """Polls memory.used (MiB) of one GPU in a background thread while in the `with` block."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.samples: list[int] = []
        self.reason: str | None = None
        self._process: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._first = threading.Event()

    def _target(self, executable: str) -> str:
        """nvidia-smi's -i for this torch device: its UUID (CUDA_VISIBLE_DEVICES renumbers torch's
        indices, not nvidia-smi's) when nvidia-smi accepts it, else torch's index."""
        index = str(self.device.index if self.device.index is not None else torch.cuda.current_device())
        uuid = getattr(torch.cuda.get_device_properties(self.device), "uuid", None)
        if uuid is None:
            return index
        target = str(uuid) if str(uuid).startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
        probe = subprocess.run([executable, "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", target],
                               capture_output=True, text=True, timeout=30)
        return target if probe.returncode == 0 else index

    def __enter__(self) -> "NvidiaSmiSampler":
        if self.device.type != "cuda":
            self.reason = f"device {self.device} is not a CUDA device"
            return self
        executable = shutil.which("nvidia-smi")
        if executable is None:
            self.reason = "nvidia-smi not found on PATH"
            return self
        command = [executable, "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                   "-i", self._target(executable), "-lms", str(POLL_MS)]
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        if not self._first.wait(timeout=10.0):  # the reading before the region is the baseline
            self.reason = "nvidia-smi gave no reading within 10 s"
        return self

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            try:
                self.samples.append(int(line.strip()))
            except ValueError:
                continue
            self._first.set()

    def __exit__(self, *exc: Any) -> None:
        if self._process is None:
            return
        time.sleep(3 * POLL_MS / 1000)  # the last readings of the region
        self._process.terminate()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if not self.samples and self.reason is None:
            error = self._process.stderr.read().strip() if self._process.stderr else ""
            self.reason = f"nvidia-smi gave no readings ({error[:200]})"

    def record(self) -> dict:
        if self.reason is not None or not self.samples:
            return {"available": False, "reason": self.reason or "no readings"}
        baseline, peak = self.samples[0], max(self.samples)
        return {"available": True, "baseline_mib": baseline, "peak_mib": peak,
                "peak_minus_baseline_mib": peak - baseline, "samples": len(self.samples), "poll_ms": POLL_MS}


class MeasuredRegion:
    """`with MeasuredRegion(device) as region: ...` then region.record(): allocator and nvidia-smi peaks."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.cuda = device.type == "cuda"
        self.sampler = NvidiaSmiSampler(device)
        self.torch_before = 0

    def __enter__(self) -> "MeasuredRegion":
        if self.cuda:
            import flashsinkhorn as fs
            torch.cuda.synchronize(self.device)
            torch.cuda.empty_cache()
            fs.empty_cache()
            torch.cuda.reset_peak_memory_stats(self.device)
            fs.reset_peak_memory_stats(self.device)
            self.torch_before = torch.cuda.memory_allocated(self.device)
        self.sampler.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)
        self.sampler.__exit__(*exc)

    def record(self) -> dict:
        if not self.cuda:
            return {"allocator": {"available": False, "reason": f"device {self.device} is not a CUDA device"},
                    "nvidia_smi": self.sampler.record()}
        import flashsinkhorn as fs
        torch_peak = torch.cuda.max_memory_allocated(self.device)
        library_peak = fs.max_memory_allocated(self.device)
        return {"allocator": {"available": True, "torch_peak_bytes": torch_peak, "library_peak_bytes": library_peak,
                              "peak_bytes": torch_peak + library_peak, "peak_mib": (torch_peak + library_peak) / MIB,
                              "torch_allocated_before_bytes": self.torch_before},
                "nvidia_smi": self.sampler.record()}


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
