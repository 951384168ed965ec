#include "otdd_arguments.hpp"

#include <charconv>

#include "bad_input.hpp"

namespace flashsinkhorn::cli {
namespace {

std::uint64_t parse_seed(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || status != std::errc() || end != text.data() + text.size()) {
    throw bad_input("--seed: '" + std::string(text) + "' is not a non-negative integer");
  }
  return value;
}

std::vector<flag_spec> otdd_flags(otdd_arguments& a) {
  std::vector<flag_spec> specs = {
      {"--data", "DIR", "directory holding mnist/ and fashion-mnist/ (gzipped IDX train files)",
       [&a](std::string_view v) { a.data_dir = std::string(v); }},
      {"--n", "N", "images per dataset (default: all 60000); the first N unless --seed",
       [&a](std::string_view v) { a.subset.count = parse_int("--n", v, 2); }},
      {"--seed", "S", "draw the N images at random (without replacement) with seed S instead",
       [&a](std::string_view v) { a.subset.seed = parse_seed(v); }},
      {"--eps", "E", "entropic temperature (default 0.1)",
       [&a](std::string_view v) { a.eps = parse_finite_double("--eps", v); }},
      {"--scaling", "R", "eps-scaling ratio in (0, 1), GeomLoss's schedule (default 0.5)",
       [&a](std::string_view v) { a.scaling = parse_finite_double("--scaling", v); }},
      {"--iters", "N", "iterations at the target eps after the schedule (default 0: GeomLoss's loop)",
       [&a](std::string_view v) { a.max_iterations = parse_int("--iters", v, 0); }},
      {"--tol", "T", "with --iters: stop when the L1 marginal error <= T (default 1e-3)",
       [&a](std::string_view v) { a.tolerance = parse_finite_double("--tol", v); }},
      {"--check-every", "K", "with --iters: iterations between convergence checks (default 10)",
       [&a](std::string_view v) { a.check_every = parse_int("--check-every", v, 1); }},
      {"--out", "DIR", "write label_distances.npy (the 20x20 W, float64) into DIR",
       [&a](std::string_view v) { a.out_dir = std::string(v); }},
      {"--label-distances-only", "", "stop after W: no solve (with --out: just compute W)",
       [&a](std::string_view) { a.label_distances_only = true; }},
  };
  add_run_flags(specs, a.run);
  return specs;
}

}  // namespace

otdd_arguments parse_otdd_arguments(std::span<const std::string> args) {
  otdd_arguments arguments;
  parse_flags(args, otdd_flags(arguments), [](const std::string& value) {
    throw bad_input("unexpected argument '" + value + "' (the data directory is given with --data DIR)");
  });
  if (arguments.run.help) return arguments;
  if (arguments.data_dir.empty()) {
    throw bad_input("otdd needs --data DIR, the directory holding mnist/ and fashion-mnist/ (see --help)");
  }
  if (!(arguments.eps > 0)) throw bad_input("--eps must be positive (got " + std::to_string(arguments.eps) + ")");
  if (!(arguments.scaling > 0 && arguments.scaling < 1)) {
    throw bad_input("--scaling must lie in (0, 1) (got " + std::to_string(arguments.scaling) + ")");
  }
  if (arguments.subset.seed && !arguments.subset.count) {
    throw bad_input("--seed draws a random subset of --n N images; give --n too");
  }
  return arguments;
}

std::string otdd_usage() {
  otdd_arguments unused;
  std::string text =
      "usage: flashsinkhorn otdd --data DIR [options]\n\n"
      "Optimal transport dataset distance (OTDD, Alvarez-Melis & Fusi 2020) between the MNIST and\n"
      "Fashion-MNIST training sets: the Sinkhorn divergence S_eps (debiased) with the label-augmented\n"
      "cost C = 1/2 (|x - x'|^2 + W[l, l']), where x = (pixel/255 - 0.1307)/0.3081 (d = 784) and W is\n"
      "the squared 2-Wasserstein distance between the class Gaussians (mean, unbiased covariance;\n"
      "Fashion labels are 10..19, so W is 20x20). GeomLoss's symmetric loop and eps-schedule.\n"
      "Reads DIR/mnist/ and DIR/fashion-mnist/train-{images-idx3,labels-idx1}-ubyte.gz.\n"
      "W is computed from the N images used. Prints progress and a summary on stderr and one JSON\n"
      "object on stdout: cost (S_eps), iterations, marginal_error, n, m, d, eps, the seconds of each\n"
      "stage, device, precision and memory (device pool peak; on CUDA the device's used memory).\n\n"
      "options:\n";
  text.append(describe_flags(otdd_flags(unused)));
  text.append(
      "\nOn the CPU keep N small (each iteration costs ~4·N²·d flops): --n 2000 takes seconds.\n"
      "\nexample:\n"
      "  flashsinkhorn otdd --data shared/data --n 60000 --device cuda --precision tf32\n");
  return text;
}

}  // namespace flashsinkhorn::cli
