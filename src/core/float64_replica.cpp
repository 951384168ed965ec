#include "core/float64_replica.hpp"

#include "cpu/cpu_backend.hpp"

namespace flashsinkhorn::detail {

float64_replica::float64_replica(const potential_vjp_context& context)
    : inputs_(context.inputs), eps_(context.eps), options_(context.solve_options) {
  options_.precision = precision::fp64;
  options_.device = device_kind::cpu;
  compute_ = make_cpu_backend(inputs_.kernel, precision::fp64, options_.cpu_threads);
  compute_->write_potential(slot::f, context.compute.read_potential(slot::f));
  compute_->write_potential(slot::g, context.compute.read_potential(slot::g));
}

}  // namespace flashsinkhorn::detail
