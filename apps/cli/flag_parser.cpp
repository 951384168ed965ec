#include "flag_parser.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "bad_input.hpp"

namespace flashsinkhorn::cli {

void parse_flags(std::span<const std::string> args, const std::vector<flag_spec>& flags,
                 const std::function<void(const std::string&)>& positional) {
  bool flags_ended = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (flags_ended || !arg.starts_with("-") || arg == "-") {
      positional(arg);
      continue;
    }
    if (arg == "--") {
      flags_ended = true;
      continue;
    }
    const std::size_t equals = arg.find('=');
    const std::string name = arg.substr(0, equals);
    const auto spec = std::find_if(flags.begin(), flags.end(), [&](const flag_spec& f) { return f.name == name; });
    if (spec == flags.end()) throw bad_input("unknown option '" + name + "' (see --help)");
    if (spec->value_name.empty()) {
      if (equals != std::string::npos) throw bad_input(name + " takes no value");
      spec->apply({});
    } else if (equals != std::string::npos) {
      spec->apply(std::string_view(arg).substr(equals + 1));
    } else {
      if (i + 1 >= args.size()) throw bad_input(name + " needs a value (" + spec->value_name + ")");
      spec->apply(args[++i]);
    }
  }
}

std::string describe_flags(const std::vector<flag_spec>& flags) {
  std::size_t width = 0;
  for (const flag_spec& f : flags) width = std::max(width, f.name.size() + 1 + f.value_name.size());
  std::string text;
  for (const flag_spec& f : flags) {
    std::string left = f.name + (f.value_name.empty() ? "" : " " + f.value_name);
    left.resize(width + 2, ' ');
    text += "  " + left + f.help + "\n";
  }
  return text;
}

double parse_finite_double(std::string_view flag, std::string_view text) {
  std::string_view digits = text;
  if (digits.starts_with('+')) digits.remove_prefix(1);
  double value = 0;
  const auto [end, status] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || status != std::errc() || end != digits.data() + digits.size()) {
    throw bad_input(std::string(flag) + ": '" + std::string(text) + "' is not a number");
  }
  if (!std::isfinite(value)) {
    throw bad_input(std::string(flag) + ": '" + std::string(text) + "' is not a finite number");
  }
  return value;
}

int parse_int(std::string_view flag, std::string_view text, int minimum) {
  std::string_view digits = text;
  if (digits.starts_with('+')) digits.remove_prefix(1);
  int value = 0;
  const auto [end, status] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || status != std::errc() || end != digits.data() + digits.size()) {
    throw bad_input(std::string(flag) + ": '" + std::string(text) + "' is not an integer");
  }
  if (value < minimum) {
    throw bad_input(std::string(flag) + ": must be at least " + std::to_string(minimum) + " (got " +
                    std::string(text) + ")");
  }
  return value;
}

}  // namespace flashsinkhorn::cli
