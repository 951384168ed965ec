// flashsinkhorn._core: the C++ API of include/flashsinkhorn, argument conversion only.
// Everything a user calls (sinkhorn, SamplesLoss, autograd) lives in the Python package; this
// module binds options, result and solver one to one, and releases the GIL around every solve
// and streamed pass.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "bound_solver.hpp"
#include "errors.hpp"
#include "optim.hpp"
#include "progress.hpp"
#include "solve_into_entry.hpp"
#include "solve_tuples.hpp"
#include "flashsinkhorn/flashsinkhorn.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace flashsinkhorn::python {
namespace {

// (f, g, f_aa, g_bb) as NumPy arrays of the caller's working dtype; f_aa, g_bb are None unless
// `debiased`.
nb::tuple potentials(const result& r, bool float32, bool debiased) {
  return nb::make_tuple(numpy_vector(std::vector<double>(r.f), float32), numpy_vector(std::vector<double>(r.g), float32),
                        debiased ? numpy_vector(std::vector<double>(r.f_aa), float32) : nb::none(),
                        debiased ? numpy_vector(std::vector<double>(r.g_bb), float32) : nb::none());
}

// --- CUDA inputs read in place (solver.hpp, "CUDA inputs"): the solve into the caller's arrays ---

// solve_into (solve_tuples.hpp) into f, g (and f_aa, g_bb when debiased) and the value into `cost`
// (0-d; None: not written): NumPy arrays or DLPack tensors, written in place. Returns
// (iterations, marginal_error, converged, eps, device, total_seconds), preceded by `owner` when
// given (new_solved_into).
nb::tuple solve_into_handles(solver& s, nb::handle f, nb::handle g, nb::handle f_aa, nb::handle g_bb, nb::handle cost,
                             nb::handle owner = nb::handle()) {
  potential_arrays out;
  out.f = output_argument(f, "f");
  out.g = output_argument(g, "g");
  if (!f_aa.is_none()) out.f_aa = output_argument(f_aa, "f_aa");
  if (!g_bb.is_none()) out.g_bb = output_argument(g_bb, "g_bb");
  if (!cost.is_none()) out.cost = output_argument(cost, "cost");
  return solve_into_arrays(s, out, owner);
}

// solver::transfers (transfer_statistics.hpp) as a dict.
nb::dict transfer_counts(const solver& s) {
  const transfer_statistics t = s.transfers();
  nb::dict out;
  out["host_to_device_copies"] = t.host_to_device_copies;
  out["host_to_device_bytes"] = t.host_to_device_bytes;
  out["device_to_host_copies"] = t.device_to_host_copies;
  out["device_to_host_bytes"] = t.device_to_host_bytes;
  out["largest_copy_bytes"] = t.largest_copy_bytes;
  return out;
}

// --- end of CUDA inputs ---

// None stays an empty argument (no view); anything else is read in place or converted once.
array_argument optional_input(nb::handle object, const char* name) {
  return object.is_none() ? array_argument{} : input_argument(object, name);
}

// The streamed passes of a solved solver, the GIL released while they run: `out` (an array the
// binding writes in place) ← method(values) or method().
template <void (solver::*Method)(matrix_view, mutable_matrix_view) const>
void product(bound_solver& s, nb::handle values, nb::handle out) {
  // The name errors give the values: V for P·V, U for Pᵀ·U.
  const char* name = Method == &solver::apply_plan_transpose ? "U" : "V";
  const array_argument va = input_argument(values, name), oa = output_argument(out, "out");
  const matrix_view vv = as_matrix(va, name);
  const mutable_matrix_view ov = as_mutable_matrix(oa, "out");
  nb::gil_scoped_release unlocked;
  (s.get().*Method)(vv, ov);
}

template <void (solver::*Method)(mutable_matrix_view) const>
void into_matrix(bound_solver& s, nb::handle out) {
  const array_argument oa = output_argument(out, "out");
  const mutable_matrix_view ov = as_mutable_matrix(oa, "out");
  nb::gil_scoped_release unlocked;
  (s.get().*Method)(ov);
}

template <void (solver::*Method)(mutable_vector_view) const>
void into_vector(bound_solver& s, nb::handle out) {
  const array_argument oa = output_argument(out, "out");
  const mutable_vector_view ov = as_mutable_vector(oa, "out");
  nb::gil_scoped_release unlocked;
  (s.get().*Method)(ov);
}

// The CG preconditioner from its Python code: 0 none, 1 diagonal, 2 sparse_plan (_functional.py's
// _PRECONDITIONERS).
cg_preconditioner preconditioner_of(int code) {
  switch (code) {
    case 0: return cg_preconditioner::none;
    case 1: return cg_preconditioner::diagonal;
    case 2: return cg_preconditioner::sparse_plan;
    default: throw invalid_argument("preconditioner code " + std::to_string(code) + " is not 0, 1 or 2");
  }
}

// solver::potential_vjp: cotangents df (n,), dg (m,) (None: zeros) and output arrays (None: not
// wanted), the report as (iterations, relative_residual, converged, gauge_defect, plan_passes,
// redone_in_float64).
nb::tuple potential_vjp(bound_solver& s, nb::handle df, nb::handle dg, nb::handle grad_x, nb::handle grad_y,
                        nb::handle grad_a, nb::handle grad_b, double tolerance, int max_iterations,
                        int preconditioner) {
  const array_argument dfa = optional_input(df, "df"), dga = optional_input(dg, "dg");
  const array_argument xa = grad_x.is_none() ? array_argument{} : output_argument(grad_x, "grad_x");
  const array_argument ya = grad_y.is_none() ? array_argument{} : output_argument(grad_y, "grad_y");
  const array_argument aa = grad_a.is_none() ? array_argument{} : output_argument(grad_a, "grad_a");
  const array_argument ba = grad_b.is_none() ? array_argument{} : output_argument(grad_b, "grad_b");
  potential_vjp_outputs out;
  if (!grad_x.is_none()) out.grad_x = as_mutable_matrix(xa, "grad_x");
  if (!grad_y.is_none()) out.grad_y = as_mutable_matrix(ya, "grad_y");
  if (!grad_a.is_none()) out.grad_a = as_mutable_vector(aa, "grad_a");
  if (!grad_b.is_none()) out.grad_b = as_mutable_vector(ba, "grad_b");
  potential_vjp_options settings;
  settings.tolerance = tolerance;
  settings.max_iterations = max_iterations;
  settings.preconditioner = preconditioner_of(preconditioner);
  const vector_view dfv = df.is_none() ? vector_view{} : as_vector(dfa, "df");
  const vector_view dgv = dg.is_none() ? vector_view{} : as_vector(dga, "dg");
  potential_vjp_report report;
  {
    nb::gil_scoped_release unlocked;
    report = s.get().potential_vjp(dfv, dgv, out, settings);
  }
  return nb::make_tuple(report.iterations, report.relative_residual, report.converged, report.gauge_defect,
                        report.plan_passes, report.redone_in_float64);
}

// hvp_options from the Python arguments: `part` 0 full, 1 fixed potentials, 2 implicit.
hvp_options hvp_settings(int part, double tolerance, int max_iterations, int preconditioner) {
  hvp_options settings;
  settings.part = part == 1 ? hvp_part::fixed_potential : part == 2 ? hvp_part::implicit : hvp_part::full;
  settings.tolerance = tolerance;
  settings.max_iterations = max_iterations;
  settings.preconditioner = preconditioner_of(preconditioner);
  return settings;
}

nb::tuple hvp_report_tuple(const hvp_report& report) {
  return nb::make_tuple(report.cg_iterations, report.relative_residual, report.converged, report.gauge_defect,
                        report.plan_passes, report.redone_in_float64);
}

// One direction into one output (the shape of A) through `product` (a solver's hvp_x, hvp_y or
// hvp_self), the GIL released; the report as (cg_iterations, relative_residual, converged,
// gauge_defect, plan_passes, redone_in_float64).
template <class Product>
nb::tuple one_direction_product(nb::handle direction, nb::handle out, int part, double tolerance, int max_iterations,
                                int preconditioner, const Product& product) {
  const array_argument da = input_argument(direction, "direction"), oa = output_argument(out, "out");
  const matrix_view dv = as_matrix(da, "direction");
  const mutable_matrix_view ov = as_mutable_matrix(oa, "out");
  const hvp_options settings = hvp_settings(part, tolerance, max_iterations, preconditioner);
  hvp_report report;
  {
    nb::gil_scoped_release unlocked;
    report = product(dv, ov, settings);
  }
  return hvp_report_tuple(report);
}

// solver::hvp_x / hvp_y (hessian.hpp): H·A into `out`.
nb::tuple hessian_vector_product(bound_solver& s, bool wrt_y, nb::handle direction, nb::handle out, int part,
                                 double tolerance, int max_iterations, int preconditioner) {
  return one_direction_product(direction, out, part, tolerance, max_iterations, preconditioner,
                               [&](const matrix_view& a, const mutable_matrix_view& o, const hvp_options& settings) {
                                 return wrt_y ? s.get().hvp_y(a, o, settings) : s.get().hvp_x(a, o, settings);
                               });
}

// solver::hvp_self (hessian.hpp): the Hessian of X ↦ OT_ε(a, X; a, X) along A into `out`.
nb::tuple self_hessian_vector_product(bound_solver& s, nb::handle direction, nb::handle out, int part,
                                      double tolerance, int max_iterations, int preconditioner) {
  return one_direction_product(direction, out, part, tolerance, max_iterations, preconditioner,
                               [&](const matrix_view& a, const mutable_matrix_view& o, const hvp_options& settings) {
                                 return s.get().hvp_self(a, o, settings);
                               });
}

// solver::hvp_xy (hessian.hpp): directions A (n, d), B (m, d) (None: zero) into out_x, out_y (None:
// not computed); the report as for hvp.
nb::tuple joint_hessian_vector_product(bound_solver& s, nb::handle direction_x, nb::handle direction_y,
                                       nb::handle out_x, nb::handle out_y, int part, double tolerance,
                                       int max_iterations, int preconditioner) {
  const array_argument ax = optional_input(direction_x, "direction_x");
  const array_argument ay = optional_input(direction_y, "direction_y");
  const array_argument ox = out_x.is_none() ? array_argument{} : output_argument(out_x, "out_x");
  const array_argument oy = out_y.is_none() ? array_argument{} : output_argument(out_y, "out_y");
  const matrix_view axv = direction_x.is_none() ? matrix_view{} : as_matrix(ax, "direction_x");
  const matrix_view ayv = direction_y.is_none() ? matrix_view{} : as_matrix(ay, "direction_y");
  const mutable_matrix_view oxv = out_x.is_none() ? mutable_matrix_view{} : as_mutable_matrix(ox, "out_x");
  const mutable_matrix_view oyv = out_y.is_none() ? mutable_matrix_view{} : as_mutable_matrix(oy, "out_y");
  const hvp_options settings = hvp_settings(part, tolerance, max_iterations, preconditioner);
  hvp_report report;
  {
    nb::gil_scoped_release unlocked;
    report = s.get().hvp_xy(axv, ayv, oxv, oyv, settings);
  }
  return hvp_report_tuple(report);
}

// The arguments of a new solver, read in place or converted once (bound_solver.hpp: the solver is
// not built yet), and in `p` the problem whose views point into them.
// `labels`: None, or (x_labels, y_labels, W, feature_weight, label_weight) — label_cost.hpp.
std::unique_ptr<bound_solver> bound_arguments(nb::handle x, nb::handle y, nb::handle a, nb::handle b, double eps,
                                              double cost_scale, nb::handle initial_f, nb::handle initial_g,
                                              nb::handle labels, problem& p) {
  auto held = std::make_unique<bound_solver>();
  held->x = input_argument(x, "X");
  held->y = input_argument(y, "Y");
  held->a = optional_input(a, "a");
  held->b = optional_input(b, "b");
  held->initial_f = optional_input(initial_f, "initial_f");
  held->initial_g = optional_input(initial_g, "initial_g");
  p = problem_of(*held, eps, cost_scale);
  if (!labels.is_none()) {
    const nb::tuple parts = nb::cast<nb::tuple>(labels);
    held->labels = bound_labels{nb::cast<label_array>(parts[0]), nb::cast<label_array>(parts[1]),
                                input_argument(parts[2], "label_distances")};
    const bound_labels& l = *held->labels;
    p.labels.x_labels = host_labels(l.x_labels.data(), static_cast<std::int64_t>(l.x_labels.shape(0)));
    p.labels.y_labels = host_labels(l.y_labels.data(), static_cast<std::int64_t>(l.y_labels.shape(0)));
    p.labels.label_distances = as_matrix(l.distances, "label_distances");
    p.labels.feature_weight = nb::cast<double>(parts[3]);
    p.labels.label_weight = nb::cast<double>(parts[4]);
  }
  return held;
}

// A new solver on Python arguments (owned_solver): the Solver object that owns it, and the solver
// inside. `cuda_stream`: the caller's stream for CUDA inputs (options::cuda_stream), None: unset.
std::pair<nb::object, solver*> owned_new_solver(nb::handle x, nb::handle y, nb::handle a, nb::handle b, double eps,
                                                double cost_scale, nb::handle initial_f, nb::handle initial_g,
                                                const options& shared_options, nb::handle labels,
                                                std::optional<std::uintptr_t> cuda_stream) {
  problem p;
  std::unique_ptr<bound_solver> held = bound_arguments(x, y, a, b, eps, cost_scale, initial_f, initial_g, labels, p);
  return owned_solver(std::move(held), p, shared_options, cuda_stream);
}

// A new Solver, or the library's exception (bad input) before any Python object exists: the
// binding exposes this factory rather than a throwing __init__ (on the H200 machine, Python 3.12,
// an exception leaving Solver.__init__ crashed the interpreter; a plain function's exceptions take
// nanobind's ordinary translation path).
nb::object new_solver(nb::handle x, nb::handle y, nb::handle a, nb::handle b, double eps, double cost_scale,
                      nb::handle initial_f, nb::handle initial_g, const options& shared_options, nb::handle labels,
                      std::optional<std::uintptr_t> cuda_stream) {
  return owned_new_solver(x, y, a, b, eps, cost_scale, initial_f, initial_g, shared_options, labels, cuda_stream).first;
}

// new_solver and Solver.solve_fields in one crossing for host inputs (no labels, no stream): the
// package's sinkhorn() on NumPy arrays and CPU tensors, where each Python-level step and binding call
// costs microseconds when the caches are cold after a long solve (bench/python_call_overhead.py).
// Returns (solver, *solve_fields(...)).
nb::tuple new_solved(nb::handle x, nb::handle y, nb::handle a, nb::handle b, double eps, double cost_scale,
                     nb::handle initial_f, nb::handle initial_g, const options& opts, bool float32, bool debiased,
                     bool dlpack) {
  const auto [owner, s] =
      owned_new_solver(x, y, a, b, eps, cost_scale, initial_f, initial_g, opts, nb::none(), std::nullopt);
  return solve_fields(*s, float32, debiased, dlpack, owner);
}

// new_solver (with the caller's stream) and solve_into in one crossing, for the package's
// sinkhorn() on CUDA tensors: (solver, iterations, marginal_error, converged, eps, device,
// total_seconds). The C entry of solve_into_entry.cpp is the same call on raw arrays.
nb::tuple new_solved_into(nb::handle x, nb::handle y, nb::handle a, nb::handle b, double eps, double cost_scale,
                          nb::handle initial_f, nb::handle initial_g, const options& shared_options,
                          std::optional<std::uintptr_t> cuda_stream, nb::handle f, nb::handle g, nb::handle f_aa,
                          nb::handle g_bb, nb::handle cost) {
  const auto [owner, s] =
      owned_new_solver(x, y, a, b, eps, cost_scale, initial_f, initial_g, shared_options, nb::none(), cuda_stream);
  return solve_into_handles(*s, f, g, f_aa, g_bb, cost, owner);
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
  py::init_numpy();
  m.attr("DEVICE_ADDRESS") = py::device_address_tag();
  py::export_solve_into_entry(m);

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
      .def_rw("relaxation", &fs::options::relaxation)
      .def_rw("adaptive_relaxation", &fs::options::adaptive_relaxation)
      .def_ro_static("auto_relaxation_start", &fs::options::auto_relaxation_start)
      .def_rw("reach_x", &fs::options::reach_x, nb::arg().none())
      .def_rw("reach_y", &fs::options::reach_y, nb::arg().none())
      .def_rw("debias", &fs::options::debias)
      .def_rw("normalize_weights", &fs::options::normalize_weights)
      .def_rw("primal_terms", &fs::options::primal_terms)
      .def_rw("cpu_threads", &fs::options::cpu_threads);

  nb::class_<fs::result>(m, "Result", "flashsinkhorn::result (result.hpp); f, g, f_aa, g_bb are float64 NumPy copies (f_aa, g_bb empty unless debiased).")
      .def_ro("cost", &fs::result::cost)
      .def_ro("primal_cost", &fs::result::primal_cost)
      .def_ro("relative_entropy", &fs::result::relative_entropy)
      .def_ro("iterations", &fs::result::iterations)
      .def_ro("marginal_error", &fs::result::marginal_error)
      .def_ro("converged", &fs::result::converged)
      .def_ro("relaxation_fell_back", &fs::result::relaxation_fell_back)
      .def_ro("eps", &fs::result::eps)
      .def_ro("device", &fs::result::device)
      .def_prop_ro("f", [](const fs::result& r) { return py::numpy_vector(std::vector<double>(r.f), false); })
      .def_prop_ro("g", [](const fs::result& r) { return py::numpy_vector(std::vector<double>(r.g), false); })
      .def_prop_ro("f_aa", [](const fs::result& r) { return py::numpy_vector(std::vector<double>(r.f_aa), false); })
      .def_prop_ro("g_bb", [](const fs::result& r) { return py::numpy_vector(std::vector<double>(r.g_bb), false); })
      .def("potentials", &py::potentials, "float32"_a, "debias"_a,
           "(f, g, f_aa, g_bb) as NumPy float32 (float32=True) or float64 arrays in one call; f_aa, g_bb None "
           "unless debiased.")
      .def_prop_ro("prepare_seconds", [](const fs::result& r) { return r.time.prepare_seconds; })
      .def_prop_ro("solve_seconds", [](const fs::result& r) { return r.time.solve_seconds; })
      .def_prop_ro("total_seconds", [](const fs::result& r) { return r.time.total_seconds; });

  nb::class_<py::bound_solver>(m, "Solver", "flashsinkhorn::solver (solver.hpp). Outputs are written into `out`.")
      .def(
          "solve",
          [](py::bound_solver& s) {
            nb::gil_scoped_release unlocked;
            return s.get().solve();
          })
      .def(
          "solve_fields",
          [](py::bound_solver& s, bool float32, bool debias, bool dlpack) {
            return py::solve_fields(s.get(), float32, debias, dlpack);
          },
          "float32"_a, "debias"_a, "dlpack"_a,
          "solve() and the result unpacked in one call: (cost, primal_cost, relative_entropy, iterations, "
          "marginal_error, converged, eps, device, total_seconds, f, g, f_aa, g_bb): potentials as in "
          "Result.potentials() and the cost a float, or with dlpack the cost (0-d) and the potentials as host "
          "DLPack capsules of the working dtype.")
      .def(
          "solve_into",
          [](py::bound_solver& s, nb::handle f, nb::handle g, nb::handle f_aa, nb::handle g_bb, nb::handle cost) {
            return py::solve_into_handles(s.get(), f, g, f_aa, g_bb, cost);
          },
          "f"_a, "g"_a, "f_aa"_a.none(), "g_bb"_a.none(), "cost"_a.none(),
          "solver::solve_into: the potentials written into f, g (f_aa, g_bb when debiased) and the value into "
          "the 0-d `cost` (None: not written); CUDA tensors stay on the device. Returns (iterations, "
          "marginal_error, converged, eps, device, total_seconds).")
      .def_prop_ro(
          "transfers", [](const py::bound_solver& s) { return py::transfer_counts(*s.impl); },
          "solver::transfers(): the host<->device copies this solver made, as a dict of counts and bytes.")
      .def("apply_plan", &py::product<&fs::solver::apply_plan>, "v"_a, "out"_a)
      .def("apply_plan_transpose", &py::product<&fs::solver::apply_plan_transpose>, "u"_a, "out"_a)
      .def("barycentric_projection", &py::into_matrix<&fs::solver::barycentric_projection>, "out"_a)
      .def("gradient_x", &py::into_matrix<&fs::solver::gradient_x>, "out"_a)
      .def("gradient_y", &py::into_matrix<&fs::solver::gradient_y>, "out"_a)
      .def("gradient_a", &py::into_vector<&fs::solver::gradient_a>, "out"_a)
      .def("gradient_b", &py::into_vector<&fs::solver::gradient_b>, "out"_a)
      .def("potential_vjp", &py::potential_vjp, "df"_a.none(), "dg"_a.none(), "grad_x"_a.none(), "grad_y"_a.none(),
           "grad_a"_a.none(), "grad_b"_a.none(), "tolerance"_a, "max_iterations"_a, "preconditioner"_a,
           "solver::potential_vjp (potential_vjp.hpp): ∂L/∂(X, Y, a, b) of a loss of (f, g) into the given "
           "arrays; returns (iterations, relative_residual, converged, gauge_defect, plan_passes, "
           "redone_in_float64).")
      .def("hvp", &py::hessian_vector_product, "wrt_y"_a, "direction"_a, "out"_a, "part"_a, "tolerance"_a,
           "max_iterations"_a, "preconditioner"_a,
           "solver::hvp_x / hvp_y (hessian.hpp): H·A into out; returns (cg_iterations, relative_residual, "
           "converged, gauge_defect, plan_passes, redone_in_float64).")
      .def("hvp_self", &py::self_hessian_vector_product, "direction"_a, "out"_a, "part"_a, "tolerance"_a,
           "max_iterations"_a, "preconditioner"_a,
           "solver::hvp_self (hessian.hpp): the Hessian of X -> OT(a, X; a, X) along A into out, on a symmetric "
           "problem; returns (cg_iterations, relative_residual, converged, gauge_defect, plan_passes, "
           "redone_in_float64).")
      .def("hvp_xy", &py::joint_hessian_vector_product, "direction_x"_a.none(), "direction_y"_a.none(),
           "out_x"_a.none(), "out_y"_a.none(), "part"_a, "tolerance"_a, "max_iterations"_a, "preconditioner"_a,
           "solver::hvp_xy (hessian.hpp): H·(A, B) into out_x, out_y (None: zero direction / not computed); "
           "returns (cg_iterations, relative_residual, converged, gauge_defect, plan_passes, "
           "redone_in_float64).")
      .def(
          "primal_objective",
          [](py::bound_solver& s) {
            fs::objective_terms terms;
            {
              nb::gil_scoped_release unlocked;
              terms = s.get().primal_objective();
            }
            return nb::make_tuple(terms.primal_cost, terms.relative_entropy);
          },
          "solver::primal_objective: (primal_cost, relative_entropy) of the solved plan, by one streamed pass.")
      .def_prop_ro("device_name", [](py::bound_solver& s) { return s.get().device_name(); })
      .def_prop_ro(
          "input_addresses",
          [](const py::bound_solver& s) {
            auto address = [](const py::array_argument& a) -> nb::object {
              return a.data == nullptr ? nb::none() : nb::cast(reinterpret_cast<std::uintptr_t>(a.data));
            };
            return nb::make_tuple(address(s.x), address(s.y), address(s.a), address(s.b), address(s.initial_f),
                                  address(s.initial_g));
          },
          "(x, y, a, b, initial_f, initial_g): the address of the memory the core reads for each argument (None "
          "when absent); equal to the caller's buffer when no copy was made. For tests.")
      .def_prop_ro(
          "sizes", [](const py::bound_solver& s) { return nb::make_tuple(s.x.shape[0], s.y.shape[0], s.x.shape[1]); },
          "(n, m, d) of the clouds this solver was built on.");

  m.def("new_solver", &py::new_solver, "x"_a, "y"_a, "a"_a.none(), "b"_a.none(), "eps"_a, "cost_scale"_a,
        "initial_f"_a.none(), "initial_g"_a.none(), "options"_a, "labels"_a.none() = nb::none(),
        "cuda_stream"_a.none() = nb::none(),
        "A Solver for x, y, a, b, initial_f, initial_g: NumPy arrays or DLPack tensors/capsules (read in place "
        "when float32/float64 with a readable layout, else converted once), None for the optional ones.");

  m.def("new_solved", &py::new_solved, "x"_a, "y"_a, "a"_a.none(), "b"_a.none(), "eps"_a, "cost_scale"_a,
        "initial_f"_a.none(), "initial_g"_a.none(), "options"_a, "float32"_a, "debias"_a, "dlpack"_a,
        "new_solver(...) and its solve_fields(float32, debias, dlpack) in one call, for host inputs: (solver, "
        "cost, primal_cost, relative_entropy, iterations, marginal_error, converged, eps, device, total_seconds, "
        "f, g, f_aa, g_bb).");

  m.def("new_solved_into", &py::new_solved_into, "x"_a, "y"_a, "a"_a.none(), "b"_a.none(), "eps"_a,
        "cost_scale"_a, "initial_f"_a.none(), "initial_g"_a.none(), "options"_a, "cuda_stream"_a.none(), "f"_a, "g"_a,
        "f_aa"_a.none(), "g_bb"_a.none(), "cost"_a.none(),
        "new_solver(..., cuda_stream) and Solver.solve_into(f, g, f_aa, g_bb, cost) in one call: (solver, "
        "iterations, marginal_error, converged, eps, device, total_seconds).");

  m.def(
      "device_memory",
      [](int device) {
        const fs::device_memory_statistics s = fs::device_memory(device);
        return nb::make_tuple(s.in_use, s.peak_in_use, s.reserved);
      },
      "device"_a,
      "(in_use, peak_in_use, reserved) bytes of the solvers' device memory pool on GPU `device` "
      "(flashsinkhorn::device_memory); zeros without CUDA or before a solver ran there.");
  m.def("reset_peak_device_memory", &fs::reset_peak_device_memory, "device"_a,
        "Restarts the peak of device_memory(device) from the memory in use now.");

  py::bind_optimizers(m);
  py::bind_progress(m);

  m.def("version", &fs::version, "The C++ library's version, \"major.minor.patch\".");
  m.def("cuda_available", &fs::cuda_available, "True when this build has CUDA and a CUDA device is visible.");
  m.def("empty_cache", &fs::release_cached_device_memory,
        "Gives back to the CUDA driver the device memory that flashsinkhorn's solvers freed and keep for the "
        "next solver (one memory pool per device, up to an eighth of it), as torch.cuda.empty_cache() does "
        "for PyTorch's cache. "
        "No-op without CUDA.");
}
