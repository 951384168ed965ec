// The IDX format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/), big-endian:
//   images: uint32 magic 0x00000803, uint32 count N, uint32 rows, uint32 cols, N·rows·cols uint8;
//   labels: uint32 magic 0x00000801, uint32 count N, N uint8.
// Read from the gzipped files the datasets are distributed as (gunzip.hpp). Every error names the
// file and says what is wrong (bad_input).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace flashsinkhorn::cli {

struct idx_images {
  std::int64_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::uint8_t> pixels;  // (count, rows·cols) row-major

  [[nodiscard]] std::int64_t pixels_per_image() const noexcept { return rows * cols; }
};

// Parsers of decompressed IDX bytes; `name` prefixes errors. Both refuse a wrong magic number, a
// header shorter than its fixed size, data shorter or longer than the header announces, and (images)
// zero rows or columns. parse_idx_labels also refuses labels above `max_label`.
[[nodiscard]] idx_images parse_idx_images(std::span<const std::uint8_t> bytes, const std::string& name);
[[nodiscard]] std::vector<std::uint8_t> parse_idx_labels(std::span<const std::uint8_t> bytes, std::uint8_t max_label,
                                                         const std::string& name);

// The same for a gzipped IDX file.
[[nodiscard]] idx_images read_idx_images(const std::filesystem::path& path);
[[nodiscard]] std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path, std::uint8_t max_label);

}  // namespace flashsinkhorn::cli
