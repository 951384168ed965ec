#include "csv.hpp"

#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include "bad_input.hpp"
#include "input_file.hpp"

namespace flashsinkhorn::cli {
namespace {

std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r";
  const std::size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) - first + 1);
}

std::optional<double> parse_number(std::string_view field) {
  field = trim(field);
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  double value = 0;
  const auto [end, status] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || status != std::errc() || end != field.data() + field.size()) return std::nullopt;
  return value;
}

// A line split at commas: its numbers, and the first field that is not one (if any).
struct parsed_row {
  std::vector<double> values;
  std::optional<std::string> bad_field;
  bool any_number = false;  // false: every field is text (a header line)
};

parsed_row parse_row(std::string_view line) {
  parsed_row row;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    const std::string_view field = line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const std::optional<double> value = parse_number(field);
    if (value) {
      row.any_number = true;
      row.values.push_back(*value);
    } else if (!row.bad_field) {
      row.bad_field = std::string(trim(field));
    }
    if (comma == std::string_view::npos) return row;
    start = comma + 1;
  }
}

}  // namespace

loaded_array read_csv_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  opened_file file = open_input_file(path);
  loaded_array array;
  array.type = dtype::float64;
  std::int64_t rows = 0;
  std::size_t columns = 0;
  std::string line;
  for (std::int64_t line_number = 1; std::getline(file.stream, line); ++line_number) {
    if (trim(line).empty()) continue;
    parsed_row row = parse_row(line);
    if (row.bad_field) {
      if (line_number == 1 && !row.any_number) continue;  // a header line
      throw bad_input(name + ": line " + std::to_string(line_number) + ": '" + *row.bad_field +
                      "' is not a number");
    }
    if (rows == 0) columns = row.values.size();
    if (row.values.size() != columns) {
      throw bad_input(name + ": line " + std::to_string(line_number) + " has " +
                      std::to_string(row.values.size()) + " values but earlier rows have " +
                      std::to_string(columns));
    }
    array.values_f64.insert(array.values_f64.end(), row.values.begin(), row.values.end());
    ++rows;
  }
  if (file.stream.bad()) throw bad_input(name + ": read error");
  if (rows == 0) throw bad_input(name + ": no rows of numbers");
  array.shape = {rows, static_cast<std::int64_t>(columns)};
  return array;
}

}  // namespace flashsinkhorn::cli
