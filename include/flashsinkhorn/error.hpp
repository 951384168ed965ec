// Every failure the library reports is one of these exceptions; the message names the problem
// (the argument, the file, the CUDA call) in words a user can act on.
#pragma once

#include <stdexcept>
#include <string>

namespace flashsinkhorn {

// Base class: anything the library throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The caller passed something unusable: a NaN, a negative weight, mismatched shapes, ε <= 0 ...
// The CLI maps this to exit code 2.
class invalid_argument : public error {
 public:
  using error::error;
};

// A requested feature or device is not available in this build or on this machine.
class unsupported : public error {
 public:
  using error::error;
};

// A CUDA runtime or driver call failed; the message names the call and CUDA's description.
class cuda_error : public error {
 public:
  using error::error;
};

// The device (or host) ran out of memory; the message says how much was asked for.
class out_of_memory : public error {
 public:
  using error::error;
};

}  // namespace flashsinkhorn
