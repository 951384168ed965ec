// The solver loop against the backend contract (src/core/backend.hpp), through a spy backend that
// logs every call: the iterations at the target ε come in blocks of check_every (the last one
// shorter) through run_block, each followed by exactly one read (take_error); nothing reads
// inside a block; only a block's last iteration accumulates the error; the ε schedule and the
// final symmetric extrapolation run outside blocks; the loop stops after the block that converged.
#include <gtest/gtest.h>

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/solver_loop.hpp"

namespace {

using namespace flashsinkhorn::detail;
using flashsinkhorn::solver_kind;

class spy_backend final : public backend {
 public:
  std::vector<std::string> log;  // "block 5", "read", "S" (softmin), "S+" (with error), "swap"
  std::vector<int> block_sizes;
  std::deque<double> errors;  // what take_error returns, in order (then 1)

  [[nodiscard]] std::string name() const override { return "spy"; }
  void softmin(const softmin_step& step) override { log.push_back(step.accumulate_error ? "S+" : "S"); }
  double take_error() override {
    expect_outside_block("take_error");
    log.push_back("read");
    if (errors.empty()) return 1;
    const double e = errors.front();
    errors.pop_front();
    return e;
  }
  void write_potential(slot, const std::vector<double>&) override {
    expect_outside_block("write_potential");
    log.push_back("write");
  }
  [[nodiscard]] std::vector<double> read_potential(slot) const override {
    expect_outside_block("read_potential");
    return {};
  }
  void copy_potential(slot, slot) override { log.push_back("copy"); }
  void swap_potentials(slot, slot) override { log.push_back("swap"); }
  [[nodiscard]] plan_rows_result plan_rows(const plan_rows_request&) const override {
    expect_outside_block("plan_rows");
    return {};
  }
  [[nodiscard]] plan_rows_result plan_quadratic_rows(const plan_quadratic_request&) const override {
    expect_outside_block("plan_quadratic_rows");
    return {};
  }
  void point_gradient(const point_gradient_request&) override { expect_outside_block("point_gradient"); }
  void read_point_gradient(side, const flashsinkhorn::mutable_matrix_view&) const override {
    expect_outside_block("read_point_gradient");
  }
  void run_block(int count, const std::function<void(int)>& iteration) override {
    EXPECT_FALSE(in_block_) << "nested run_block";
    block_sizes.push_back(count);
    log.push_back("block " + std::to_string(count));
    in_block_ = true;
    backend::run_block(count, iteration);
    in_block_ = false;
  }

 private:
  void expect_outside_block(const char* what) const { EXPECT_FALSE(in_block_) << what << " inside run_block"; }
  bool in_block_ = false;
};

loop_config config_of(solver_kind solver, int iterations, int check_every) {
  loop_config c;
  c.solver = solver;
  c.eps = 0.5;
  c.max_iterations = iterations;
  c.check_every = check_every;
  c.tolerance = 0;
  return c;
}

// The log entries between two marks, e.g. one block's steps.
std::vector<std::string> slice(const std::vector<std::string>& log, std::size_t from, std::size_t to) {
  return {log.begin() + static_cast<std::ptrdiff_t>(from), log.begin() + static_cast<std::ptrdiff_t>(to)};
}

TEST(SolverLoop, AlternatingRunsBlocksOfCheckEveryWithOneReadAfterEach) {
  spy_backend spy;
  const loop_outcome out = run_sinkhorn_loop(spy, config_of(solver_kind::alternating, 23, 5));
  EXPECT_EQ(out.iterations, 23);
  EXPECT_EQ(spy.block_sizes, (std::vector<int>{5, 5, 5, 5, 3}));
  // Cold start writes zeros, then per block: its steps (the error only on the last g-step), a read.
  std::vector<std::string> expected{"write", "write"};
  for (int count : spy.block_sizes) {
    expected.push_back("block " + std::to_string(count));
    for (int i = 0; i < count; ++i) {
      expected.push_back("S");
      expected.push_back(i + 1 == count ? "S+" : "S");
    }
    expected.push_back("read");
  }
  EXPECT_EQ(spy.log, expected);
}

TEST(SolverLoop, ScheduleAndExtrapolationRunOutsideBlocks) {
  spy_backend spy;
  loop_config c = config_of(solver_kind::symmetric, 4, 3);
  c.schedule = {4.0, 2.0, 1.0};
  const loop_outcome out = run_sinkhorn_loop(spy, c);
  EXPECT_EQ(out.iterations, 7);
  EXPECT_EQ(spy.block_sizes, (std::vector<int>{3, 1}));
  // init (2 softmins), 3 schedule iterations (2 softmins + 2 swaps each), then the blocks.
  const std::size_t first_block = 2 + 3 * 4;
  ASSERT_GT(spy.log.size(), first_block);
  EXPECT_EQ(spy.log[first_block], "block 3");
  for (std::size_t k = 0; k < first_block; ++k) EXPECT_NE(spy.log[k], "read") << "a read before the first block";
  // Symmetric steps inside a block: both half-steps accumulate the error in the last iteration.
  EXPECT_EQ(slice(spy.log, first_block + 1, first_block + 13),
            (std::vector<std::string>{"S", "S", "swap", "swap", "S", "S", "swap", "swap", "S+", "S+", "swap", "swap"}));
  // After the last read: the extrapolation (2 softmins, 2 swaps), outside any block.
  EXPECT_EQ(slice(spy.log, spy.log.size() - 5, spy.log.size()),
            (std::vector<std::string>{"read", "S", "S", "swap", "swap"}));
}

TEST(SolverLoop, StopsAfterTheBlockThatConverged) {
  spy_backend spy;
  spy.errors = {1.0, 0.5, 1e-5, 1e-6};
  loop_config c = config_of(solver_kind::alternating, 100, 10);
  c.tolerance = 1e-4;
  const loop_outcome out = run_sinkhorn_loop(spy, c);
  EXPECT_TRUE(out.converged);
  EXPECT_EQ(out.iterations, 30);
  EXPECT_DOUBLE_EQ(out.marginal_error, 1e-5);
  EXPECT_EQ(spy.block_sizes, (std::vector<int>{10, 10, 10}));
}

TEST(SolverLoop, CheckEveryOneAndWarmStart) {
  spy_backend spy;
  loop_config c = config_of(solver_kind::alternating, 3, 1);
  c.warm_start = true;
  const loop_outcome out = run_sinkhorn_loop(spy, c);
  EXPECT_EQ(out.iterations, 3);
  EXPECT_EQ(spy.log, (std::vector<std::string>{"block 1", "S", "S+", "read", "block 1", "S", "S+", "read",
                                                "block 1", "S", "S+", "read"}));
}

}  // namespace
