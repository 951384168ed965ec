// A flat JSON object written on one line, keys in insertion order. Numbers are printed with
// %.17g (they round-trip exactly); a non-finite number cannot be represented in JSON, so adding
// one throws std::runtime_error naming the key.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace flashsinkhorn::cli {

class json_object {
 public:
  void add(std::string_view key, double value);
  void add(std::string_view key, std::int64_t value);
  void add(std::string_view key, int value) { add(key, static_cast<std::int64_t>(value)); }
  void add(std::string_view key, bool value);
  void add(std::string_view key, std::string_view value);
  void add(std::string_view key, const char* value) { add(key, std::string_view(value)); }
  void add_null(std::string_view key);

  // "{"key": value, ...}" without a trailing newline.
  [[nodiscard]] std::string str() const { return "{" + members_ + "}"; }

 private:
  void add_raw(std::string_view key, std::string_view json_value);
  std::string members_;
};

// `text` as a JSON string literal, quotes included.
[[nodiscard]] std::string json_string(std::string_view text);

}  // namespace flashsinkhorn::cli
