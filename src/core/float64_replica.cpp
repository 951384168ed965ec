#include "core/float64_replica.hpp"

namespace flashsinkhorn::detail {

float64_replica::float64_replica(const potential_vjp_context& context)
    : inputs_(context.inputs), eps_(context.eps), options_(context.solve_options),
      compute_(context.float64_backend()) {
  options_.precision = precision::fp64;
}

}  // namespace flashsinkhorn::detail
