#include "json_object.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace flashsinkhorn::cli {

std::string json_string(std::string_view text) {
  std::string quoted = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': quoted += "\\\""; break;
      case '\\': quoted += "\\\\"; break;
      case '\n': quoted += "\\n"; break;
      case '\r': quoted += "\\r"; break;
      case '\t': quoted += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          quoted += escaped;
        } else {
          quoted += c;
        }
    }
  }
  return quoted + "\"";
}

void json_object::add_raw(std::string_view key, std::string_view json_value) {
  if (!members_.empty()) members_ += ", ";
  members_ += json_string(key);
  members_ += ": ";
  members_ += json_value;
}

void json_object::add(std::string_view key, double value) {
  if (!std::isfinite(value)) {
    throw std::runtime_error("the result '" + std::string(key) + "' is not finite (" +
                             std::to_string(value) + "); try a larger --eps or --precision fp64");
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  add_raw(key, text);
}

void json_object::add(std::string_view key, std::int64_t value) { add_raw(key, std::to_string(value)); }

void json_object::add(std::string_view key, bool value) { add_raw(key, value ? "true" : "false"); }

void json_object::add(std::string_view key, std::string_view value) { add_raw(key, json_string(value)); }

void json_object::add_null(std::string_view key) { add_raw(key, "null"); }

}  // namespace flashsinkhorn::cli
