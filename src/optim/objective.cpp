#include "flashsinkhorn/optim/objective.hpp"

#include <vector>

#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::optim {

symmetric_operator hessian_at(const objective& f, const_span theta) {
  if (!f.hvp) throw invalid_argument("hessian_at needs objective.hvp (the Hessian-vector product); it is empty");
  return [hvp = f.hvp, point = std::vector<double>(theta.begin(), theta.end())](const_span v, mutable_span product) {
    hvp(point, v, product);
  };
}

}  // namespace flashsinkhorn::optim
