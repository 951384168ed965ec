#include "bound_solver.hpp"

namespace flashsinkhorn::python {

problem problem_of(const bound_solver& held, double eps, double cost_scale) {
  problem p;
  p.x = as_matrix(held.x, "X");
  p.y = as_matrix(held.y, "Y");
  if (held.a.present) p.a = as_vector(held.a, "a");
  if (held.b.present) p.b = as_vector(held.b, "b");
  if (held.initial_f.present) p.initial_f = as_vector(held.initial_f, "initial_f");
  if (held.initial_g.present) p.initial_g = as_vector(held.initial_g, "initial_g");
  p.eps = eps;
  p.cost_scale = cost_scale;
  return p;
}

std::pair<nb::object, solver*> owned_solver(std::unique_ptr<bound_solver> held, const problem& p,
                                            const options& shared_options, std::optional<std::uintptr_t> cuda_stream) {
  options with_stream;
  if (cuda_stream) {
    with_stream = shared_options;
    with_stream.cuda_stream = cuda_stream;
  }
  const options& opts = cuda_stream ? with_stream : shared_options;
  {
    nb::gil_scoped_release unlocked;
    held->impl.emplace(p, opts);
  }
  solver* s = &held->get();
  return {nb::cast(held.release(), nb::rv_policy::take_ownership), s};
}

}  // namespace flashsinkhorn::python
