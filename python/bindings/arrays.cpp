#include "arrays.hpp"

// The NumPy C API is used in this file only (its function table is static here).
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <cstring>
#include <memory>
#include <string>

#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::python {
namespace {

dtype element_type(nb::dlpack::dtype type, const char* name) {
  if (type == nb::dtype<float>()) return dtype::float32;
  if (type == nb::dtype<double>()) return dtype::float64;
  throw invalid_argument(std::string(name) + " must hold float32 or float64 values");
}

struct placement {
  memory_space space;
  int device;
};

placement where(int device_type, int device_id, const char* name) {
  if (device_type == nb::device::cpu::value) return {memory_space::host, 0};
  if (device_type == nb::device::cuda::value) return {memory_space::cuda, device_id};
  throw unsupported(std::string(name) + " lives on a device that is neither the CPU nor a CUDA GPU (DLPack type " +
                    std::to_string(device_type) + ")");
}

// True when the core can read the array in place: a matrix needs unit column stride and rows that
// do not overlap, a vector a positive stride (a single row, column or element may carry any
// stride on its trivial axis: NumPy and PyTorch report arbitrary values there).
bool readable_layout(const array_argument& a) {
  if (a.ndim == 2) {
    return (a.shape[1] <= 1 || a.stride[1] == 1) && (a.shape[0] <= 1 || a.stride[0] >= a.shape[1]);
  }
  if (a.ndim == 1) return a.shape[0] <= 1 || a.stride[0] >= 1;
  return true;  // the dimension check of as_matrix / as_vector names the problem
}

// Shape and element strides of a NumPy array; false when a byte stride is not a whole number of
// elements (then the array is copied).
bool describe_numpy(array_argument& out, PyArrayObject* array) {
  const int ndim = PyArray_NDIM(array);
  const npy_intp item = PyArray_ITEMSIZE(array);
  out.present = true;
  out.data = PyArray_DATA(array);
  out.type = PyArray_TYPE(array) == NPY_FLOAT32 ? dtype::float32 : dtype::float64;
  out.space = memory_space::host;
  out.device = 0;
  out.ndim = ndim;
  bool whole = true;
  for (int k = 0; k < ndim && k < 2; ++k) {
    out.shape[k] = PyArray_DIM(array, k);
    const npy_intp bytes = PyArray_STRIDE(array, k);
    whole = whole && bytes % item == 0;
    out.stride[k] = bytes / item;
  }
  return whole;
}

// The first item of every device address: an object of the binding's own, so that no tuple a user
// passes (points given as nested tuples) is taken for one.
PyObject* address_tag = nullptr;

// A device address (arrays.hpp): the tuple (tag, owner, address, shape, float32, device), `shape` a
// tuple of sizes (torch.Size is one), device −1 for host memory — a raw array (raw_argument) in
// Python objects. False when `object` is not such a tuple.
bool describe_address(array_argument& out, PyObject* object, const char* name) {
  if (!PyTuple_CheckExact(object) || PyTuple_GET_SIZE(object) != 6 || PyTuple_GET_ITEM(object, 0) != address_tag) {
    return false;
  }
  PyObject* shape = PyTuple_GET_ITEM(object, 3);
  if (!PyTuple_Check(shape)) throw invalid_argument(std::string(name) + ": a device address needs a shape tuple");
  flashsinkhorn_raw_array raw{};
  // Any number of dimensions: as_matrix / as_vector name a wrong one, as for every other input.
  raw.ndim = static_cast<std::int32_t>(PyTuple_GET_SIZE(shape));
  for (int k = 0; k < raw.ndim && k < 2; ++k) {
    raw.shape[k] = nb::cast<std::int64_t>(nb::handle(PyTuple_GET_ITEM(shape, k)));
  }
  raw.data = reinterpret_cast<void*>(nb::cast<std::uintptr_t>(nb::handle(PyTuple_GET_ITEM(object, 2))));
  raw.float32 = nb::cast<bool>(nb::handle(PyTuple_GET_ITEM(object, 4))) ? 1 : 0;
  raw.device = nb::cast<std::int32_t>(nb::handle(PyTuple_GET_ITEM(object, 5)));
  raw.owner = PyTuple_GET_ITEM(object, 1);
  out = raw_argument(raw);
  return true;
}

bool float_array(PyArrayObject* array) {
  const int type = PyArray_TYPE(array);
  return (type == NPY_FLOAT32 || type == NPY_FLOAT64) && PyArray_ISNOTSWAPPED(array) && PyArray_ISALIGNED(array);
}

nb::object steal_or_raise(PyObject* object) {
  if (object == nullptr) throw nb::python_error();
  return nb::steal(object);
}

// `object` (a NumPy array or anything np.asarray accepts) as float32 (float16, float32) or float64
// (everything else), C-contiguous and aligned: NumPy's own conversion, made only when needed.
nb::object converted(PyObject* object) {
  int target = NPY_FLOAT64;
  if (PyArray_Check(object)) {
    const int type = PyArray_TYPE(reinterpret_cast<PyArrayObject*>(object));
    if (type == NPY_HALF || type == NPY_FLOAT32) target = NPY_FLOAT32;
  }
  // PyArray_FromAny steals the descriptor reference.
  return steal_or_raise(PyArray_FromAny(object, PyArray_DescrFromType(target), 0, 0,
                                        NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST, nullptr));
}

array_argument from_numpy(nb::object array, const char* name, bool writable) {
  auto* a = reinterpret_cast<PyArrayObject*>(array.ptr());
  array_argument out;
  if (writable) {
    if (!float_array(a)) throw invalid_argument(std::string(name) + " must hold float32 or float64 values");
    if (!PyArray_ISWRITEABLE(a)) throw invalid_argument(std::string(name) + " must be writable");
    if (!describe_numpy(out, a)) {
      throw invalid_argument(std::string(name) + " must have strides that are whole numbers of elements");
    }
    out.owner = std::move(array);
    return out;  // as_mutable_* report a layout the core cannot write
  }
  if (float_array(a) && describe_numpy(out, a) && readable_layout(out)) {
    out.owner = std::move(array);  // in place: the caller's memory
    return out;
  }
  nb::object copy = converted(array.ptr());
  describe_numpy(out, reinterpret_cast<PyArrayObject*>(copy.ptr()));
  out.owner = std::move(copy);
  return out;
}

template <class Array>
void describe_dlpack(array_argument& out, const Array& array, const char* name) {
  out.present = true;
  out.data = const_cast<void*>(static_cast<const void*>(array.data()));
  out.type = element_type(array.dtype(), name);
  const placement p = where(array.device_type(), array.device_id(), name);
  out.space = p.space;
  out.device = p.device;
  out.ndim = static_cast<int>(array.ndim());
  for (int k = 0; k < out.ndim && k < 2; ++k) {
    out.shape[k] = static_cast<std::int64_t>(array.shape(k));
    out.stride[k] = array.stride(k);
  }
}

// A C-contiguous NumPy copy of a host array whose layout the core cannot read.
void copy_to_contiguous(array_argument& a) {
  npy_intp dims[2] = {a.shape[0], a.ndim == 2 ? a.shape[1] : 1};
  nb::object copy = steal_or_raise(PyArray_SimpleNew(a.ndim, dims, a.type == dtype::float32 ? NPY_FLOAT32 : NPY_FLOAT64));
  const auto item = static_cast<std::size_t>(size_of(a.type));
  auto* dst = static_cast<char*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(copy.ptr())));
  const auto* src = static_cast<const char*>(a.data);
  const std::int64_t cols = a.ndim == 2 ? a.shape[1] : 1;
  const std::int64_t col_stride = a.ndim == 2 ? a.stride[1] : 0;
  for (std::int64_t r = 0; r < a.shape[0]; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t from = r * a.stride[0] + c * col_stride;
      std::memcpy(dst + static_cast<std::size_t>(r * cols + c) * item, src + from * static_cast<std::int64_t>(item), item);
    }
  }
  describe_numpy(a, reinterpret_cast<PyArrayObject*>(copy.ptr()));
  a.owner = std::move(copy);
}

// A row-major matrix needs unit column stride; a single column or a single row may carry any
// stride on the trivial axis.
void matrix_layout(const array_argument& array, const char* name, std::int64_t& rows, std::int64_t& cols,
                   std::int64_t& row_stride) {
  if (array.ndim != 2) {
    throw invalid_argument(std::string(name) + " must be a 2-d array (points × dimension), got " +
                           std::to_string(array.ndim) + " dimensions");
  }
  rows = array.shape[0];
  cols = array.shape[1];
  const std::int64_t col_stride = array.stride[1];
  row_stride = rows <= 1 ? cols : array.stride[0];
  if (cols > 1 && col_stride != 1) {
    throw invalid_argument(std::string(name) + " must have contiguous rows (column stride 1), got column stride " +
                           std::to_string(col_stride));
  }
  if (row_stride < cols) {
    throw invalid_argument(std::string(name) + ": row stride " + std::to_string(row_stride) +
                           " is smaller than the number of columns " + std::to_string(cols));
  }
}

void vector_layout(const array_argument& array, const char* name, std::int64_t& size, std::int64_t& stride) {
  if (array.ndim != 1) {
    throw invalid_argument(std::string(name) + " must be a 1-d array, got " + std::to_string(array.ndim) +
                           " dimensions");
  }
  size = array.shape[0];
  stride = size <= 1 ? 1 : array.stride[0];
  if (stride < 1) throw invalid_argument(std::string(name) + " must have a positive stride");
}

// Fills the fields every view has: data, dtype, memory space and device.
template <class View>
View described(View view, const array_argument& array) {
  view.data = array.data;
  view.type = array.type;
  view.space = array.space;
  view.device = array.device;
  return view;
}

template <class View>
View matrix_of(const array_argument& array, const char* name) {
  View view;
  matrix_layout(array, name, view.rows, view.cols, view.row_stride);
  return described(view, array);
}

template <class View>
View vector_of(const array_argument& array, const char* name) {
  View view;
  vector_layout(array, name, view.size, view.stride);
  return described(view, array);
}

// float32 results written over the front half of their float64 buffer: element i at bytes
// [4i, 4i + 4), which only overlaps doubles already read (≤ i); memcpy keeps the compiler from
// reordering the overlapping accesses.
void round_to_float32_in_place(std::vector<double>& values) {
  auto* bytes = reinterpret_cast<unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size(); ++i) {
    double value;
    std::memcpy(&value, bytes + i * sizeof(double), sizeof(double));
    const auto rounded = static_cast<float>(value);
    std::memcpy(bytes + i * sizeof(float), &rounded, sizeof(float));
  }
}

// DLPack's DLManagedTensor (nanobind's dltensor is its DLTensor) with the vector it owns; shape
// points into the struct (ndim 0 for a scalar), strides are null (compact).
struct owned_dltensor {
  nb::dlpack::dltensor tensor;
  void* manager_ctx;
  void (*deleter)(owned_dltensor*);
  std::vector<double> values;
  std::int64_t shape[1];
};

constexpr const char* kDltensor = "dltensor";  // DLPack's capsule names: unconsumed, then consumed
constexpr const char* kUsedDltensor = "used_dltensor";

nb::object dlpack_capsule(std::vector<double>&& values, bool float32, int ndim) {
  auto owned = std::make_unique<owned_dltensor>();
  owned->values = std::move(values);
  if (float32) round_to_float32_in_place(owned->values);
  owned->shape[0] = static_cast<std::int64_t>(owned->values.size());
  nb::dlpack::dltensor& t = owned->tensor;
  t.data = owned->values.data();
  t.device = {nb::device::cpu::value, 0};
  t.ndim = ndim;
  t.dtype = float32 ? nb::dtype<float>() : nb::dtype<double>();
  t.shape = ndim == 0 ? nullptr : owned->shape;
  t.strides = nullptr;
  owned->manager_ctx = nullptr;
  owned->deleter = [](owned_dltensor* self) { delete self; };
  PyObject* capsule = PyCapsule_New(owned.get(), kDltensor, [](PyObject* self) {
    // A consumer renames the capsule and owns the tensor from then on; else it is still ours.
    if (PyCapsule_IsValid(self, kUsedDltensor)) return;
    auto* tensor = static_cast<owned_dltensor*>(PyCapsule_GetPointer(self, kDltensor));
    if (tensor != nullptr) {
      tensor->deleter(tensor);
    } else {
      PyErr_Clear();
    }
  });
  nb::object out = steal_or_raise(capsule);
  owned.release();  // the capsule owns it now
  return out;
}

}  // namespace

void init_numpy() {
  if (_import_array() < 0) throw nb::python_error();
}

nb::object device_address_tag() {
  if (address_tag == nullptr) {
    address_tag = PyCapsule_New(&address_tag, "flashsinkhorn.device_address", nullptr);
    if (address_tag == nullptr) throw nb::python_error();
  }
  return nb::borrow(address_tag);  // one reference stays with the binding for the process's life
}

array_argument input_argument(nb::handle object, const char* name) {
  PyObject* o = object.ptr();
  if (PyArray_Check(o)) return from_numpy(nb::borrow(object), name, false);
  array_argument out;
  if (describe_address(out, o, name)) return out;
  if (nb::try_cast(object, out.dlpack_input, false)) {
    describe_dlpack(out, out.dlpack_input, name);
    if (out.space == memory_space::host && !readable_layout(out)) copy_to_contiguous(out);
    return out;
  }
  return from_numpy(converted(o), name, false);  // lists, scalars, other array-likes
}

array_argument output_argument(nb::handle object, const char* name) {
  if (PyArray_Check(object.ptr())) return from_numpy(nb::borrow(object), name, true);
  array_argument out;
  if (describe_address(out, object.ptr(), name)) return out;
  if (!nb::try_cast(object, out.dlpack_output, false)) {
    throw invalid_argument(std::string(name) + " must be a writable NumPy array or DLPack tensor");
  }
  describe_dlpack(out, out.dlpack_output, name);
  return out;
}

array_argument raw_argument(const flashsinkhorn_raw_array& raw) {
  array_argument out;
  if (raw.owner == nullptr) return out;
  out.present = true;
  out.owner = nb::borrow(raw.owner);
  out.data = raw.data;
  out.type = raw.float32 != 0 ? dtype::float32 : dtype::float64;
  out.space = raw.device < 0 ? memory_space::host : memory_space::cuda;
  out.device = raw.device < 0 ? 0 : raw.device;
  out.ndim = raw.ndim;
  for (int k = 0; k < out.ndim && k < 2; ++k) out.shape[k] = raw.shape[k];
  if (out.ndim == 2) out.stride[0] = out.shape[1], out.stride[1] = 1;  // C-contiguous
  if (out.ndim == 1) out.stride[0] = 1;
  return out;
}

matrix_view as_matrix(const array_argument& array, const char* name) { return matrix_of<matrix_view>(array, name); }

mutable_matrix_view as_mutable_matrix(const array_argument& array, const char* name) {
  return matrix_of<mutable_matrix_view>(array, name);
}

vector_view as_vector(const array_argument& array, const char* name) { return vector_of<vector_view>(array, name); }

mutable_vector_view as_mutable_vector(const array_argument& array, const char* name) {
  return vector_of<mutable_vector_view>(array, name);
}

mutable_vector_view as_mutable_scalar(const array_argument& array, const char* name) {
  if (array.ndim != 0 && !(array.ndim == 1 && array.shape[0] == 1)) {
    throw invalid_argument(std::string(name) + " must hold one element (0-d, or 1-d of size 1)");
  }
  mutable_vector_view view;
  view.size = 1;
  return described(view, array);
}

nb::object numpy_vector(std::vector<double>&& values, bool float32) {
  // The array wraps the vector's own buffer (moved into the capsule that is the array's base): no
  // allocation and no copy after the solve.
  auto* owned = new std::vector<double>(std::move(values));
  nb::capsule base(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  if (float32) round_to_float32_in_place(*owned);
  npy_intp size = static_cast<npy_intp>(owned->size());
  void* bytes = owned->empty() ? nullptr : owned->data();
  nb::object array = steal_or_raise(PyArray_New(&PyArray_Type, 1, &size, float32 ? NPY_FLOAT32 : NPY_FLOAT64, nullptr,
                                                bytes, 0, NPY_ARRAY_CARRAY, nullptr));
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array.ptr()), base.release().ptr()) < 0) {
    throw nb::python_error();  // the reference to `base` was stolen even on failure
  }
  return array;
}

nb::object dlpack_vector(std::vector<double>&& values, bool float32) {
  return dlpack_capsule(std::move(values), float32, 1);
}

nb::object dlpack_scalar(double value, bool float32) { return dlpack_capsule(std::vector<double>{value}, float32, 0); }

}  // namespace flashsinkhorn::python
