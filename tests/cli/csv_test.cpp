// The .csv reader: header detection, line endings, and errors naming the file and line.
#include <gtest/gtest.h>

#include <cmath>

#include "bad_input.hpp"
#include "csv.hpp"
#include "scratch_directory.hpp"

namespace flashsinkhorn::cli {
namespace {

std::string rejection(const std::filesystem::path& file) {
  try {
    (void)read_csv_file(file);
  } catch (const bad_input& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Csv, ReadsRowsSkippingAHeaderAndBlankLines) {
  const scratch_directory dir;
  const loaded_array array = read_csv_file(dir.write("p.csv", "x,y\r\n1, 2\r\n\r\n-3.5e-1,+4\r\n"));
  EXPECT_EQ(array.shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(array.type, dtype::float64);
  EXPECT_EQ(array.values_f64, (std::vector<double>{1, 2, -0.35, 4}));
}

TEST(Csv, ReadsFullPrecisionAndASingleColumn) {
  const scratch_directory dir;
  const loaded_array array = read_csv_file(dir.write("w.csv", "0.1\n0.30000000000000004\n"));
  EXPECT_EQ(array.shape, (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(array.values_f64.at(1), 0.1 + 0.2);
}

TEST(Csv, PassesNonFiniteValuesOnForTheLibraryToReject) {
  const scratch_directory dir;
  const loaded_array array = read_csv_file(dir.write("n.csv", "nan,inf\n"));
  EXPECT_TRUE(std::isnan(array.values_f64.at(0)));
  EXPECT_TRUE(std::isinf(array.values_f64.at(1)));
}

TEST(Csv, RejectsRaggedRowsNonNumbersAndEmptyFiles) {
  const scratch_directory dir;
  EXPECT_NE(rejection(dir.write("r.csv", "1,2\n3\n")).find("r.csv: line 2 has 1 values but earlier rows have 2"),
            std::string::npos);
  EXPECT_NE(rejection(dir.write("t.csv", "1,2\n3,abc\n")).find("t.csv: line 2: 'abc' is not a number"),
            std::string::npos);
  EXPECT_NE(rejection(dir.write("e.csv", "1,,2\n1,2,3\n")).find("e.csv: line 1: '' is not a number"), std::string::npos);
  EXPECT_NE(rejection(dir.write("m.csv", "x,1\n1,2\n")).find("m.csv: line 1: 'x' is not a number"), std::string::npos);
  EXPECT_NE(rejection(dir.write("h.csv", "only,a,header\n")).find("h.csv: no rows of numbers"), std::string::npos);
  EXPECT_NE(rejection(dir.path() / "missing.csv").find("missing.csv: no such file"), std::string::npos);
}

}  // namespace
}  // namespace flashsinkhorn::cli
