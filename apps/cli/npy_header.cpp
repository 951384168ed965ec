#include "npy_header.hpp"

#include <cctype>
#include <limits>

#include "bad_input.hpp"

namespace flashsinkhorn::cli {
namespace {

// A recursive-descent reader for the small subset of Python literals a header uses:
// strings, True/False, and tuples of non-negative integers.
class header_reader {
 public:
  header_reader(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  [[noreturn]] void fail(const std::string& problem) const {
    throw bad_input(name_ + ": malformed .npy header (" + problem + ")");
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  [[nodiscard]] char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }

  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }

  std::string read_string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    const std::size_t end = text_.find(quote, ++pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }

  bool read_bool() {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::string_view w = word;
      if (text_.substr(pos_, w.size()) == w) {
        pos_ += w.size();
        return value;
      }
    }
    fail("fortran_order must be True or False");
  }

  std::int64_t read_extent() {
    skip_space();
    std::int64_t value = 0;
    std::size_t digits = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const int digit = text_[pos_++] - '0';
      if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10) fail("shape too large");
      value = value * 10 + digit;
      ++digits;
    }
    if (digits == 0) fail("shape must be a tuple of non-negative integers");
    accept('L');  // Python 2 long suffix, still found in old files
    return value;
  }

  std::vector<std::int64_t> read_shape() {
    expect('(');
    std::vector<std::int64_t> shape;
    while (!accept(')')) {
      shape.push_back(read_extent());
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }

  void expect_end() {
    if (peek() != '\0') fail("unexpected text after the dict");
  }

 private:
  std::string_view text_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

}  // namespace

npy_header parse_npy_header_dict(std::string_view text, const std::string& name) {
  header_reader reader(text, name);
  npy_header header;
  bool has_descr = false;
  bool has_order = false;
  bool has_shape = false;
  reader.expect('{');
  while (!reader.accept('}')) {
    const std::string key = reader.read_string();
    reader.expect(':');
    if (key == "descr") {
      if (reader.peek() == '[') {
        throw bad_input(name + ": structured dtypes are not supported; use float32 or float64");
      }
      header.descr = reader.read_string();
      has_descr = true;
    } else if (key == "fortran_order") {
      header.fortran_order = reader.read_bool();
      has_order = true;
    } else if (key == "shape") {
      header.shape = reader.read_shape();
      has_shape = true;
    } else {
      reader.fail("unexpected key '" + key + "'");
    }
    if (!reader.accept(',')) {
      reader.expect('}');
      break;
    }
  }
  reader.expect_end();
  if (!has_descr) reader.fail("no 'descr'");
  if (!has_order) reader.fail("no 'fortran_order'");
  if (!has_shape) reader.fail("no 'shape'");
  return header;
}

std::string format_npy_header_dict(const npy_header& header) {
  std::string shape = "(";
  for (const std::int64_t extent : header.shape) shape += std::to_string(extent) + ", ";
  if (header.shape.size() > 1) shape.resize(shape.size() - 2);
  if (header.shape.size() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  return "{'descr': '" + header.descr + "', 'fortran_order': " +
         (header.fortran_order ? "True" : "False") + ", 'shape': " + shape + ", }";
}

}  // namespace flashsinkhorn::cli
