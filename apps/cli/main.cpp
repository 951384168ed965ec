// flashsinkhorn — the command-line front door. Dispatches to a subcommand and turns every
// exception into one stderr line "flashsinkhorn: error: <message>" and an exit status:
//   0 success · 2 bad usage or bad input (bad_input, invalid_argument, unsupported) · 1 otherwise.
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "bad_input.hpp"
#include "commands.hpp"
#include "flashsinkhorn/error.hpp"
#include "flashsinkhorn/solver.hpp"

namespace {

constexpr int kExitSuccess = 0;
constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

const char* const kUsage =
    "usage: flashsinkhorn <command> [options]\n"
    "\n"
    "Entropic optimal transport between point clouds (streaming Sinkhorn).\n"
    "\n"
    "commands:\n"
    "  solve      solve OT between two point clouds read from .npy/.npz/.csv files\n"
    "  demo       solve a built-in example (no files needed)\n"
    "  hvp        Hessian-vector product of the converged cost w.r.t. the points of X or Y\n"
    "  otdd       dataset distance (OTDD) between MNIST and Fashion-MNIST read from --data DIR\n"
    "\n"
    "options:\n"
    "  --help     print this help (`flashsinkhorn <command> --help` for the command's options)\n"
    "  --version  print the version\n"
    "\n"
    "Exit status: 0 success, 2 bad usage or bad input, 1 any other failure.\n";

int report_error(const std::string& message, int status) {
  std::string line = message;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::fprintf(stderr, "flashsinkhorn: error: %s\n", line.c_str());
  return status;
}

int dispatch(const std::vector<std::string>& args) {
  if (args.empty()) {
    throw flashsinkhorn::cli::bad_input("missing command; run 'flashsinkhorn --help'");
  }
  const std::string& command = args.front();
  const std::span<const std::string> rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
  } else if (command == "--version") {
    std::printf("flashsinkhorn %s\n", flashsinkhorn::version().c_str());
  } else if (command == "solve") {
    flashsinkhorn::cli::run_solve_command(rest);
  } else if (command == "demo") {
    flashsinkhorn::cli::run_demo_command(rest);
  } else if (command == "hvp") {
    flashsinkhorn::cli::run_hvp_command(rest);
  } else if (command == "otdd") {
    flashsinkhorn::cli::run_otdd_command(rest);
  } else {
    throw flashsinkhorn::cli::bad_input("unknown command '" + command + "' (expected solve, demo, hvp or otdd; see --help)");
  }
  return kExitSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    const int status = dispatch(args);
    if (std::fflush(stdout) != 0) return report_error("cannot write to stdout", kExitFailure);
    return status;
  } catch (const flashsinkhorn::cli::bad_input& e) {
    return report_error(e.what(), kExitBadInput);
  } catch (const flashsinkhorn::invalid_argument& e) {
    return report_error(e.what(), kExitBadInput);
  } catch (const flashsinkhorn::unsupported& e) {
    return report_error(e.what(), kExitBadInput);
  } catch (const std::bad_alloc&) {
    return report_error("out of host memory", kExitFailure);
  } catch (const std::exception& e) {
    return report_error(e.what(), kExitFailure);
  } catch (...) {
    return report_error("unknown failure", kExitFailure);
  }
}
