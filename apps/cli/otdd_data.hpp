// The data of `flashsinkhorn otdd`: the MNIST and Fashion-MNIST training sets read from
// DIR/mnist/ and DIR/fashion-mnist/ (the gzipped IDX files as distributed: idx_file.hpp), a subset
// of n images of each, their features and the Gaussians of their classes.
//
// Features (both datasets, as in OTDD's MNIST ↔ Fashion-MNIST experiment): x = (pixel/255 − 0.1307)/0.3081,
// one row of d = rows·cols values per image. Labels: MNIST keeps 0..9, Fashion-MNIST is renumbered
// 10..19, so one 20×20 label distance matrix covers both.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "class_gaussians.hpp"

namespace flashsinkhorn::cli {

inline constexpr int kDatasetClasses = 10;  // labels per dataset (both have 0..9)

struct labelled_images {
  std::string name;                  // where they came from (the images file), for messages
  std::int64_t count = 0;
  std::int64_t dim = 0;              // pixels per image
  std::vector<std::uint8_t> pixels;  // (count, dim)
  std::vector<std::int32_t> labels;  // (count,) already offset: 0..9 or 10..19
};

// Which images: the first n (seed unset), or n drawn without replacement with a seeded generator
// (kept in file order). No n: every image.
struct subset_rule {
  std::optional<std::int64_t> count;
  std::optional<std::uint64_t> seed;
};

// Reads DIR/<subdirectory>/train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz, checks that
// they agree (same count, labels 0..9), keeps the subset and adds `label_offset` to the labels.
// Throws bad_input naming the file for a missing directory or file, a gzip or IDX error, a count
// mismatch, or a subset larger than the file.
[[nodiscard]] labelled_images load_training_set(const std::filesystem::path& data_dir, const std::string& subdirectory,
                                                std::int32_t label_offset, const subset_rule& subset);

// The indices kept by `subset` out of `available`, increasing. Random draws: a partial Fisher-Yates
// shuffle driven by SplitMix64 (same indices on every platform for the same seed).
[[nodiscard]] std::vector<std::int64_t> subset_indices(std::int64_t available, const subset_rule& subset);

// The feature value of a pixel.
[[nodiscard]] double pixel_feature(std::uint8_t pixel) noexcept;

// The (count, dim) features of `images`, as float or double.
template <class T>
[[nodiscard]] std::vector<T> image_features(const labelled_images& images);

// The Gaussian of every class l ∈ [first_label, first_label + kDatasetClasses) of `images`, from the
// float64 features, one class per OpenMP thread (`threads`; 0: OpenMP's default). Throws bad_input
// when a class has fewer than 2 images (saying which, and to raise --n).
[[nodiscard]] std::vector<class_gaussian> class_gaussians_of(const labelled_images& images, std::int32_t first_label,
                                                             int threads);

}  // namespace flashsinkhorn::cli
