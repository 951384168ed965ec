#include "idx_file.hpp"

#include <cstdio>

#include "bad_input.hpp"
#include "gunzip.hpp"

namespace flashsinkhorn::cli {
namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803;  // unsigned byte data, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 0x00000801;  // unsigned byte data, 1 dimension
constexpr std::size_t kImagesHeaderBytes = 16;
constexpr std::size_t kLabelsHeaderBytes = 8;
// Larger than any IDX file of bytes we read (MNIST train images: 47,040,016 bytes); a bound on what
// a corrupt gzip member may make us allocate.
constexpr std::uint64_t kMaxIdxBytes = std::uint64_t{1} << 32;

std::uint32_t big_endian_u32(std::span<const std::uint8_t> bytes, std::size_t offset) {
  return (std::uint32_t{bytes[offset]} << 24) | (std::uint32_t{bytes[offset + 1]} << 16) |
         (std::uint32_t{bytes[offset + 2]} << 8) | std::uint32_t{bytes[offset + 3]};
}

std::string hex(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

void require_magic(std::span<const std::uint8_t> bytes, std::size_t header_bytes, std::uint32_t expected,
                   const char* kind, const std::string& name) {
  if (bytes.size() < 4) {
    throw bad_input(name + ": not an IDX " + kind + " file: " + std::to_string(bytes.size()) +
                    " bytes, shorter than the magic number");
  }
  const std::uint32_t magic = big_endian_u32(bytes, 0);
  if (magic != expected) {
    throw bad_input(name + ": not an IDX " + kind + " file: magic number " + hex(magic) + ", expected " + hex(expected));
  }
  if (bytes.size() < header_bytes) {
    throw bad_input(name + ": truncated IDX header (" + std::to_string(bytes.size()) + " bytes, expected " +
                    std::to_string(header_bytes) + ")");
  }
}

void require_size(std::uint64_t actual, std::uint64_t expected, const std::string& what, const std::string& name) {
  if (actual < expected) {
    throw bad_input(name + ": truncated IDX data: " + what + " need " + std::to_string(expected) +
                    " bytes after the header, the file has " + std::to_string(actual));
  }
  if (actual > expected) {
    throw bad_input(name + ": " + std::to_string(actual - expected) + " unexpected bytes after the " + what);
  }
}

}  // namespace

idx_images parse_idx_images(std::span<const std::uint8_t> bytes, const std::string& name) {
  require_magic(bytes, kImagesHeaderBytes, kImagesMagic, "images", name);
  idx_images images;
  images.count = big_endian_u32(bytes, 4);
  images.rows = big_endian_u32(bytes, 8);
  images.cols = big_endian_u32(bytes, 12);
  if (images.rows == 0 || images.cols == 0) {
    throw bad_input(name + ": IDX images of " + std::to_string(images.rows) + "x" + std::to_string(images.cols) +
                    " pixels; expected at least 1x1");
  }
  // rows·cols < 2^64, but count·rows·cols may not fit in 64 bits: compare by division first.
  const std::uint64_t per_image = static_cast<std::uint64_t>(images.rows) * static_cast<std::uint64_t>(images.cols);
  const std::uint64_t available = bytes.size() - kImagesHeaderBytes;
  const std::uint64_t count = static_cast<std::uint64_t>(images.count);
  const std::string what = std::to_string(images.count) + " images of " + std::to_string(images.rows) + "x" +
                           std::to_string(images.cols) + " pixels";
  if (count > available / per_image) {
    throw bad_input(name + ": truncated IDX data: " + what + " need more than the " + std::to_string(available) +
                    " bytes the file has after its header");
  }
  require_size(available, count * per_image, what, name);
  images.pixels.assign(bytes.begin() + kImagesHeaderBytes, bytes.end());
  return images;
}

std::vector<std::uint8_t> parse_idx_labels(std::span<const std::uint8_t> bytes, std::uint8_t max_label,
                                           const std::string& name) {
  require_magic(bytes, kLabelsHeaderBytes, kLabelsMagic, "labels", name);
  const std::uint64_t count = big_endian_u32(bytes, 4);
  require_size(bytes.size() - kLabelsHeaderBytes, count, std::to_string(count) + " labels", name);
  std::vector<std::uint8_t> labels(bytes.begin() + kLabelsHeaderBytes, bytes.end());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] > max_label) {
      throw bad_input(name + ": label " + std::to_string(labels[i]) + " at index " + std::to_string(i) +
                      " is outside 0.." + std::to_string(max_label));
    }
  }
  return labels;
}

idx_images read_idx_images(const std::filesystem::path& path) {
  const std::vector<std::uint8_t> bytes = gunzip_file(path, kMaxIdxBytes);
  return parse_idx_images(bytes, path.string());
}

std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path, std::uint8_t max_label) {
  const std::vector<std::uint8_t> bytes = gunzip_file(path, kMaxIdxBytes);
  return parse_idx_labels(bytes, max_label, path.string());
}

}  // namespace flashsinkhorn::cli
