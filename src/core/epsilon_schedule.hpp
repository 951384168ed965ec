// GeomLoss's ε-scaling schedule for p = 2 (geomloss.sinkhorn_divergence.epsilon_schedule):
//   [diam²] + [exp(e) for e in arange(2·log diam, 2·log blur, 2·log scaling)] + [blur²],  blur = √ε,
// i.e. ε starts at diam² and shrinks by scaling² per step down to the target ε. For identical
// single-point clouds (diam = 0) the schedule is [ε, ε], where GeomLoss would take log 0.
#pragma once

#include <vector>

namespace flashsinkhorn::detail {

std::vector<double> epsilon_schedule(double diameter, double eps, double scaling);

}  // namespace flashsinkhorn::detail
