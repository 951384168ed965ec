// The pieces of `flashsinkhorn otdd` (apps/cli): the Gaussian label distance W₂² against closed
// forms, the class statistics against their definitions, the IDX and gzip readers on valid and
// malformed bytes (every error a bad_input naming the file), and the subsets drawn by --n/--seed.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bad_input.hpp"
#include "class_gaussians.hpp"
#include "gunzip.hpp"
#include "idx_file.hpp"
#include "inflate.hpp"
#include "otdd_data.hpp"
#include "scratch_directory.hpp"

namespace flashsinkhorn::cli {
namespace {

// W₂² values are sums of terms of size ~tr Σ; float64 eigenvalues of a d×d matrix are good to
// ~d·1e-16·‖Σ‖, their square roots to ~√(that). 1e-9 relative leaves room for both.
constexpr double kRelativeTolerance = 1e-9;

std::vector<double> random_covariance(std::int64_t dim, std::mt19937_64& rng, double ridge = 0.1) {
  std::normal_distribution<double> normal;
  std::vector<double> a(static_cast<std::size_t>(dim * dim));
  for (double& v : a) v = normal(rng);
  std::vector<double> sigma(a.size(), 0.0);  // AAᵀ/d + ridge·I
  for (std::int64_t i = 0; i < dim; ++i) {
    for (std::int64_t j = 0; j < dim; ++j) {
      double sum = 0;
      for (std::int64_t k = 0; k < dim; ++k) sum += a[i * dim + k] * a[j * dim + k];
      sigma[i * dim + j] = sum / static_cast<double>(dim) + (i == j ? ridge : 0.0);
    }
  }
  return sigma;
}

std::vector<double> random_vector(std::int64_t dim, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  std::vector<double> v(static_cast<std::size_t>(dim));
  for (double& x : v) x = normal(rng);
  return v;
}

double squared_distance(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += (a[i] - b[i]) * (a[i] - b[i]);
  return sum;
}

std::vector<double> diagonal(const std::vector<double>& values) {
  const std::size_t dim = values.size();
  std::vector<double> m(dim * dim, 0.0);
  for (std::size_t i = 0; i < dim; ++i) m[i * dim + i] = values[i];
  return m;
}

TEST(OtddBures, IdenticalGaussiansAreAtDistanceZero) {
  for (const std::int64_t dim : {1, 2, 7, 33}) {
    std::mt19937_64 rng(100 + static_cast<std::uint64_t>(dim));
    const std::vector<double> mean = random_vector(dim, rng);
    const std::vector<double> sigma = random_covariance(dim, rng);
    const class_gaussian g = gaussian_from_covariance(mean, sigma);
    double trace = 0;
    for (std::int64_t i = 0; i < dim; ++i) trace += sigma[i * dim + i];
    EXPECT_NEAR(squared_w2_gaussians(g, g), 0.0, 1e-10 * trace) << "d = " << dim;
  }
}

TEST(OtddBures, DiagonalCovariancesHaveTheClosedForm) {
  // Commuting covariances: W₂² = ‖μ − μ'‖² + Σ_k (√σ_k − √σ'_k)².
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(0.0, 3.0);
  for (const std::int64_t dim : {1, 5, 64}) {
    std::vector<double> s(static_cast<std::size_t>(dim)), t(static_cast<std::size_t>(dim));
    for (double& v : s) v = uniform(rng);
    for (double& v : t) v = uniform(rng);
    t.back() = 0;  // a singular covariance too
    const std::vector<double> mu = random_vector(dim, rng), nu = random_vector(dim, rng);
    double expected = squared_distance(mu, nu);
    for (std::size_t k = 0; k < s.size(); ++k) expected += std::pow(std::sqrt(s[k]) - std::sqrt(t[k]), 2);
    const double w = squared_w2_gaussians(gaussian_from_covariance(mu, diagonal(s)), gaussian_from_covariance(nu, diagonal(t)));
    EXPECT_NEAR(w, expected, kRelativeTolerance * expected) << "d = " << dim;
  }
}

TEST(OtddBures, ScaledCovarianceHasTheClosedForm) {
  // Σ' = c²Σ: (Σ^½ c²Σ Σ^½)^½ = cΣ, so W₂² = ‖μ − μ'‖² + (1 − c)²·tr Σ.
  std::mt19937_64 rng(11);
  const std::int64_t dim = 19;
  const double c = 1.7;
  const std::vector<double> sigma = random_covariance(dim, rng);
  std::vector<double> scaled = sigma;
  for (double& v : scaled) v *= c * c;
  double trace = 0;
  for (std::int64_t i = 0; i < dim; ++i) trace += sigma[i * dim + i];
  const std::vector<double> mu = random_vector(dim, rng), nu = random_vector(dim, rng);
  const double expected = squared_distance(mu, nu) + (1 - c) * (1 - c) * trace;
  const double w = squared_w2_gaussians(gaussian_from_covariance(mu, sigma), gaussian_from_covariance(nu, scaled));
  EXPECT_NEAR(w, expected, kRelativeTolerance * expected);
}

TEST(OtddBures, NonCommuting2x2HasTheClosedForm) {
  // For a 2×2 PSD M: tr M^½ = √(tr M + 2√det M). With M = Σ^½Σ'Σ^½: tr M = tr ΣΣ', det M = det Σ·det Σ'.
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<double> a = random_covariance(2, rng, 0.01), b = random_covariance(2, rng, 0.01);
    const double trace_ab = a[0] * b[0] + a[1] * b[2] + a[2] * b[1] + a[3] * b[3];
    const double det_a = a[0] * a[3] - a[1] * a[2], det_b = b[0] * b[3] - b[1] * b[2];
    const double cross = std::sqrt(trace_ab + 2 * std::sqrt(det_a * det_b));
    const std::vector<double> mu = random_vector(2, rng), nu = random_vector(2, rng);
    const double expected = squared_distance(mu, nu) + a[0] + a[3] + b[0] + b[3] - 2 * cross;
    const double w = squared_w2_gaussians(gaussian_from_covariance(mu, a), gaussian_from_covariance(nu, b));
    EXPECT_NEAR(w, expected, 1e-9 * (a[0] + a[3] + b[0] + b[3])) << "trial " << trial;
  }
}

TEST(OtddBures, OneDimensionIsTheDifferenceOfMeansAndDeviations) {
  const class_gaussian a = gaussian_from_covariance(std::vector<double>{1.5}, std::vector<double>{4.0});
  const class_gaussian b = gaussian_from_covariance(std::vector<double>{-0.5}, std::vector<double>{0.25});
  EXPECT_NEAR(squared_w2_gaussians(a, b), 2.0 * 2.0 + (2.0 - 0.5) * (2.0 - 0.5), 1e-12);
}

std::vector<double> random_samples(std::int64_t count, std::int64_t dim, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  std::vector<double> x(static_cast<std::size_t>(count * dim));
  for (std::int64_t i = 0; i < count; ++i) {
    for (std::int64_t k = 0; k < dim; ++k) x[i * dim + k] = normal(rng) * (1.0 + static_cast<double>(k)) + 0.3 * static_cast<double>(k);
  }
  return x;
}

TEST(OtddGaussians, MeanAndUnbiasedCovarianceFollowTheirDefinitions) {
  std::mt19937_64 rng(17);
  for (const std::int64_t count : {2, 5, 9, 40}) {  // fewer, as many as and more samples than dimensions
    const std::int64_t dim = 9;
    const std::vector<double> x = random_samples(count, dim, rng);
    const class_gaussian g = fit_gaussian(x, count, dim);
    EXPECT_EQ(g.count, count);
    std::vector<double> mean(static_cast<std::size_t>(dim), 0.0);
    for (std::int64_t i = 0; i < count; ++i) {
      for (std::int64_t k = 0; k < dim; ++k) mean[k] += x[i * dim + k] / static_cast<double>(count);
    }
    const std::vector<double> sigma = covariance_of(g);
    for (std::int64_t k = 0; k < dim; ++k) {
      EXPECT_NEAR(g.mean[k], mean[k], 1e-12) << "count " << count;
      for (std::int64_t l = 0; l < dim; ++l) {
        double sum = 0;
        for (std::int64_t i = 0; i < count; ++i) sum += (x[i * dim + k] - mean[k]) * (x[i * dim + l] - mean[l]);
        const double expected = sum / static_cast<double>(count - 1);
        EXPECT_NEAR(sigma[k * dim + l], expected, 1e-10 * (1 + std::abs(expected))) << "count " << count;
      }
    }
  }
}

TEST(OtddGaussians, SampleAndCovarianceFactorsGiveTheSameDistance) {
  // fit_gaussian keeps the centred samples as the factor when count ≤ d and Σ^½ otherwise; either
  // must give the W₂² of the Gaussian rebuilt from its covariance.
  std::mt19937_64 rng(19);
  const std::int64_t dim = 12;
  for (const auto& [count_a, count_b] : std::vector<std::pair<std::int64_t, std::int64_t>>{{3, 8}, {5, 40}, {30, 50}}) {
    const class_gaussian a = fit_gaussian(random_samples(count_a, dim, rng), count_a, dim);
    const class_gaussian b = fit_gaussian(random_samples(count_b, dim, rng), count_b, dim);
    const double direct = squared_w2_gaussians(a, b);
    const double rebuilt =
        squared_w2_gaussians(gaussian_from_covariance(a.mean, covariance_of(a)), gaussian_from_covariance(b.mean, covariance_of(b)));
    EXPECT_NEAR(direct, rebuilt, 1e-8 * rebuilt) << count_a << " and " << count_b << " samples";
    EXPECT_NEAR(squared_w2_gaussians(b, a), direct, 1e-10 * direct);
  }
}

TEST(OtddGaussians, FewerThanTwoSamplesAreRefused) {
  EXPECT_THROW((void)fit_gaussian(std::vector<double>{1.0, 2.0}, 1, 2), std::invalid_argument);
  EXPECT_THROW((void)fit_gaussian(std::vector<double>{1.0, 2.0, 3.0}, 2, 2), std::invalid_argument);  // size mismatch
}

TEST(OtddLabelDistances, MatrixIsSymmetricWithZeroDiagonalAndThePairValues) {
  std::mt19937_64 rng(23);
  const std::int64_t dim = 10;
  std::vector<class_gaussian> classes;
  for (std::int64_t l = 0; l < 6; ++l) {
    const std::int64_t count = 4 + 5 * l;  // both factor kinds
    classes.push_back(fit_gaussian(random_samples(count, dim, rng), count, dim));
  }
  const std::size_t label_count = classes.size();
  int calls = 0;
  const std::vector<double> w = squared_w2_label_distances(classes, 2, [&](int done, int total) {
    ++calls;
    EXPECT_EQ(total, 15);
    EXPECT_EQ(done, calls);
  });
  EXPECT_EQ(calls, 15);
  const std::vector<double> serial = squared_w2_label_distances(classes, 1);
  ASSERT_EQ(w.size(), label_count * label_count);
  for (std::size_t i = 0; i < label_count; ++i) {
    EXPECT_EQ(w[i * label_count + i], 0.0);
    for (std::size_t j = 0; j < label_count; ++j) {
      EXPECT_EQ(w[i * label_count + j], w[j * label_count + i]);
      EXPECT_EQ(w[i * label_count + j], serial[i * label_count + j]);
      if (i != j) {
        EXPECT_NEAR(w[i * label_count + j], squared_w2_gaussians(classes[i], classes[j]), 1e-12 * w[i * label_count + j]);
        EXPECT_GT(w[i * label_count + j], 0.0);
      }
    }
  }
}

// ----------------------------------------------------------------------------------------- IDX

std::vector<std::uint8_t> be32(std::uint32_t v) {
  return {static_cast<std::uint8_t>(v >> 24), static_cast<std::uint8_t>(v >> 16), static_cast<std::uint8_t>(v >> 8),
          static_cast<std::uint8_t>(v)};
}

std::vector<std::uint8_t> idx_images_bytes(std::uint32_t count, std::uint32_t rows, std::uint32_t cols,
                                           std::uint32_t magic = 0x803) {
  std::vector<std::uint8_t> bytes;
  for (const std::uint32_t field : {magic, count, rows, cols}) {
    const auto word = be32(field);
    bytes.insert(bytes.end(), word.begin(), word.end());
  }
  for (std::uint32_t i = 0; i < count * rows * cols; ++i) bytes.push_back(static_cast<std::uint8_t>(i % 251));
  return bytes;
}

std::vector<std::uint8_t> idx_labels_bytes(const std::vector<std::uint8_t>& labels, std::uint32_t magic = 0x801) {
  std::vector<std::uint8_t> bytes = be32(magic);
  const auto count = be32(static_cast<std::uint32_t>(labels.size()));
  bytes.insert(bytes.end(), count.begin(), count.end());
  bytes.insert(bytes.end(), labels.begin(), labels.end());
  return bytes;
}

template <class Call>
void expect_bad_input(Call call, const std::vector<std::string>& needles) {
  try {
    call();
    ADD_FAILURE() << "expected bad_input containing '" << needles.front() << "'";
  } catch (const bad_input& e) {
    for (const std::string& needle : needles) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what() << " lacks '" << needle << "'";
    }
  }
}

TEST(OtddIdx, ReadsImagesAndLabels) {
  const std::vector<std::uint8_t> bytes = idx_images_bytes(3, 2, 5);
  const idx_images images = parse_idx_images(bytes, "img");
  EXPECT_EQ(images.count, 3);
  EXPECT_EQ(images.rows, 2);
  EXPECT_EQ(images.cols, 5);
  ASSERT_EQ(images.pixels.size(), 30U);
  EXPECT_EQ(images.pixels[29], 29);
  const std::vector<std::uint8_t> labels = parse_idx_labels(idx_labels_bytes({0, 9, 3}), 9, "lab");
  EXPECT_EQ(labels, (std::vector<std::uint8_t>{0, 9, 3}));
  EXPECT_TRUE(parse_idx_labels(idx_labels_bytes({}), 9, "lab").empty());
}

TEST(OtddIdx, MalformedBytesAreRefusedNamingTheFile) {
  const auto images = [](std::vector<std::uint8_t> bytes) { return [bytes] { (void)parse_idx_images(bytes, "f/img"); }; };
  const auto labels = [](std::vector<std::uint8_t> bytes) { return [bytes] { (void)parse_idx_labels(bytes, 9, "f/lab"); }; };
  expect_bad_input(images(idx_labels_bytes({1, 2})), {"f/img", "magic number 0x00000801, expected 0x00000803"});
  expect_bad_input(labels(idx_images_bytes(1, 1, 1)), {"f/lab", "magic number 0x00000803, expected 0x00000801"});
  expect_bad_input(images({0, 0}), {"f/img", "shorter than the magic number"});
  std::vector<std::uint8_t> short_header = idx_images_bytes(0, 1, 1);
  short_header.resize(12);
  expect_bad_input(images(short_header), {"f/img", "truncated IDX header"});
  std::vector<std::uint8_t> truncated = idx_images_bytes(4, 3, 3);
  truncated.pop_back();
  expect_bad_input(images(truncated), {"f/img", "truncated IDX data"});
  std::vector<std::uint8_t> longer = idx_images_bytes(4, 3, 3);
  longer.push_back(0);
  expect_bad_input(images(longer), {"f/img", "1 unexpected bytes"});
  std::vector<std::uint8_t> huge = idx_images_bytes(0, 0xffffffff, 0xffffffff);
  huge[7] = 0xff;  // count 255 images of 2^64−2^33+1 pixels: no overflow, just too short
  expect_bad_input(images(huge), {"f/img", "truncated IDX data"});
  expect_bad_input(images(idx_images_bytes(2, 0, 4)), {"f/img", "0x4 pixels"});
  std::vector<std::uint8_t> short_labels = idx_labels_bytes({1, 2, 3});
  short_labels.pop_back();
  expect_bad_input(labels(short_labels), {"f/lab", "3 labels need 3 bytes"});
  expect_bad_input(labels(idx_labels_bytes({1, 10})), {"f/lab", "label 10 at index 1 is outside 0..9"});
}

// ---------------------------------------------------------------------------------------- gzip

std::uint32_t crc32_of(const std::vector<std::uint8_t>& bytes) {
  std::uint32_t crc = 0xffffffffU;
  for (const std::uint8_t byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xedb88320U & (0U - (crc & 1U)));
  }
  return ~crc;
}

// A one-member gzip file of `data` in one stored (uncompressed) deflate block (RFC 1951 §3.2.4).
std::string gzip_stored(const std::vector<std::uint8_t>& data) {
  std::string out = std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  const auto size = static_cast<std::uint16_t>(data.size());
  out += '\x01';  // BFINAL = 1, BTYPE = 00 (stored)
  for (const std::uint16_t field : {size, static_cast<std::uint16_t>(~size)}) {
    out += static_cast<char>(field & 0xff);
    out += static_cast<char>(field >> 8);
  }
  out.append(data.begin(), data.end());
  for (const std::uint32_t field : {crc32_of(data), static_cast<std::uint32_t>(data.size())}) {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((field >> (8 * i)) & 0xff);
  }
  return out;
}

TEST(OtddGzip, DecompressesAndRefusesDamagedFiles) {
  const scratch_directory dir;
  const std::vector<std::uint8_t> data = idx_labels_bytes({1, 2, 3, 4, 5, 6, 7});
  const std::string gz = gzip_stored(data);
  const auto good = dir.write("good.gz", gz);
  if (!has_inflate()) {
    expect_bad_input([&] { (void)gunzip_file(good, 1 << 20); }, {good.string(), "zlib"});
    return;
  }
  EXPECT_EQ(gunzip_file(good, 1 << 20), data);
  EXPECT_EQ(read_idx_labels(good, 9), (std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(gunzip_file(dir.write("two.gz", gz + gz), 1 << 20).size(), 2 * data.size());  // two members

  const auto truncated = dir.write("truncated.gz", gz.substr(0, gz.size() - 12));
  expect_bad_input([&] { (void)gunzip_file(truncated, 1 << 20); }, {truncated.string(), "truncated gzip file"});
  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 8] = static_cast<char>(bad_crc[bad_crc.size() - 8] ^ 1);
  const auto corrupt = dir.write("crc.gz", bad_crc);
  expect_bad_input([&] { (void)gunzip_file(corrupt, 1 << 20); }, {corrupt.string(), "corrupt gzip data"});
  const auto plain = dir.write("plain.gz", std::string(data.begin(), data.end()));
  expect_bad_input([&] { (void)gunzip_file(plain, 1 << 20); }, {plain.string(), "not a gzip file"});
  const auto garbage = dir.write("garbage.gz", gz + "xy");
  expect_bad_input([&] { (void)gunzip_file(garbage, 1 << 20); }, {garbage.string(), "trailing garbage"});
  expect_bad_input([&] { (void)gunzip_file(good, 4); }, {good.string(), "more than 4 bytes"});
  expect_bad_input([&] { (void)gunzip_file(dir.path() / "absent.gz", 1 << 20); }, {"absent.gz", "no such file"});
}

TEST(OtddData, LoadsATrainingSetAndChecksItsFiles) {
  const scratch_directory dir;
  if (!has_inflate()) GTEST_SKIP() << "no zlib in this build";
  std::filesystem::create_directories(dir.path() / "set");
  const auto write = [&](const std::string& name, const std::vector<std::uint8_t>& bytes) {
    (void)dir.write("set/" + name, gzip_stored(bytes));
  };
  write("train-images-idx3-ubyte.gz", idx_images_bytes(6, 2, 2));
  write("train-labels-idx1-ubyte.gz", idx_labels_bytes({0, 1, 2, 0, 1, 2}));
  const labelled_images set = load_training_set(dir.path(), "set", 10, {});
  EXPECT_EQ(set.count, 6);
  EXPECT_EQ(set.dim, 4);
  EXPECT_EQ(set.labels, (std::vector<std::int32_t>{10, 11, 12, 10, 11, 12}));
  const labelled_images first = load_training_set(dir.path(), "set", 0, {.count = 4, .seed = {}});
  EXPECT_EQ(first.labels, (std::vector<std::int32_t>{0, 1, 2, 0}));
  EXPECT_EQ(first.pixels, std::vector<std::uint8_t>(set.pixels.begin(), set.pixels.begin() + 16));

  expect_bad_input([&] { (void)load_training_set(dir.path(), "set", 0, {.count = 7, .seed = {}}); },
                   {"--n 7 is more than the 6 images", "train-images-idx3-ubyte.gz"});
  expect_bad_input([&] { (void)load_training_set(dir.path(), "missing", 0, {}); }, {"missing: no such directory"});
  expect_bad_input([&] { (void)load_training_set(dir.path() / "nowhere", "set", 0, {}); }, {"nowhere: no such directory"});
  write("train-labels-idx1-ubyte.gz", idx_labels_bytes({0, 1, 2, 0, 1}));
  expect_bad_input([&] { (void)load_training_set(dir.path(), "set", 0, {}); },
                   {"train-images-idx3-ubyte.gz: holds 6 images but", "train-labels-idx1-ubyte.gz holds 5 labels"});
}

TEST(OtddData, ClassesWithFewerThanTwoImagesAreRefused) {
  labelled_images images;
  images.name = "set/train-images";
  images.count = 3;
  images.dim = 2;
  images.pixels = {0, 1, 2, 3, 4, 5};
  images.labels = {0, 0, 1};
  expect_bad_input([&] { (void)class_gaussians_of(images, 0, 1); }, {"set/train-images", "class 1 has 1 image(s)"});
}

TEST(OtddData, FeaturesNormaliseThePixels) {
  EXPECT_DOUBLE_EQ(pixel_feature(0), -0.1307 / 0.3081);
  EXPECT_DOUBLE_EQ(pixel_feature(255), (1 - 0.1307) / 0.3081);
  labelled_images images;
  images.count = 1;
  images.dim = 2;
  images.pixels = {0, 255};
  EXPECT_EQ(image_features<float>(images), (std::vector<float>{static_cast<float>(pixel_feature(0)),
                                                                static_cast<float>(pixel_feature(255))}));
}

TEST(OtddData, SubsetsAreFirstNOrASeededDrawWithoutReplacement) {
  EXPECT_EQ(subset_indices(5, {}), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(subset_indices(5, {.count = 2, .seed = {}}), (std::vector<std::int64_t>{0, 1}));
  const std::vector<std::int64_t> drawn = subset_indices(1000, {.count = 100, .seed = 42});
  ASSERT_EQ(drawn.size(), 100U);
  EXPECT_TRUE(std::is_sorted(drawn.begin(), drawn.end()));
  EXPECT_EQ(std::set<std::int64_t>(drawn.begin(), drawn.end()).size(), 100U);
  EXPECT_GE(drawn.front(), 0);
  EXPECT_LT(drawn.back(), 1000);
  EXPECT_EQ(subset_indices(1000, {.count = 100, .seed = 42}), drawn);
  EXPECT_NE(subset_indices(1000, {.count = 100, .seed = 43}), drawn);
  EXPECT_EQ(subset_indices(7, {.count = 7, .seed = 3}), subset_indices(7, {}));
}

}  // namespace
}  // namespace flashsinkhorn::cli
