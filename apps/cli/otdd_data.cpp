#include "otdd_data.hpp"

#include <omp.h>

#include <algorithm>
#include <numeric>
#include <system_error>

#include "bad_input.hpp"
#include "idx_file.hpp"

namespace flashsinkhorn::cli {
namespace {

constexpr double kPixelScale = 255.0;
constexpr double kFeatureMean = 0.1307;  // MNIST's pixel mean and standard deviation (of pixel/255),
constexpr double kFeatureStd = 0.3081;   // applied to both datasets as OTDD does
constexpr std::uint8_t kMaxLabel = kDatasetClasses - 1;

// SplitMix64 (Steele, Lea & Flood 2014): a fixed, portable stream for a given seed.
class splitmix64 {
 public:
  explicit splitmix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound) by rejection (no modulo bias).
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
    std::uint64_t value = next();
    while (value >= limit) value = next();
    return value % bound;
  }

 private:
  std::uint64_t state_;
};

void require_directory(const std::filesystem::path& dir) {
  std::error_code error;
  const auto status = std::filesystem::status(dir, error);
  if (!std::filesystem::exists(status)) throw bad_input(dir.string() + ": no such directory");
  if (!std::filesystem::is_directory(status)) throw bad_input(dir.string() + ": not a directory");
}

}  // namespace

std::vector<std::int64_t> subset_indices(std::int64_t available, const subset_rule& subset) {
  const std::int64_t count = subset.count.value_or(available);
  std::vector<std::int64_t> indices(static_cast<std::size_t>(available));
  std::iota(indices.begin(), indices.end(), std::int64_t{0});
  if (!subset.seed) {
    indices.resize(static_cast<std::size_t>(count));
    return indices;
  }
  splitmix64 generator(*subset.seed);
  for (std::int64_t i = 0; i < count; ++i) {
    const auto pick = i + static_cast<std::int64_t>(generator.below(static_cast<std::uint64_t>(available - i)));
    std::swap(indices[static_cast<std::size_t>(i)], indices[static_cast<std::size_t>(pick)]);
  }
  indices.resize(static_cast<std::size_t>(count));
  std::sort(indices.begin(), indices.end());
  return indices;
}

labelled_images load_training_set(const std::filesystem::path& data_dir, const std::string& subdirectory,
                                  std::int32_t label_offset, const subset_rule& subset) {
  require_directory(data_dir);
  const std::filesystem::path dir = data_dir / subdirectory;
  require_directory(dir);
  const std::filesystem::path labels_path = dir / "train-labels-idx1-ubyte.gz";
  const std::filesystem::path images_path = dir / "train-images-idx3-ubyte.gz";
  const std::vector<std::uint8_t> labels = read_idx_labels(labels_path, kMaxLabel);
  const idx_images images = read_idx_images(images_path);
  if (images.count != static_cast<std::int64_t>(labels.size())) {
    throw bad_input(images_path.string() + ": holds " + std::to_string(images.count) + " images but " +
                    labels_path.string() + " holds " + std::to_string(labels.size()) + " labels");
  }
  if (subset.count && *subset.count > images.count) {
    throw bad_input("--n " + std::to_string(*subset.count) + " is more than the " + std::to_string(images.count) +
                    " images of " + images_path.string());
  }

  labelled_images out;
  out.name = images_path.string();
  out.dim = images.pixels_per_image();
  const std::vector<std::int64_t> kept = subset_indices(images.count, subset);
  out.count = static_cast<std::int64_t>(kept.size());
  out.pixels.resize(static_cast<std::size_t>(out.count * out.dim));
  out.labels.resize(kept.size());
  for (std::size_t i = 0; i < kept.size(); ++i) {
    const auto source = static_cast<std::size_t>(kept[i]);
    std::copy_n(images.pixels.begin() + static_cast<std::ptrdiff_t>(source * out.dim), out.dim,
                out.pixels.begin() + static_cast<std::ptrdiff_t>(i * out.dim));
    out.labels[i] = static_cast<std::int32_t>(labels[source]) + label_offset;
  }
  return out;
}

double pixel_feature(std::uint8_t pixel) noexcept {
  return (static_cast<double>(pixel) / kPixelScale - kFeatureMean) / kFeatureStd;
}

template <class T>
std::vector<T> image_features(const labelled_images& images) {
  std::vector<T> table(256);  // the feature of every byte value, rounded once
  for (int p = 0; p < 256; ++p) table[static_cast<std::size_t>(p)] = static_cast<T>(pixel_feature(static_cast<std::uint8_t>(p)));
  std::vector<T> features(images.pixels.size());
  std::transform(images.pixels.begin(), images.pixels.end(), features.begin(), [&](std::uint8_t p) { return table[p]; });
  return features;
}

template std::vector<float> image_features<float>(const labelled_images&);
template std::vector<double> image_features<double>(const labelled_images&);

std::vector<class_gaussian> class_gaussians_of(const labelled_images& images, std::int32_t first_label, int threads) {
  std::vector<std::vector<std::int64_t>> members(kDatasetClasses);
  for (std::int64_t i = 0; i < images.count; ++i) {
    const std::int32_t label = images.labels[static_cast<std::size_t>(i)] - first_label;
    if (label >= 0 && label < kDatasetClasses) members[static_cast<std::size_t>(label)].push_back(i);
  }
  for (std::size_t label = 0; label < members.size(); ++label) {
    if (members[label].size() < 2) {
      throw bad_input(images.name + ": class " + std::to_string(label) + " has " + std::to_string(members[label].size()) +
                      " image(s) among the " + std::to_string(images.count) +
                      " used; its Gaussian needs at least 2 (use a larger --n)");
    }
  }
  std::vector<class_gaussian> gaussians(kDatasetClasses);
  std::string failure;
  const int thread_count = threads > 0 ? threads : omp_get_max_threads();
  // One class per thread (Eigen runs single-threaded inside): its float64 samples, covariance and root.
#pragma omp parallel for schedule(dynamic, 1) num_threads(thread_count)
  for (int label = 0; label < kDatasetClasses; ++label) {
    const std::vector<std::int64_t>& rows = members[static_cast<std::size_t>(label)];
    try {
      std::vector<double> samples(rows.size() * static_cast<std::size_t>(images.dim));
      for (std::size_t r = 0; r < rows.size(); ++r) {
        const std::uint8_t* pixels = images.pixels.data() + rows[r] * images.dim;
        std::transform(pixels, pixels + images.dim, samples.begin() + static_cast<std::ptrdiff_t>(r * images.dim),
                       pixel_feature);
      }
      gaussians[static_cast<std::size_t>(label)] =
          fit_gaussian(samples, static_cast<std::int64_t>(rows.size()), images.dim);
    } catch (const std::exception& e) {
#pragma omp critical(flashsinkhorn_cli_class_gaussians_failure)
      failure = e.what();
    }
  }
  if (!failure.empty()) throw std::runtime_error(images.name + ": " + failure);
  return gaussians;
}

}  // namespace flashsinkhorn::cli
