// Matrix-free optimisers over a parameter vector θ ∈ R^p given by callbacks (value, gradient,
// Hessian-vector product): Lanczos extreme eigenvalues, Newton-CG, Steihaug–Toint trust region, Adam
// and the Adam → second-order hybrid. Host vectors for now; all vector algebra sits behind one small
// internal interface so that a device-resident version can follow (see optim/objective.hpp).
// docs/optimizers.md has the algorithms, their options and an example.
#pragma once

#include "flashsinkhorn/optim/adam.hpp"
#include "flashsinkhorn/optim/forcing.hpp"
#include "flashsinkhorn/optim/hybrid.hpp"
#include "flashsinkhorn/optim/lanczos.hpp"
#include "flashsinkhorn/optim/linear_map_objective.hpp"
#include "flashsinkhorn/optim/newton_cg.hpp"
#include "flashsinkhorn/optim/objective.hpp"
#include "flashsinkhorn/optim/report.hpp"
#include "flashsinkhorn/optim/trust_region.hpp"
