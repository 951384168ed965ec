// `flashsinkhorn otdd --data DIR`: the OTDD between the MNIST and Fashion-MNIST training sets
// (SPEC §4) — read and subsample, class Gaussians, the 20×20 label distance W, then the debiased
// solve with the label-augmented cost ½(‖x − x'‖² + W[l, l']) through the public API — and the
// memory it took: the library's device pool peak and, on CUDA, the device's used memory.

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <optional>

#include "atomic_output.hpp"
#include "bad_input.hpp"
#include "commands.hpp"
#include "cuda_memory_probe.hpp"
#include "flashsinkhorn/solver.hpp"
#include "npy.hpp"
#include "option_names.hpp"
#include "otdd_arguments.hpp"
#include "otdd_data.hpp"
#include "peak_rss.hpp"
#include "progress_reporter.hpp"
#include "solve_session.hpp"

namespace flashsinkhorn::cli {
namespace {

using clock_type = std::chrono::steady_clock;

constexpr double kCostScale = 0.5;      // C = ½(‖x − x'‖² + W): GeomLoss's p = 2 convention
constexpr double kFeatureWeight = 1.0;  // λx
constexpr double kLabelWeight = 1.0;    // λy
constexpr std::int32_t kMnistFirstLabel = 0;
constexpr std::int32_t kFashionFirstLabel = kDatasetClasses;  // Fashion-MNIST's labels become 10..19
constexpr int kLabelCount = 2 * kDatasetClasses;
constexpr double kBytesPerMegabyte = 1024.0 * 1024.0;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

// A progress line on stderr (unless --quiet).
[[gnu::format(printf, 2, 3)]] void note(bool quiet, const char* format, ...) {
  if (quiet) return;
  std::fputs("flashsinkhorn: otdd: ", stderr);
  va_list values;
  va_start(values, format);
  std::vfprintf(stderr, format, values);
  va_end(values);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

bool runs_on_cuda(const run_flags& run) {
  return run.device == device_kind::cuda || (run.device == device_kind::automatic && cuda_available());
}

// Peak resident set size of this program (peak_rss.hpp; 0 where the system does not say).
std::int64_t host_peak_bytes() { return peak_resident_bytes().value_or(0); }

struct both_sets {
  labelled_images mnist;
  labelled_images fashion;
};

both_sets load(const otdd_arguments& arguments) {
  both_sets sets;
  sets.mnist = load_training_set(arguments.data_dir, "mnist", kMnistFirstLabel, arguments.subset);
  sets.fashion = load_training_set(arguments.data_dir, "fashion-mnist", kFashionFirstLabel, arguments.subset);
  if (sets.mnist.dim != sets.fashion.dim) {
    throw bad_input(sets.mnist.name + " has images of " + std::to_string(sets.mnist.dim) + " pixels but " +
                    sets.fashion.name + " of " + std::to_string(sets.fashion.dim));
  }
  return sets;
}

std::vector<double> label_distances(const both_sets& sets, const run_flags& run) {
  const auto start = clock_type::now();
  std::vector<class_gaussian> classes = class_gaussians_of(sets.mnist, kMnistFirstLabel, run.threads);
  note(run.quiet, "W: MNIST class Gaussians done, %.1fs", seconds_since(start));
  std::vector<class_gaussian> fashion = class_gaussians_of(sets.fashion, kFashionFirstLabel, run.threads);
  note(run.quiet, "W: Fashion-MNIST class Gaussians done, %.1fs", seconds_since(start));
  classes.insert(classes.end(), std::make_move_iterator(fashion.begin()), std::make_move_iterator(fashion.end()));
  constexpr double kReportSeconds = 2.0;
  double last_report = 0;
  return squared_w2_label_distances(classes, run.threads, [&](int done, int total) {
    const double elapsed = seconds_since(start);
    if (done != total && elapsed - last_report < kReportSeconds) return;
    last_report = elapsed;
    note(run.quiet, "W: %d/%d Bures terms done, %.1fs", done, total, elapsed);
  });
}

void add_optional_bytes(json_object& json, std::string_view key, std::optional<std::size_t> bytes) {
  if (bytes) {
    json.add(key, static_cast<std::int64_t>(*bytes));
  } else {
    json.add_null(key);
  }
}

struct memory_report {
  device_memory_statistics pool;  // zeros on the CPU
  std::optional<cuda_memory_snapshot> before;
  std::optional<cuda_memory_snapshot> after;  // with the solver alive, after the solve
};

void add_subset(json_object& json, const subset_rule& subset) {
  json.add("subset", subset.seed ? "random" : "first");
  if (subset.seed) {
    json.add("seed", static_cast<std::int64_t>(*subset.seed));
  } else {
    json.add_null("seed");
  }
}

// The keys every run ends with, W into --out DIR, and the JSON line on stdout.
void finish(json_object& json, const otdd_arguments& arguments, const std::vector<double>& w, atomic_output* output) {
  json.add("data", arguments.data_dir);
  json.add("version", version());
  if (output != nullptr) {
    output->add("label_distances.npy", encode_npy(w, {kLabelCount, kLabelCount}, dtype::float64));
    output->commit();
    json.add("out", output->directory().string());
  }
  std::printf("%s\n", json.str().c_str());
}

// The OTDD problem of SPEC §4, its solution and the memory the solve took. `p` views the features
// held here (a move keeps a vector's buffer), the labels of `sets` and W: valid while they live.
struct otdd_solve {
  std::vector<float> features32[2];   // X, Y unless fp64
  std::vector<double> features64[2];  // X, Y in fp64
  problem p;
  result r;
  memory_report memory;
};

otdd_solve solve(const both_sets& sets, const std::vector<double>& w, const otdd_arguments& arguments) {
  const run_flags& run = arguments.run;
  // fp64 solves read float64 features; the other modes read float32 (what they compute with).
  otdd_solve out;
  problem& p = out.p;
  if (run.mode == precision::fp64) {
    out.features64[0] = image_features<double>(sets.mnist);
    out.features64[1] = image_features<double>(sets.fashion);
    p.x = host_matrix(out.features64[0].data(), sets.mnist.count, sets.mnist.dim);
    p.y = host_matrix(out.features64[1].data(), sets.fashion.count, sets.fashion.dim);
  } else {
    out.features32[0] = image_features<float>(sets.mnist);
    out.features32[1] = image_features<float>(sets.fashion);
    p.x = host_matrix(out.features32[0].data(), sets.mnist.count, sets.mnist.dim);
    p.y = host_matrix(out.features32[1].data(), sets.fashion.count, sets.fashion.dim);
  }
  p.eps = arguments.eps;
  p.cost_scale = kCostScale;
  p.labels.x_labels = host_labels(sets.mnist.labels.data(), sets.mnist.count);
  p.labels.y_labels = host_labels(sets.fashion.labels.data(), sets.fashion.count);
  p.labels.label_distances = host_matrix(w.data(), kLabelCount, kLabelCount);
  p.labels.feature_weight = kFeatureWeight;
  p.labels.label_weight = kLabelWeight;

  options o;
  o.solver = solver_kind::symmetric;
  o.scaling = arguments.scaling;
  o.debias = true;
  o.max_iterations = arguments.max_iterations;
  o.tolerance = arguments.tolerance;
  o.check_every = arguments.check_every;
  o.primal_terms = false;  // S_ε only; the primal terms would cost one more pass over the plan
  apply_run_flags(run, o);
  progress_reporter reporter(run.quiet, o.tolerance);
  o.on_progress = [&reporter](const progress& step) { reporter.report(step); };

  memory_report& memory = out.memory;
  const bool cuda = runs_on_cuda(run);
  if (cuda) {
    memory.before = cuda_memory_in_use(run.cuda_device);
    reset_peak_device_memory(run.cuda_device);
  }
  {
    solver s(p, o);
    out.r = s.solve();
    if (cuda) {
      memory.after = cuda_memory_in_use(run.cuda_device);
      memory.pool = device_memory(run.cuda_device);
    }
  }
  return out;
}

void print_summary(const result& r, const memory_report& memory, std::int64_t points, double label_distance_seconds,
                   precision mode) {
  std::fprintf(stderr,
               "flashsinkhorn: otdd: S_eps(MNIST, Fashion-MNIST) = %.6g  (n = m = %lld, eps %g, %d iterations, "
               "marginal error %.2e)\n"
               "flashsinkhorn: otdd: W %.2fs, solve %.2fs (+%.2fs prepare) on %s, %s\n"
               "flashsinkhorn: otdd: device pool peak %.1f MiB; host peak RSS %.1f MiB",
               r.cost, static_cast<long long>(points), r.eps, r.iterations, r.marginal_error, label_distance_seconds,
               r.time.solve_seconds, r.time.prepare_seconds, r.device.c_str(), name_of(mode).c_str(),
               static_cast<double>(memory.pool.peak_in_use) / kBytesPerMegabyte,
               static_cast<double>(host_peak_bytes()) / kBytesPerMegabyte);
  if (memory.before && memory.after) {
    std::fprintf(stderr, "; CUDA used %.1f -> %.1f MiB (of %.1f)",
                 static_cast<double>(memory.before->used_bytes) / kBytesPerMegabyte,
                 static_cast<double>(memory.after->used_bytes) / kBytesPerMegabyte,
                 static_cast<double>(memory.after->total_bytes) / kBytesPerMegabyte);
  }
  std::fputc('\n', stderr);
}

}  // namespace

void run_otdd_command(std::span<const std::string> args) {
  const otdd_arguments arguments = parse_otdd_arguments(args);
  if (printed_usage(arguments.run, otdd_usage)) return;
  const run_flags& run = arguments.run;
  const auto start = clock_type::now();
  std::unique_ptr<atomic_output> output;
  if (arguments.out_dir) output = std::make_unique<atomic_output>(*arguments.out_dir);  // usable before the work

  const both_sets sets = load(arguments);
  const double load_seconds = seconds_since(start);
  note(run.quiet, "read %lld MNIST and %lld Fashion-MNIST images (d = %lld) in %.2fs",
       static_cast<long long>(sets.mnist.count), static_cast<long long>(sets.fashion.count),
       static_cast<long long>(sets.mnist.dim), load_seconds);

  const auto distances_start = clock_type::now();
  const std::vector<double> w = label_distances(sets, run);
  const double label_distance_seconds = seconds_since(distances_start);
  note(run.quiet, "label distances W (20x20) in %.2fs", label_distance_seconds);
  if (arguments.label_distances_only) {
    json_object json;
    json.add("n", sets.mnist.count);
    json.add("m", sets.fashion.count);
    json.add("d", sets.mnist.dim);
    json.add("labels", kLabelCount);
    add_subset(json, arguments.subset);
    json.add("load_seconds", load_seconds);
    json.add("label_distance_seconds", label_distance_seconds);
    json.add("seconds", seconds_since(start));
    json.add("host_peak_bytes", host_peak_bytes());
    finish(json, arguments, w, output.get());
    return;
  }

  const otdd_solve solved = solve(sets, w, arguments);
  const result& r = solved.r;
  const memory_report& memory = solved.memory;
  const double total_seconds = seconds_since(start);

  json_object json;
  json.add("cost", r.cost);
  add_solve_summary(json, solved.p, r);
  json.add("labels", kLabelCount);
  json.add("device", r.device);
  json.add("precision", name_of(run.mode));
  json.add("solver", name_of(solver_kind::symmetric));
  json.add("scaling", arguments.scaling);
  json.add("debias", true);
  json.add("cost_scale", kCostScale);
  json.add("max_iterations", arguments.max_iterations);
  json.add("tolerance", arguments.tolerance);
  add_subset(json, arguments.subset);
  json.add("load_seconds", load_seconds);
  json.add("label_distance_seconds", label_distance_seconds);
  json.add("prepare_seconds", r.time.prepare_seconds);
  json.add("solve_seconds", r.time.solve_seconds);
  json.add("seconds", total_seconds);
  json.add("device_peak_bytes", static_cast<std::int64_t>(memory.pool.peak_in_use));
  json.add("device_reserved_bytes", static_cast<std::int64_t>(memory.pool.reserved));
  add_optional_bytes(json, "cuda_used_before_bytes",
                     memory.before ? std::optional<std::size_t>(memory.before->used_bytes) : std::nullopt);
  add_optional_bytes(json, "cuda_used_after_bytes",
                     memory.after ? std::optional<std::size_t>(memory.after->used_bytes) : std::nullopt);
  add_optional_bytes(json, "cuda_total_bytes",
                     memory.after ? std::optional<std::size_t>(memory.after->total_bytes) : std::nullopt);
  json.add("host_peak_bytes", host_peak_bytes());

  if (!run.quiet) print_summary(r, memory, sets.mnist.count, label_distance_seconds, run.mode);
  finish(json, arguments, w, output.get());
}

}  // namespace flashsinkhorn::cli
