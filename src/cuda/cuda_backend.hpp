// The CUDA backend's entry points, callable from plain C++ (no CUDA types here).
#pragma once

#include <memory>
#include <string>

#include "core/backend.hpp"
#include "core/prepared_cloud.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

// Uploads the prepared clouds to device `device` and returns a backend computing there.
// Throws cuda_error / out_of_memory with the failing call named.
std::unique_ptr<backend> make_cuda_backend(const prepared_problem& problem, precision mode, int device);

// Number of visible CUDA devices (0 when there is no driver or no device; never throws).
int cuda_device_count() noexcept;

// "NVIDIA H200" etc.
std::string cuda_device_name(int device);

}  // namespace flashsinkhorn::detail
