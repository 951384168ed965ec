// flashsinkhorn._core: the C++ API of include/flashsinkhorn, argument conversion only.
// Everything a user calls (sinkhorn, SamplesLoss, autograd) lives in the Python package; this
// module binds options, result and solver one to one, and releases the GIL around every solve
// and streamed pass.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "flashsinkhorn/flashsinkhorn.hpp"
#include "views.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace flashsinkhorn::python {
namespace {

using float64_vector = nb::ndarray<nb::numpy, double, nb::ndim<1>>;

// A NumPy float64 array that owns a copy of `values`.
float64_vector to_numpy(const std::vector<double>& values) {
  auto* owned = new std::vector<double>(values);
  nb::capsule deleter(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  return float64_vector(owned->data(), {owned->size()}, deleter);
}

using float32_vector = nb::ndarray<nb::numpy, float, nb::ndim<1>>;

// A NumPy float32 array holding `values` rounded once (no float64 intermediate on the Python side).
float32_vector to_numpy_float32(const std::vector<double>& values) {
  auto* owned = new std::vector<float>(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) (*owned)[i] = static_cast<float>(values[i]);
  nb::capsule deleter(owned, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
  return float32_vector(owned->data(), {owned->size()}, deleter);
}

// (f, g, f_aa, g_bb) as NumPy arrays of the caller's working dtype in one call; f_aa, g_bb are None
// unless `debiased`.
nb::tuple potentials(const result& r, bool single, bool debiased) {
  auto convert = [single](const std::vector<double>& v) -> nb::object {
    return single ? nb::cast(to_numpy_float32(v)) : nb::cast(to_numpy(v));
  };
  return nb::make_tuple(convert(r.f), convert(r.g), debiased ? convert(r.f_aa) : nb::none(),
                        debiased ? convert(r.g_bb) : nb::none());
}

// The solver plus the caller's arrays it reads from (solver.hpp: the views must outlive it).
struct bound_solver {
  input_array x, y;
  std::optional<input_array> a, b, initial_f, initial_g;
  std::optional<solver> impl;

  solver& get() { return *impl; }
};

void construct(bound_solver* self, input_array x, input_array y, std::optional<input_array> a,
               std::optional<input_array> b, double eps, double cost_scale, std::optional<input_array> initial_f,
               std::optional<input_array> initial_g, const options& opts) {
  // The solver is built before anything is constructed in `self`: if it throws (bad input), there
  // is no half-built object to destroy, and nanobind sees a plain failed __init__. The views point
  // into the arrays' buffers, which moving the array handles into `self` does not change.
  problem p;
  p.x = as_matrix(x, "X");
  p.y = as_matrix(y, "Y");
  if (a) p.a = as_vector(*a, "a");
  if (b) p.b = as_vector(*b, "b");
  if (initial_f) p.initial_f = as_vector(*initial_f, "initial_f");
  if (initial_g) p.initial_g = as_vector(*initial_g, "initial_g");
  p.eps = eps;
  p.cost_scale = cost_scale;
  std::optional<solver> impl;
  {
    nb::gil_scoped_release unlocked;
    impl.emplace(p, opts);
  }
  new (self) bound_solver{std::move(x), std::move(y), std::move(a), std::move(b),
                          std::move(initial_f), std::move(initial_g), std::move(impl)};
}

}  // namespace
}  // namespace flashsinkhorn::python

NB_MODULE(_core, m) {
  namespace fs = flashsinkhorn;
  namespace py = flashsinkhorn::python;
  m.doc() = "flashsinkhorn C++ core (thin binding; use the flashsinkhorn package).";
  // Solvers held by autograd graphs that are alive at interpreter exit are not leaks of ours.
  nb::set_leak_warnings(false);
  py::register_errors(m);

  nb::enum_<fs::cost_kind>(m, "CostKind")
      .value("squared_euclidean", fs::cost_kind::squared_euclidean)
      .value("cosine", fs::cost_kind::cosine);
  nb::enum_<fs::solver_kind>(m, "SolverKind")
      .value("alternating", fs::solver_kind::alternating)
      .value("symmetric", fs::solver_kind::symmetric);
  nb::enum_<fs::precision>(m, "Precision")
      .value("fp32", fs::precision::fp32)
      .value("fp64", fs::precision::fp64)
      .value("tf32", fs::precision::tf32)
      .value("bf16", fs::precision::bf16);
  nb::enum_<fs::device_kind>(m, "DeviceKind")
      .value("automatic", fs::device_kind::automatic)
      .value("cpu", fs::device_kind::cpu)
      .value("cuda", fs::device_kind::cuda);

  nb::class_<fs::options>(m, "Options", "flashsinkhorn::options (options.hpp), field for field.")
      .def(nb::init<>())
      .def_rw("cost", &fs::options::cost)
      .def_rw("solver", &fs::options::solver)
      .def_rw("precision", &fs::options::precision)
      .def_rw("device", &fs::options::device)
      .def_rw("cuda_device", &fs::options::cuda_device)
      .def_rw("scaling", &fs::options::scaling, nb::arg().none())
      .def_rw("diameter", &fs::options::diameter, nb::arg().none())
      .def_rw("max_iterations", &fs::options::max_iterations)
      .def_rw("tolerance", &fs::options::tolerance)
      .def_rw("check_every", &fs::options::check_every)
      .def_rw("reach_x", &fs::options::reach_x, nb::arg().none())
      .def_rw("reach_y", &fs::options::reach_y, nb::arg().none())
      .def_rw("debias", &fs::options::debias)
      .def_rw("normalize_weights", &fs::options::normalize_weights)
      .def_rw("cpu_threads", &fs::options::cpu_threads);

  nb::class_<fs::result>(m, "Result", "flashsinkhorn::result (result.hpp); f, g, f_aa, g_bb are float64 NumPy copies (f_aa, g_bb empty unless debiased).")
      .def_ro("cost", &fs::result::cost)
      .def_ro("primal_cost", &fs::result::primal_cost)
      .def_ro("iterations", &fs::result::iterations)
      .def_ro("marginal_error", &fs::result::marginal_error)
      .def_ro("converged", &fs::result::converged)
      .def_ro("eps", &fs::result::eps)
      .def_ro("device", &fs::result::device)
      .def_prop_ro("f", [](const fs::result& r) { return py::to_numpy(r.f); }, nb::rv_policy::automatic)
      .def_prop_ro("g", [](const fs::result& r) { return py::to_numpy(r.g); }, nb::rv_policy::automatic)
      .def_prop_ro("f_aa", [](const fs::result& r) { return py::to_numpy(r.f_aa); }, nb::rv_policy::automatic)
      .def_prop_ro("g_bb", [](const fs::result& r) { return py::to_numpy(r.g_bb); }, nb::rv_policy::automatic)
      .def("potentials", &py::potentials, "float32"_a, "debias"_a,
           "(f, g, f_aa, g_bb) as NumPy float32 (float32=True) or float64 arrays in one call; f_aa, g_bb None "
           "unless debiased.")
      .def_prop_ro("prepare_seconds", [](const fs::result& r) { return r.time.prepare_seconds; })
      .def_prop_ro("solve_seconds", [](const fs::result& r) { return r.time.solve_seconds; })
      .def_prop_ro("total_seconds", [](const fs::result& r) { return r.time.total_seconds; });

  nb::class_<py::bound_solver>(m, "Solver", "flashsinkhorn::solver (solver.hpp). Outputs are written into `out`.")
      .def("__init__", &py::construct, "x"_a, "y"_a, "a"_a.none(), "b"_a.none(), "eps"_a, "cost_scale"_a,
           "initial_f"_a.none(), "initial_g"_a.none(), "options"_a)
      .def(
          "solve",
          [](py::bound_solver& s) {
            nb::gil_scoped_release unlocked;
            return s.get().solve();
          })
      .def(
          "apply_plan",
          [](py::bound_solver& s, const py::input_array& v, const py::output_array& out) {
            const fs::matrix_view vv = py::as_matrix(v, "V");
            const fs::mutable_matrix_view ov = py::as_mutable_matrix(out, "out");
            nb::gil_scoped_release unlocked;
            s.get().apply_plan(vv, ov);
          },
          "v"_a, "out"_a)
      .def(
          "apply_plan_transpose",
          [](py::bound_solver& s, const py::input_array& u, const py::output_array& out) {
            const fs::matrix_view uv = py::as_matrix(u, "U");
            const fs::mutable_matrix_view ov = py::as_mutable_matrix(out, "out");
            nb::gil_scoped_release unlocked;
            s.get().apply_plan_transpose(uv, ov);
          },
          "u"_a, "out"_a)
      .def(
          "barycentric_projection",
          [](py::bound_solver& s, const py::output_array& out) {
            const fs::mutable_matrix_view ov = py::as_mutable_matrix(out, "out");
            nb::gil_scoped_release unlocked;
            s.get().barycentric_projection(ov);
          },
          "out"_a)
      .def(
          "gradient_x",
          [](py::bound_solver& s, const py::output_array& out) {
            const fs::mutable_matrix_view ov = py::as_mutable_matrix(out, "out");
            nb::gil_scoped_release unlocked;
            s.get().gradient_x(ov);
          },
          "out"_a)
      .def(
          "gradient_y",
          [](py::bound_solver& s, const py::output_array& out) {
            const fs::mutable_matrix_view ov = py::as_mutable_matrix(out, "out");
            nb::gil_scoped_release unlocked;
            s.get().gradient_y(ov);
          },
          "out"_a)
      .def(
          "gradient_a",
          [](py::bound_solver& s, const py::output_array& out) {
            const fs::mutable_vector_view ov = py::as_mutable_vector(out, "out");
            nb::gil_scoped_release unlocked;
            s.get().gradient_a(ov);
          },
          "out"_a)
      .def(
          "gradient_b",
          [](py::bound_solver& s, const py::output_array& out) {
            const fs::mutable_vector_view ov = py::as_mutable_vector(out, "out");
            nb::gil_scoped_release unlocked;
            s.get().gradient_b(ov);
          },
          "out"_a)
      .def_prop_ro("device_name", [](py::bound_solver& s) { return s.get().device_name(); });

  m.def("version", &fs::version, "The C++ library's version, \"major.minor.patch\".");
  m.def("cuda_available", &fs::cuda_available, "True when this build has CUDA and a CUDA device is visible.");
}
