// The JSON summary: exact round-trip numbers, escaping, and no NaN ever printed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

#include "json_object.hpp"

namespace flashsinkhorn::cli {
namespace {

TEST(JsonObject, WritesEveryKindOfValueOnOneLine) {
  json_object json;
  json.add("cost", 0.1);
  json.add("iterations", 42);
  json.add("n", std::int64_t{10000000000});
  json.add("converged", true);
  json.add("device", "cpu");
  json.add_null("scaling");
  EXPECT_EQ(json.str(),
            "{\"cost\": 0.10000000000000001, \"iterations\": 42, \"n\": 10000000000, "
            "\"converged\": true, \"device\": \"cpu\", \"scaling\": null}");
}

TEST(JsonObject, NumbersRoundTripExactly) {
  for (const double value : {1.0 / 3.0, 1e-300, -2.5e300, std::numeric_limits<double>::denorm_min()}) {
    json_object json;
    json.add("v", value);
    const std::string text = json.str();
    EXPECT_EQ(std::strtod(text.c_str() + text.find(':') + 1, nullptr), value) << text;
  }
}

TEST(JsonObject, EscapesStrings) {
  EXPECT_EQ(json_string("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\nd\\u0001\"");
}

TEST(JsonObject, RefusesNonFiniteNumbersNamingTheKey) {
  json_object json;
  for (const double value : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    try {
      json.add("marginal_error", value);
      ADD_FAILURE() << "accepted " << value;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("marginal_error"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(json.str(), "{}");
}

}  // namespace
}  // namespace flashsinkhorn::cli
