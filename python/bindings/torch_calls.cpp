// flashsinkhorn._torch_calls: sinkhorn()'s call on CUDA and CPU tensors with torch's C++ API around
// the binding (issue 6: "a Python call at n = m = 1,000 within 20 µs of the C++ call").
//
// CUDA: the Python short path (_functional._solve_plain_tensors' fallback) pays for about twenty
// torch attribute calls that guard the raw addresses and for three Python-level `new_empty` (9 µs
// of the H200 host's time): bench/python_call_overhead.py's "floor" row puts any Python code that
// makes three CUDA tensors at +14–20 µs there. Here the same checks are C++ calls on at::Tensor
// (nanoseconds), the outputs come from two at::empty (the potentials share one), the current stream
// from c10.
// CPU: the general path's DLPack export of each input and import of each result (three
// torch.from_dlpack after the solve, each tens of µs when the caches are cold: bench/
// python_cold_floor_probe.py) become host addresses and at::empty outputs that the core writes.
// Both: the core is called through _core's C entry (solve_into_entry.h, the capsule
// _core._solve_into_entry imported once when this module loads): each tensor goes as a raw
// description (address, sizes, dtype, device, owner), with no Python object made for it and no
// argument parsing in the binding — new_solved_into's construction and solve_into, minus its
// Python calling convention.
//
// Built only against the torch found at configure time, and loadable only under that same torch
// version (PyInit compares torch.__version__; a torch built differently could lay out at::Tensor
// differently) and beside a _core with the same entry ABI: _functional falls back to the Python
// short path when this module is missing or refuses to load (ImportError).
// It links libtorch but not the flashsinkhorn core: it calls the core through _core's entry.
#include <Python.h>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstdint>
#include <exception>
#include <string>

#include "solve_into_entry.h"

#ifndef FLASHSINKHORN_TORCH_VERSION
#error "FLASHSINKHORN_TORCH_VERSION (torch.__version__ at configure time) must be defined"
#endif

namespace {

// Per module: _core's C entry, checked at import.
struct module_state {
  const flashsinkhorn_solve_into_entry* core;
};

// The tensor behind `object` when it is exactly a torch.Tensor the core can read by address, on a GPU
// or the CPU, beside `like`'s dtype and device: C-contiguous, no negative bit, not requiring grad.
// Null otherwise. Strided layout only (a sparse tensor's is_contiguous throws); any torch error also
// means "not plain" (the general path then meets it, with torch's own message).
const at::Tensor* plain_tensor(PyObject* object, const at::Tensor* like) {
  if (!THPVariable_CheckExact(object)) return nullptr;
  const at::Tensor& t = THPVariable_Unpack(object);
  try {
    if (!(t.is_cuda() || t.is_cpu()) || t.layout() != at::kStrided || t.requires_grad() || !t.is_contiguous() ||
        t.is_neg()) {
      return nullptr;
    }
    const at::ScalarType type = t.scalar_type();
    if (type != at::kFloat && type != at::kDouble) return nullptr;
    if (like != nullptr && (type != like->scalar_type() || t.device() != like->device())) return nullptr;
  } catch (const std::exception&) {
    return nullptr;
  }
  return &t;
}

// The outputs f, g, value (0-d) and, when debiased, f_aa, g_bb, on x's device in x's dtype, and
// the current stream of x's GPU (0 for CPU tensors). False, with the Python exception torch itself
// would raise (torch.OutOfMemoryError, ...), when torch refuses.
// The potentials share one allocation, each a view at an offset rounded up to 512 bytes (the
// caching allocator's own block alignment); the value has its own, so that keeping the loss alone
// (a training loop's list of costs) keeps no potentials alive. On CUDA every at::empty is a trip
// through the caching allocator (device guard, its mutex, a block search): after a long solve has
// left the caches cold it is the largest CUDA-only item of the call's host time (issue 6). The
// potentials' views share their storage as torch.split's do (torch.save of f stores g too).
bool make_outputs(const at::Tensor& x, const at::Tensor& y, bool debias, at::Tensor (&made)[5],
                  std::uintptr_t& stream) {
  HANDLE_TH_ERRORS
  const std::int64_t n = x.dim() > 0 ? x.size(0) : 0;  // a cloud of the wrong rank: the core names it
  const std::int64_t m = y.dim() > 0 ? y.size(0) : 0;
  // Offsets of g, f_aa, g_bb after f in the block, each rounded up to 512 bytes.
  const std::int64_t align = 512 / static_cast<std::int64_t>(x.element_size());
  const auto padded = [align](std::int64_t count) { return (count + align - 1) / align * align; };
  const std::int64_t g_at = padded(n), f_aa_at = g_at + padded(m), g_bb_at = f_aa_at + padded(n);
  const at::Tensor block = at::empty({debias ? g_bb_at + m : g_at + m}, x.options());
  made[0] = block.narrow(0, 0, n);
  made[1] = block.narrow(0, g_at, m);
  made[2] = at::empty({}, x.options());
  if (debias) {
    made[3] = block.narrow(0, f_aa_at, n);
    made[4] = block.narrow(0, g_bb_at, m);
  }
  stream = x.is_cuda() ? reinterpret_cast<std::uintptr_t>(c10::cuda::getCurrentCUDAStream(x.get_device()).stream()) : 0;
  return true;
  END_HANDLE_TH_ERRORS_RET(false)
}

// `t` as the core's raw array (solve_into_entry.h), C-contiguous (plain_tensor has checked), kept
// alive by `owner` (borrowed: the Python object of `t`).
flashsinkhorn_raw_array raw_array(PyObject* owner, const at::Tensor& t) {
  flashsinkhorn_raw_array out{};
  const auto sizes = t.sizes();
  out.data = t.data_ptr();
  out.owner = owner;
  out.ndim = static_cast<std::int32_t>(sizes.size());  // a cloud of the wrong rank: the core names it
  for (std::size_t k = 0; k < sizes.size() && k < 2; ++k) out.shape[k] = sizes[k];
  out.float32 = t.scalar_type() == at::kFloat ? 1 : 0;
  out.device = t.is_cuda() ? static_cast<std::int32_t>(t.get_device()) : -1;
  return out;
}

// solve_plain(x, y, a, b, eps, cost_scale, options, debias)
//   -> None when x, y, a, b are not a plain call on one device (the caller takes another path),
//      else (f, g, value, f_aa, g_bb, fields): the outputs made on x's device (a GPU or the CPU) and
//      the entry's tuple (solver, iterations, marginal_error, converged, eps, device,
//      total_seconds), as _core.new_solved_into returns it. CUDA calls run in the order of x's GPU's
//      current stream. Errors are the core's (flashsinkhorn.InvalidArgument with the library's
//      message, ...).
// eps, cost_scale: floats; options: a flashsinkhorn._core.Options. The caller has checked that no
// torch.func transform or forward-mode level is active.
PyObject* solve_plain(PyObject* self, PyObject* const* args, Py_ssize_t count) {
  if (count != 8) {
    PyErr_SetString(PyExc_TypeError, "solve_plain takes 8 arguments");
    return nullptr;
  }
  PyObject *xo = args[0], *yo = args[1], *ao = args[2], *bo = args[3], *options = args[6];
  const double eps = PyFloat_AsDouble(args[4]);
  if (eps == -1.0 && PyErr_Occurred()) return nullptr;
  const double cost_scale = PyFloat_AsDouble(args[5]);
  if (cost_scale == -1.0 && PyErr_Occurred()) return nullptr;
  const int debias = PyObject_IsTrue(args[7]);
  if (debias < 0) return nullptr;
  const at::Tensor* x = plain_tensor(xo, nullptr);
  const at::Tensor* y = x == nullptr ? nullptr : plain_tensor(yo, x);
  const at::Tensor* a = ao == Py_None ? nullptr : plain_tensor(ao, x);
  const at::Tensor* b = bo == Py_None ? nullptr : plain_tensor(bo, x);
  if (y == nullptr || (ao != Py_None && a == nullptr) || (bo != Py_None && b == nullptr)) Py_RETURN_NONE;

  at::Tensor made[5];
  std::uintptr_t stream = 0;
  if (!make_outputs(*x, *y, debias != 0, made, stream)) return nullptr;
  PyObject* outputs[5] = {Py_None, Py_None, Py_None, Py_None, Py_None};  // f, g, value, f_aa, g_bb
  PyObject* fields = nullptr;
  PyObject* result = nullptr;
  bool complete = true;
  for (int k = 0; k < (debias ? 5 : 3); ++k) {
    outputs[k] = THPVariable_Wrap(made[k]);
    complete = complete && outputs[k] != nullptr;
  }
  if (complete) {
    flashsinkhorn_solve_into_call call{};  // absent arrays: owner NULL
    call.x = raw_array(xo, *x);
    call.y = raw_array(yo, *y);
    if (a != nullptr) call.a = raw_array(ao, *a);
    if (b != nullptr) call.b = raw_array(bo, *b);
    call.eps = eps;
    call.cost_scale = cost_scale;
    call.options = options;
    call.has_cuda_stream = x->is_cuda() ? 1 : 0;
    call.cuda_stream = stream;
    call.f = raw_array(outputs[0], made[0]);
    call.g = raw_array(outputs[1], made[1]);
    if (debias) {
      call.f_aa = raw_array(outputs[3], made[3]);
      call.g_bb = raw_array(outputs[4], made[4]);
    }
    call.cost = raw_array(outputs[2], made[2]);
    fields = static_cast<module_state*>(PyModule_GetState(self))->core->solve_into(&call);  // self: this module
  }
  if (fields != nullptr) result = PyTuple_Pack(6, outputs[0], outputs[1], outputs[2], outputs[3], outputs[4], fields);
  for (PyObject* output : outputs) {
    if (output != Py_None) Py_XDECREF(output);
  }
  Py_XDECREF(fields);
  return result;
}

PyMethodDef methods[] = {
    {"solve_plain", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(solve_plain)), METH_FASTCALL,
     "solve_plain(x, y, a, b, eps, cost_scale, options, debias) -> None, or "
     "(f, g, value, f_aa, g_bb, new_solved_into's fields) for CUDA or CPU tensors the core reads by address."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_torch_calls",
                      "sinkhorn()'s call on CUDA and CPU tensors in C++ around the binding (built against one torch version).",
                      sizeof(module_state), methods};

// Replaces the Python error set now by an ImportError naming `what` (the package falls back on
// ImportError only). Returns null, for PyInit to return.
PyObject* import_error(const char* what) {
  PyErr_Clear();
  PyErr_SetString(PyExc_ImportError, what);
  return nullptr;
}

}  // namespace

PyMODINIT_FUNC PyInit__torch_calls() {
  // The torch this module was compiled against must be the one loaded (an at::Tensor of another
  // build may differ in layout): anything else is an ImportError, and the package falls back.
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == nullptr) return nullptr;
  PyObject* version = PyObject_GetAttrString(torch, "__version__");
  Py_DECREF(torch);
  if (version == nullptr) return nullptr;
  const char* text = PyUnicode_AsUTF8(version);
  const bool same = text != nullptr && std::string(text) == FLASHSINKHORN_TORCH_VERSION;
  Py_DECREF(version);
  if (!same) {
    PyErr_Format(PyExc_ImportError, "flashsinkhorn._torch_calls was built for torch %s", FLASHSINKHORN_TORCH_VERSION);
    return nullptr;
  }
  // _core's entry, from the _core of this package (the same build: one ABI version).
  const auto* core = static_cast<const flashsinkhorn_solve_into_entry*>(PyCapsule_Import(FLASHSINKHORN_SOLVE_INTO_CAPSULE, 0));
  if (core == nullptr) return import_error("flashsinkhorn._torch_calls needs " FLASHSINKHORN_SOLVE_INTO_CAPSULE);
  if (core->abi_version != FLASHSINKHORN_SOLVE_INTO_ABI_VERSION) {
    PyErr_Format(PyExc_ImportError, "flashsinkhorn._torch_calls was built for entry ABI %u, flashsinkhorn._core has %u",
                 FLASHSINKHORN_SOLVE_INTO_ABI_VERSION, static_cast<unsigned>(core->abi_version));
    return nullptr;
  }
  PyObject* made = PyModule_Create(&module);
  if (made != nullptr) static_cast<module_state*>(PyModule_GetState(made))->core = core;
  return made;
}
