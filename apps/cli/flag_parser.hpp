// A small table-driven parser for "--flag value", "--flag=value" and "--switch" arguments. The
// same table produces the usage text, so every flag has exactly one one-line description.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace flashsinkhorn::cli {

struct flag_spec {
  std::string name;        // "--eps"
  std::string value_name;  // "E"; empty for a switch
  std::string help;        // one line
  std::function<void(std::string_view value)> apply;  // value is empty for a switch
};

// Applies `flags` to `args` (the arguments after the command word). Positional arguments go to
// `positional` (which may throw); "--" ends flag parsing. Throws bad_input on an unknown flag, a
// missing value, or a value given to a switch.
void parse_flags(std::span<const std::string> args, const std::vector<flag_spec>& flags,
                 const std::function<void(const std::string&)>& positional);

// "  --eps E            entropic temperature ..." lines, aligned.
[[nodiscard]] std::string describe_flags(const std::vector<flag_spec>& flags);

// Number parsing for flag values: the whole text must be the number. Throw bad_input naming the
// flag ("--iters: 'abc' is not an integer").
[[nodiscard]] double parse_finite_double(std::string_view flag, std::string_view text);
[[nodiscard]] int parse_int(std::string_view flag, std::string_view text, int minimum);

}  // namespace flashsinkhorn::cli
