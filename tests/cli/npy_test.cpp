// The .npy reader and writer: round trips in both dtypes and every rank the CLI meets, and each
// malformed header or payload turned into a bad_input that names the file and the problem.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "bad_input.hpp"
#include "npy.hpp"

namespace flashsinkhorn::cli {
namespace {

loaded_array read_bytes(const std::string& bytes, const std::string& name = "test.npy") {
  std::istringstream in(bytes);
  return read_npy(in, bytes.size(), name);
}

// The .npy bytes for a hand-written header dict (version 1.0, no padding) followed by `payload`.
std::string npy_with_header(const std::string& dict, const std::string& payload, int major = 1) {
  const std::string header = dict + "\n";
  std::string bytes = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  for (std::size_t i = 0; i < length_bytes; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header + payload;
}

std::string doubles(const std::vector<double>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double));
}

// Expects read_bytes(bytes) to throw bad_input whose message contains `needle`.
void expect_rejected(const std::string& bytes, const std::string& needle) {
  try {
    (void)read_bytes(bytes);
    ADD_FAILURE() << "accepted a file that should fail with '" << needle << "'";
  } catch (const bad_input& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("test.npy: ", 0), 0u) << message;
    EXPECT_NE(message.find(needle), std::string::npos) << message;
  }
}

TEST(Npy, RoundTripsFloat64Matrix) {
  const std::vector<double> values = {1.5, -2.25, 3e-300, std::numeric_limits<double>::max(), 0.1, -0.0};
  const loaded_array array = read_bytes(encode_npy(values, {3, 2}, dtype::float64));
  EXPECT_EQ(array.shape, (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(array.type, dtype::float64);
  ASSERT_EQ(array.values_f64.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(array.values_f64[i], values[i]) << i;
}

TEST(Npy, RoundTripsFloat32VectorRoundingToNearest) {
  const std::vector<double> values = {0.1, 1.0 / 3.0, -7.0, 1e30, 5e-40};
  const loaded_array array = read_bytes(encode_npy(values, {5}, dtype::float32));
  EXPECT_EQ(array.shape, (std::vector<std::int64_t>{5}));
  EXPECT_EQ(array.type, dtype::float32);
  ASSERT_EQ(array.values_f32.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(array.values_f32[i], static_cast<float>(values[i])) << i;
}

TEST(Npy, RoundTripsEmptyAndScalarShapes) {
  const loaded_array empty = read_bytes(encode_npy({}, {0, 3}, dtype::float64));
  EXPECT_EQ(empty.shape, (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(empty.element_count(), 0);
  EXPECT_NE(empty.data(), nullptr);  // an empty input must not look like "not given"

  const loaded_array scalar = read_bytes(encode_npy(std::vector<double>{4.0}, {}, dtype::float64));
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.element_count(), 1);
  EXPECT_EQ(scalar.values_f64.at(0), 4.0);
}

TEST(Npy, WriterPadsHeaderTo64BytesAndEndsItWithNewline) {
  for (const std::vector<std::int64_t>& shape : {std::vector<std::int64_t>{1}, {1000000, 64}, {0}}) {
    std::int64_t count = 1;
    for (const auto extent : shape) count *= extent;
    const std::string bytes =
        encode_npy(std::vector<double>(static_cast<std::size_t>(count)), shape, dtype::float32);
    const std::size_t header_length = static_cast<unsigned char>(bytes[8]) + 256u * static_cast<unsigned char>(bytes[9]);
    EXPECT_EQ((10 + header_length) % 64, 0u) << shape_string(shape);
    EXPECT_EQ(bytes[10 + header_length - 1], '\n');
    EXPECT_EQ(bytes.size(), 10 + header_length + static_cast<std::size_t>(count) * 4);
  }
}

TEST(Npy, ReadsHeadersNumpyAndOtherWritersProduce) {
  const std::string payload = doubles({1, 2, 3, 4});
  // No trailing comma, double quotes, odd spacing, keys in another order, Python 2 'L' suffix.
  for (const std::string& dict : {
           std::string("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2)}"),
           std::string("{\"shape\":(2,2),\"descr\":\"<f8\",\"fortran_order\":False,}"),
           std::string("{ 'descr' : '<f8' , 'fortran_order' : False , 'shape' : ( 2L , 2L ) , }   "),
       }) {
    const loaded_array array = read_bytes(npy_with_header(dict, payload));
    EXPECT_EQ(array.shape, (std::vector<std::int64_t>{2, 2})) << dict;
    EXPECT_EQ(array.values_f64.at(3), 4.0) << dict;
  }
}

TEST(Npy, ReadsFormatVersion2) {
  const loaded_array array =
      read_bytes(npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", doubles({1, 2, 3}), 2));
  EXPECT_EQ(array.values_f64, (std::vector<double>{1, 2, 3}));
}

TEST(Npy, ReadsBigEndianData) {
  std::string payload = doubles({1.5, -2.0});
  for (std::size_t word = 0; word < 2; ++word) std::reverse(payload.begin() + 8 * word, payload.begin() + 8 * (word + 1));
  const loaded_array array =
      read_bytes(npy_with_header("{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", payload));
  EXPECT_EQ(array.values_f64, (std::vector<double>{1.5, -2.0}));
}

TEST(Npy, RejectsUnsupportedDtypesNamingThem) {
  for (const std::string descr : {"<i8", "<f2", "|u1", "<c16", "|f8"}) {
    expect_rejected(npy_with_header("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2,), }", doubles({1, 2})),
                    "dtype " + descr + " is not supported; use float32 or float64");
  }
  expect_rejected(npy_with_header("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,), }", doubles({1, 2})),
                  "structured");
}

TEST(Npy, RejectsFortranOrder) {
  expect_rejected(npy_with_header("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 1), }", doubles({1, 2})),
                  "Fortran");
}

TEST(Npy, RejectsTruncatedAndOversizedData) {
  const std::string good = encode_npy(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2}, dtype::float64);
  expect_rejected(good.substr(0, good.size() - 1), "truncated");
  expect_rejected(good.substr(0, good.size() - 48), "needs 48 bytes of data but the file has 0");
  expect_rejected(good + "xx", "2 bytes after the data");
  // A header claiming an absurd shape fails on the size check, before any allocation.
  expect_rejected(npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", ""),
                  "too large");
  expect_rejected(npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000,), }", ""),
                  "truncated");
}

TEST(Npy, RejectsBadMagicVersionAndTruncatedHeaders) {
  const std::string good = encode_npy(std::vector<double>{1}, {1}, dtype::float64);
  expect_rejected("", "too short");
  expect_rejected("PK\x03\x04 this is a zip file", "bad magic");
  std::string wrong_version = good;
  wrong_version[6] = 9;
  expect_rejected(wrong_version, "version 9.0");
  expect_rejected(good.substr(0, 12), "truncated .npy header");
  expect_rejected(good.substr(0, 9), "too short");
}

TEST(Npy, RejectsMalformedHeaderDicts) {
  const std::string payload = doubles({1, 2});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{'descr': '<f8', 'shape': (2,), }", "no 'fortran_order'"},
      {"{'descr': '<f8', 'fortran_order': False, }", "no 'shape'"},
      {"{'fortran_order': False, 'shape': (2,), }", "no 'descr'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'extra': 1}", "unexpected key 'extra'"},
      {"{'descr': '<f8, 'fortran_order': False, 'shape': (2,), }", "malformed .npy header"},
      {"{'descr': '<f8', 'fortran_order': maybe, 'shape': (2,), }", "True or False"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (-2,), }", "non-negative integers"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2.0,), }", "malformed .npy header"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }", "shape too large"},
      {"['descr', '<f8']", "expected '{'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), } trailing", "unexpected text"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)", "expected '}'"},
  };
  for (const auto& [dict, needle] : cases) {
    SCOPED_TRACE(dict);
    expect_rejected(npy_with_header(dict, payload), needle);
  }
}

TEST(Npy, MissingFileIsNamed) {
  try {
    (void)read_npy_file("/nonexistent/dir/points.npy");
    ADD_FAILURE() << "read a file that does not exist";
  } catch (const bad_input& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/dir/points.npy: no such file");
  }
}

}  // namespace
}  // namespace flashsinkhorn::cli
