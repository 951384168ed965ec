#include "optim/newton_state.hpp"

#include <utility>

#include "optim/iteration_bookkeeping.hpp"
#include "optim/validate_options.hpp"

namespace flashsinkhorn::optim::detail {
namespace {

std::size_t checked_dimension(const objective& f, std::size_t dimension, std::string_view method) {
  validate_objective(f, dimension, true, method);
  return dimension;
}

}  // namespace

newton_state::newton_state(const objective& f, std::vector<double> theta0, const forcing_options& forcing_options,
                           double gradient_tolerance, std::string_view method)
    : evaluate(f, checked_dimension(f, theta0.size(), method)),
      gradient(theta0.size()),
      step(theta0.size()),
      trial(theta0.size()),
      result(start_at(evaluate, std::move(theta0), gradient, method)),
      forcing(forcing_options, gradient_tolerance, result.gradient_norm),
      hessian([this](const_span v, mutable_span product) { evaluate.hvp(result.theta, v, product); }) {}

}  // namespace flashsinkhorn::optim::detail
