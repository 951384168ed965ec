// `flashsinkhorn demo`: a built-in problem that needs no files — three Gaussian blobs carried
// onto a ring in d = 3 — solved with GeomLoss-style ε-scaling. Sizes are chosen so the CPU run
// takes a few seconds on two cores.
#include <cstdio>

#include "commands.hpp"
#include "demo_arguments.hpp"
#include "demo_clouds.hpp"
#include "flashsinkhorn/solver.hpp"
#include "solve_session.hpp"

namespace flashsinkhorn::cli {
namespace {

constexpr std::int64_t kCpuPoints = 5000;
constexpr std::int64_t kCudaPoints = 100000;
constexpr std::uint64_t kSourceSeed = 20240601;
constexpr std::uint64_t kTargetSeed = 20240602;
constexpr double kEps = 0.1;           // clouds have unit scale: blur √ε ≈ 0.32
constexpr double kScaling = 0.5;       // ε-schedule ratio (GeomLoss's default)
constexpr double kTolerance = 1e-3;
constexpr int kMaxIterations = 200;

bool runs_on_cuda(const run_flags& run) {
  return run.device == device_kind::cuda ||
         (run.device == device_kind::automatic && cuda_available());
}

}  // namespace

void run_demo_command(std::span<const std::string> args) {
  const demo_arguments arguments = parse_demo_arguments(args);
  if (printed_usage(arguments.run, demo_usage)) return;
  const std::int64_t points = arguments.points.value_or(runs_on_cuda(arguments.run) ? kCudaPoints : kCpuPoints);
  const point_cloud source = sample_blobs(points, kSourceSeed);
  const point_cloud target = sample_ring(points, kTargetSeed);

  problem p;
  p.x = host_matrix(source.points.data(), source.rows, source.dims);
  p.y = host_matrix(target.points.data(), target.rows, target.dims);
  p.eps = kEps;
  options o;
  o.scaling = kScaling;
  o.tolerance = kTolerance;
  o.max_iterations = kMaxIterations;
  apply_run_flags(arguments.run, o);

  json_object json = solve_and_describe(p, o, arguments.run, output_request{});
  json.add("demo", true);
  std::printf("%s\n", json.str().c_str());
}

}  // namespace flashsinkhorn::cli
