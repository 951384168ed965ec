// Umbrella header: the whole public API.
#pragma once

#include "flashsinkhorn/array_view.hpp"
#include "flashsinkhorn/error.hpp"
#include "flashsinkhorn/hessian.hpp"
#include "flashsinkhorn/label_cost.hpp"
#include "flashsinkhorn/optimize.hpp"
#include "flashsinkhorn/parameter_chain.hpp"
#include "flashsinkhorn/options.hpp"
#include "flashsinkhorn/potential_vjp.hpp"
#include "flashsinkhorn/problem.hpp"
#include "flashsinkhorn/result.hpp"
#include "flashsinkhorn/solver.hpp"
#include "flashsinkhorn/transfer_statistics.hpp"
