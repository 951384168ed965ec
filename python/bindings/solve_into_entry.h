/* flashsinkhorn._core's C entry for another extension (flashsinkhorn._torch_calls): new_solved_into
 * without Python objects for the arrays. _core exports it as the capsule
 * FLASHSINKHORN_SOLVE_INTO_CAPSULE, whose pointer is a `flashsinkhorn_solve_into_entry`; a caller
 * gets it once with PyCapsule_Import(FLASHSINKHORN_SOLVE_INTO_CAPSULE, 0) and checks abi_version.
 * Plain C: fixed-width integers, no C++ types, so that a module built with another compiler or
 * standard library (torch's) can call it. */
#ifndef FLASHSINKHORN_SOLVE_INTO_ENTRY_H
#define FLASHSINKHORN_SOLVE_INTO_ENTRY_H

#include <Python.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLASHSINKHORN_SOLVE_INTO_CAPSULE "flashsinkhorn._core._solve_into_entry"
/* Raised whenever the structs below or the function's contract change. */
#define FLASHSINKHORN_SOLVE_INTO_ABI_VERSION 1u

/* A C-contiguous float32/float64 array in host memory or on one CUDA GPU. `owner` (borrowed) keeps
 * the memory alive for as long as the core may read it; the solver returned holds a reference to it.
 * owner NULL: the argument is absent (only where the call allows it). Only the first two sizes are
 * carried: the core names a wrong ndim, as for every other input. */
typedef struct flashsinkhorn_raw_array {
  void* data;
  PyObject* owner;
  int64_t shape[2];
  int32_t ndim;
  int32_t float32; /* 1: float32, 0: float64 */
  int32_t device;  /* CUDA device index, -1: host memory */
} flashsinkhorn_raw_array;

/* _core.new_solved_into(x, y, a, b, eps, cost_scale, None, None, options, cuda_stream, f, g, f_aa,
 * g_bb, cost): the solver for x (n, d), y (m, d), weights a (n,), b (m,) (absent: uniform), built
 * with `options` (borrowed, a flashsinkhorn._core.Options) and, when has_cuda_stream, ordered on
 * cuda_stream (a cudaStream_t); solved into f (n,), g (m,), f_aa (n,), g_bb (m,) (absent unless
 * debiased) and the 0-d `cost` (absent: not written). */
typedef struct flashsinkhorn_solve_into_call {
  flashsinkhorn_raw_array x, y, a, b;
  double eps, cost_scale;
  PyObject* options;
  int32_t has_cuda_stream;
  uintptr_t cuda_stream;
  flashsinkhorn_raw_array f, g, f_aa, g_bb, cost;
} flashsinkhorn_solve_into_call;

/* Called with the GIL held (released inside while the core works). Returns what new_solved_into
 * returns, a new reference to (solver, iterations, marginal_error, converged, eps, device,
 * total_seconds), or NULL with the Python exception new_solved_into would raise
 * (flashsinkhorn.InvalidArgument with the library's message, ...). */
typedef PyObject* (*flashsinkhorn_solve_into_function)(const flashsinkhorn_solve_into_call* call);

typedef struct flashsinkhorn_solve_into_entry {
  uint32_t abi_version; /* FLASHSINKHORN_SOLVE_INTO_ABI_VERSION of the _core that made it */
  flashsinkhorn_solve_into_function solve_into;
} flashsinkhorn_solve_into_entry;

#ifdef __cplusplus
}
#endif

#endif /* FLASHSINKHORN_SOLVE_INTO_ENTRY_H */
