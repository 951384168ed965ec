// Solves a two-point problem through the installed package: the cost is s‖x − y‖² exactly.
#include <flashsinkhorn/flashsinkhorn.hpp>

#include <cmath>
#include <cstdio>

int main() {
  const double x[2] = {0.0, 0.0};
  const double y[2] = {3.0, 4.0};
  flashsinkhorn::problem p;
  p.x = flashsinkhorn::host_matrix(x, 1, 2);
  p.y = flashsinkhorn::host_matrix(y, 1, 2);
  p.eps = 0.5;
  flashsinkhorn::options o;
  o.device = flashsinkhorn::device_kind::cpu;
  o.precision = flashsinkhorn::precision::fp64;
  const auto r = flashsinkhorn::solve(p, o);
  std::printf("flashsinkhorn %s: cost %.12g\n", flashsinkhorn::version().c_str(), r.cost);
  return std::abs(r.cost - 25.0) < 1e-9 ? 0 : 1;
}
