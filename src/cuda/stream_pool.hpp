// The non-blocking streams the CUDA backends create for themselves (cuda_stream::create), kept per
// device across solvers: creating and destroying one costs ~35 µs of host time per solver (H200,
// bench/studies/solve_path_profile.py: cudaStreamCreateWithFlags + cudaStreamDestroy), a tenth of
// a small problem's whole call.
//
// Contracts: a stream is handed to one owner at a time; what its last owner enqueued may still be
// pending when the next one takes it (the new work orders after it: harmless, and rare work such as
// the previous solver's cudaFreeAsync). A stream given back with a capture still open (a failed
// one) has the capture ended and dropped, and is destroyed instead of kept. The pool's streams live until the process ends (destroying them from a
// static destructor could run after the CUDA context is gone).
#pragma once

#include <cuda_runtime.h>

namespace flashsinkhorn::detail {

// A non-blocking stream on `device` (the current device), from the pool or new. Throws cuda_error.
cudaStream_t acquire_stream(int device);

// Gives `stream` (from acquire_stream(device)) back to the pool. Never throws.
void release_stream(int device, cudaStream_t stream) noexcept;

}  // namespace flashsinkhorn::detail
