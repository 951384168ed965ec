// The Eisenstat–Walker forcing terms η_k of forcing.hpp, as a sequence advanced once per accepted
// iterate.
#pragma once

#include "flashsinkhorn/optim/forcing.hpp"

namespace flashsinkhorn::optim::detail {

class forcing_sequence {
 public:
  // gradient_norm: ‖g_0‖ at the initial iterate.
  forcing_sequence(const forcing_options& options, double gradient_tolerance, double gradient_norm);

  [[nodiscard]] double eta() const noexcept { return eta_; }
  // Moves to the next iterate, whose gradient norm is gradient_norm.
  void accept(double gradient_norm);

 private:
  [[nodiscard]] double safeguarded(double eta, double gradient_norm) const;

  forcing_options options_;
  double gradient_tolerance_;
  double previous_gradient_norm_;
  double eta_;
};

}  // namespace flashsinkhorn::optim::detail
