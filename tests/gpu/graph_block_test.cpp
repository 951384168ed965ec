// Iteration blocks on the CUDA backend (backend::run_block → graph_cache.hpp): a block replayed
// as a CUDA graph must leave exactly the state that the same steps issued one by one leave.
// Each test drives two CUDA backends on the same problem through the same block pattern — one
// through run_block, one by direct calls — and compares every slot and every error read; then it
// checks how the blocks ran (cuda_block_stats): plain on the first sighting of a sequence, captured
// on the second, one graph launch on every later one.
//
// ε is small against the cost (C/ε ≈ 100) and the runs short, so the iterates are far from the
// fixed point: one iteration more or less already moves the potentials by 15–30× the float
// tolerance below (measured with the CPU backend in place of both), so a graph replayed with the
// wrong buffers (a slot-swap parity mix-up), a stale ε or the error flag on the wrong iteration
// cannot pass. The tolerances allow for nothing but a different summation order (the same kernels
// run with the same arguments; the error atomics and any split-key reduction may reorder sums).
// Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/prepare.hpp"
#include "core/prepared_cloud.hpp"
#include "cuda/cuda_backend.hpp"
#include "flashsinkhorn/error.hpp"
#include "gpu/gpu_test_support.hpp"

namespace {

using flashsinkhorn::precision;
using namespace flashsinkhorn::detail;

constexpr slot kAllSlots[] = {slot::f, slot::g, slot::f_next, slot::g_next,
                              slot::f_aa, slot::g_bb, slot::f_aa_next, slot::g_bb_next};

std::string mode_name(precision mode) { return std::string(flashsinkhorn::to_string(mode)); }

prepared_cloud random_cloud(std::int64_t count, std::int64_t dim, std::mt19937_64& rng, double shift) {
  prepared_cloud c;
  c.count = count;
  c.dim = dim;
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.1, 1.1);
  c.points.resize(static_cast<std::size_t>(count * dim));
  for (auto& v : c.points) v = normal(rng) + shift;
  c.weights.resize(static_cast<std::size_t>(count));
  double total = 0;
  for (auto& w : c.weights) total += (w = uniform(rng));
  c.log_weights.resize(c.weights.size());
  for (std::size_t i = 0; i < c.weights.size(); ++i) {
    c.weights[i] /= total;
    c.log_weights[i] = std::log(c.weights[i]);
  }
  return c;
}

struct test_problem {
  prepared_problem problem;
  double scale = 1;  // s·(max‖p‖ + max‖q‖)²: the largest cost
  double eps = 1;
};

test_problem make_test_problem(std::int64_t n, std::int64_t m, std::int64_t d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  test_problem t;
  t.problem.x = random_cloud(n, d, rng, 0.0);
  t.problem.y = random_cloud(m, d, rng, 0.5);
  t.problem.cost_scale = 1;
  centre_clouds(t.problem);
  t.scale = gpu_tests::largest_cost(t.problem);
  t.eps = 2.0 * static_cast<double>(d) / 100;  // mean cost ≈ 2d: C/ε ≈ 100
  return t;
}

// One iteration of a block pattern: iteration i of `count`, at `eps`.
using pattern = std::function<void(backend&, double eps, int i, int count)>;

// Alternating, the error on the last g-step of the block (the solver loop's block).
void alternating(backend& b, double eps, int i, int count) {
  b.softmin({side::x, side::y, slot::g, slot::f, slot::f, eps, 1, 1, false});
  b.softmin({side::y, side::x, slot::f, slot::g, slot::g, eps, 0.9, 1, i + 1 == count});
}

// Symmetric with debiasing (three slot swaps per iteration, so a block of odd length ends on the
// other swap parity) and a device copy at the end of the block.
void symmetric_debiased(backend& b, double eps, int i, int count) {
  const bool last = i + 1 == count;
  b.softmin({side::x, side::y, slot::g, slot::f, slot::f_next, eps, 1, 0.5, last});
  b.softmin({side::y, side::x, slot::f, slot::g, slot::g_next, eps, 1, 0.5, last});
  b.swap_potentials(slot::f, slot::f_next);
  b.swap_potentials(slot::g, slot::g_next);
  b.softmin({side::x, side::x, slot::f_aa, slot::f_aa, slot::f_aa_next, eps, 1, 0.5, false});
  b.swap_potentials(slot::f_aa, slot::f_aa_next);
  if (last) b.copy_potential(slot::g_bb, slot::g);
}

struct run_record {
  std::vector<double> errors;                  // one take_error per block
  std::vector<std::vector<double>> potentials;  // every slot, at the end
};

// A cold start, then blocks[k] iterations at eps[k] for each k, each followed by a read.
run_record drive(backend& b, const pattern& body, const std::vector<int>& blocks, const std::vector<double>& eps,
                 bool through_run_block) {
  b.write_potential(slot::g, {});
  b.softmin({side::x, side::y, std::nullopt, std::nullopt, slot::f, eps.front(), 1, 1, false});
  b.softmin({side::x, side::x, std::nullopt, std::nullopt, slot::f_aa, eps.front(), 1, 1, false});
  run_record r;
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    const int count = blocks[k];
    const double e = eps[k];
    auto iteration = [&](int i) { body(b, e, i, count); };
    if (through_run_block) {
      b.run_block(count, iteration);
    } else {
      for (int i = 0; i < count; ++i) iteration(i);
    }
    r.errors.push_back(b.take_error());
  }
  for (slot s : kAllSlots) r.potentials.push_back(b.read_potential(s));
  return r;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double diff = std::abs(a[i] - b[i]);
    worst = std::isnan(diff) ? std::numeric_limits<double>::infinity() : std::max(worst, diff);
  }
  return worst;
}

void expect_same_run(const run_record& blocks, const run_record& plain, precision mode, double scale,
                     int half_steps) {
  // Per half-step: float64 rounding, or a few float32 roundings in another order.
  const double tol = half_steps * (mode == precision::fp64 ? 1e-13 : 4 * std::ldexp(1.0, -24)) * scale;
  for (std::size_t s = 0; s < plain.potentials.size(); ++s)
    EXPECT_LE(max_abs_diff(blocks.potentials[s], plain.potentials[s]), tol) << "slot " << s;
  ASSERT_EQ(blocks.errors.size(), plain.errors.size());
  const double rel = mode == precision::fp64 ? 1e-9 : 1e-3;
  for (std::size_t k = 0; k < plain.errors.size(); ++k) {
    EXPECT_GT(plain.errors[k], 0) << "block " << k << " accumulated no error";
    EXPECT_NEAR(blocks.errors[k], plain.errors[k], rel * plain.errors[k]) << "error read after block " << k;
  }
}

int total(const std::vector<int>& blocks) {
  int sum = 0;
  for (int b : blocks) sum += b;
  return sum;
}

// A block pattern and the half-steps one of its iterations runs (for the tolerance).
struct block_pattern {
  void (*body)(backend&, double, int, int);
  int half_steps_per_iteration;
};
constexpr block_pattern kAlternating{alternating, 2};
constexpr block_pattern kSymmetricDebiased{symmetric_debiased, 3};

// The blocks through run_block on `under_test`, and the same iterations called one by one on a
// fresh backend: the same potentials and error reads (expect_same_run). Returns `under_test`'s
// block statistics.
cuda_block_statistics expect_blocks_match_plain_steps(backend& under_test, const test_problem& t, precision mode,
                                                      const block_pattern& how, const std::vector<int>& blocks,
                                                      const std::vector<double>& eps) {
  auto plain = make_cuda_backend(t.problem, mode, 0);
  const run_record a = drive(under_test, how.body, blocks, eps, true);
  const run_record b = drive(*plain, how.body, blocks, eps, false);
  expect_same_run(a, b, mode, t.scale, how.half_steps_per_iteration * total(blocks) + 2);
  EXPECT_EQ(cuda_block_stats(*plain).plain_blocks, 0);
  return cuda_block_stats(under_test);
}

struct block_case {
  std::int64_t n, m, d;
};

void PrintTo(const block_case& c, std::ostream* os) { *os << "n=" << c.n << " m=" << c.m << " d=" << c.d; }

class graph_blocks : public gpu_tests::needs_gpu<::testing::TestWithParam<block_case>> {};

// n = 7 against 3,000 keys: the split-key path (partial states merged by each row block's last CTA, its
// split counts reset in the kernel) inside the graph, replayed.
INSTANTIATE_TEST_SUITE_P(sizes, graph_blocks,
                         ::testing::Values(block_case{300, 457, 5}, block_case{7, 3000, 3},
                                           block_case{2000, 1500, 64}),
                         [](const ::testing::TestParamInfo<block_case>& param_info) {
                           const block_case& c = param_info.param;
                           return "n" + std::to_string(c.n) + "_m" + std::to_string(c.m) + "_d" + std::to_string(c.d);
                         });

// The solver loop's alternating blocks: every full block is the same sequence; the last is shorter.
TEST_P(graph_blocks, alternating_blocks_replay_the_plain_steps) {
  const block_case c = GetParam();
  const test_problem t = make_test_problem(c.n, c.m, c.d, 11 + c.n);
  const std::vector<int> blocks{5, 5, 5, 5, 2};
  const std::vector<double> eps(blocks.size(), t.eps);
  for (precision mode : {precision::fp64, precision::fp32, precision::tf32, precision::bf16}) {
    SCOPED_TRACE(mode_name(mode));
    auto graphs = make_cuda_backend(t.problem, mode, 0);
    const cuda_block_statistics stats =
        expect_blocks_match_plain_steps(*graphs, t, mode, kAlternating, blocks, eps);
    EXPECT_EQ(stats.graphs_unavailable, "");
    EXPECT_EQ(stats.plain_blocks, 2);    // the first 5-block and the 2-block
    EXPECT_EQ(stats.captures, 1);        // the second 5-block
    EXPECT_EQ(stats.graph_launches, 3);  // 5-blocks two to four
  }
}

// Blocks of 3 symmetric iterations end on the other swap parity: two sequences alternate, each
// with its own graph.
TEST_P(graph_blocks, odd_symmetric_blocks_alternate_two_graphs) {
  const block_case c = GetParam();
  const test_problem t = make_test_problem(c.n, c.m, c.d, 23 + c.n);
  const std::vector<int> blocks(7, 3);
  const std::vector<double> eps(blocks.size(), t.eps);
  for (precision mode : {precision::fp64, precision::fp32, precision::tf32, precision::bf16}) {
    SCOPED_TRACE(mode_name(mode));
    auto graphs = make_cuda_backend(t.problem, mode, 0);
    const cuda_block_statistics stats =
        expect_blocks_match_plain_steps(*graphs, t, mode, kSymmetricDebiased, blocks, eps);
    EXPECT_EQ(stats.graphs_unavailable, "");
    EXPECT_EQ(stats.plain_blocks, 2);    // first sightings of parity A and B
    EXPECT_EQ(stats.captures, 2);        // their second sightings
    EXPECT_EQ(stats.graph_launches, 5);  // blocks 3 to 7
  }
}

// A different ε is a different sequence: captured anew on its second sighting; the cache keeps the
// 4 most recently used sequences, so a graph evicted while it may still run is freed safely and
// its sequence starts over.
TEST_P(graph_blocks, changed_scalars_are_recaptured_and_old_graphs_evicted) {
  const block_case c = GetParam();
  const test_problem t = make_test_problem(c.n, c.m, c.d, 37 + c.n);
  const double e1 = t.eps, e2 = 1.1 * t.eps, e3 = 1.2 * t.eps, e4 = 1.3 * t.eps, e5 = 1.4 * t.eps, e6 = 1.5 * t.eps;
  const std::vector<double> eps{e1, e1, e1, e2, e2, e1, e3, e4, e5, e6, e1, e1};
  const std::vector<int> blocks(eps.size(), 2);
  for (precision mode : {precision::fp64, precision::tf32}) {
    SCOPED_TRACE(mode_name(mode));
    auto graphs = make_cuda_backend(t.problem, mode, 0);
    const cuda_block_statistics stats =
        expect_blocks_match_plain_steps(*graphs, t, mode, kAlternating, blocks, eps);
    EXPECT_EQ(stats.graphs_unavailable, "");
    // plain: e1, e2, e3, e4, e5, e6 and e1 again (evicted by e5/e6); graphs: e1, e2, e1 again.
    EXPECT_EQ(stats.plain_blocks, 7);
    EXPECT_EQ(stats.captures, 3);
    EXPECT_EQ(stats.graph_launches, 5);
  }
}

// The legacy default stream cannot be captured: blocks run plain, with the same results.
TEST_P(graph_blocks, legacy_stream_runs_blocks_plain) {
  const block_case c = GetParam();
  const test_problem t = make_test_problem(c.n, c.m, c.d, 41 + c.n);
  const std::vector<int> blocks(4, 3);
  const std::vector<double> eps(blocks.size(), t.eps);
  const precision mode = precision::tf32;
  auto legacy = make_cuda_backend(t.problem, mode, 0, cudaStreamLegacy);
  const cuda_block_statistics stats =
      expect_blocks_match_plain_steps(*legacy, t, mode, kSymmetricDebiased, blocks, eps);
  EXPECT_NE(stats.graphs_unavailable, "");
  EXPECT_EQ(stats.plain_blocks, 4);
  EXPECT_EQ(stats.captures, 0);
  EXPECT_EQ(stats.graph_launches, 0);
}

// A caller's stream carries all of the backend's work, graphs included, and outlives it.
TEST_P(graph_blocks, caller_stream) {
  const block_case c = GetParam();
  const test_problem t = make_test_problem(c.n, c.m, c.d, 43 + c.n);
  const std::vector<int> blocks(4, 4);
  const std::vector<double> eps(blocks.size(), t.eps);
  const precision mode = precision::bf16;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  {
    auto mine = make_cuda_backend(t.problem, mode, 0, stream);
    const cuda_block_statistics stats =
        expect_blocks_match_plain_steps(*mine, t, mode, kAlternating, blocks, eps);
    EXPECT_EQ(stats.graphs_unavailable, "");
    EXPECT_EQ(stats.plain_blocks, 1);
    EXPECT_EQ(stats.captures, 1);
    EXPECT_EQ(stats.graph_launches, 3);
  }
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// Reads and uploads inside a block are contract violations (exceptions, not hangs or crashes); a
// block that throws while being recorded runs nothing and leaves the slots as they were.
TEST(graph_blocks_errors, misuse_inside_a_block) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const test_problem t = make_test_problem(50, 40, 3, 5);
  auto b = make_cuda_backend(t.problem, precision::fp64, 0);
  b->softmin({side::x, side::y, std::nullopt, std::nullopt, slot::f, t.eps, 1, 1, false});
  const std::vector<double> f = b->read_potential(slot::f);
  const std::vector<double> f_next = b->read_potential(slot::f_next);
  auto swap_then = [&](const std::function<void()>& misuse) {
    return [&, misuse](int) {
      b->swap_potentials(slot::f, slot::f_next);
      b->softmin({side::y, side::x, slot::f, std::nullopt, slot::g, t.eps, 1, 1, false});
      misuse();
    };
  };
  EXPECT_THROW(b->run_block(2, swap_then([&] { (void)b->take_error(); })), flashsinkhorn::error);
  EXPECT_THROW(b->run_block(2, swap_then([&] { (void)b->read_potential(slot::g); })), flashsinkhorn::error);
  EXPECT_THROW(b->run_block(2, swap_then([&] { b->write_potential(slot::g, {}); })), flashsinkhorn::error);
  EXPECT_THROW(b->run_block(2, swap_then([&] { b->run_block(1, [](int) {}); })), flashsinkhorn::error);
  EXPECT_THROW(b->run_block(2, swap_then([&] {
                 b->softmin({side::x, side::y, slot::g, std::nullopt, slot::g, t.eps, 1, 1, false});  // wrong side
               })),
               flashsinkhorn::invalid_argument);
  EXPECT_EQ(max_abs_diff(b->read_potential(slot::f), f), 0.0);
  EXPECT_EQ(max_abs_diff(b->read_potential(slot::f_next), f_next), 0.0);
  EXPECT_EQ(b->read_potential(slot::g), std::vector<double>(40, 0.0));  // no g-step ran
  // The backend still works, through blocks too.
  b->run_block(1, [&](int) { b->softmin({side::y, side::x, slot::f, slot::g, slot::g, t.eps, 1, 1, true}); });
  EXPECT_GT(b->take_error(), 0);
}

}  // namespace
