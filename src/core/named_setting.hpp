// An environment setting that names one of a few choices (FLASHSINKHORN_KERNEL, _EXP2, _PLAN_CLUSTER_PAIRS,
// ...): unset or empty is the default, a listed name is its value, anything else is an invalid_argument
// that names the variable and lists the names, "VARIABLE must be a, b or c (or unset), got 'x'". The
// same table gives a value's name back (name_of: its first entry, where several names share a value).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {

template <class T>
struct named_choice {
  const char* name;
  T value;
};

// "a, b or c": the names of `choices` in order.
template <class T, std::size_t N>
std::string choice_names(const named_choice<T> (&choices)[N]) {
  std::string names;
  for (std::size_t k = 0; k < N; ++k) names += std::string(k == 0 ? "" : k + 1 == N ? " or " : ", ") + choices[k].name;
  return names;
}

template <class T, std::size_t N>
T parse_named_setting(const char* text, const char* variable, const named_choice<T> (&choices)[N], T unset) {
  if (text == nullptr || *text == '\0') return unset;
  for (const named_choice<T>& choice : choices)
    if (std::string_view(text) == choice.name) return choice.value;
  throw invalid_argument(std::string(variable) + " must be " + choice_names(choices) + " (or unset), got '" + text + "'");
}

template <class T, std::size_t N>
const char* name_of(const named_choice<T> (&choices)[N], T value) {
  for (const named_choice<T>& choice : choices)
    if (choice.value == value) return choice.name;
  return "?";
}

}  // namespace flashsinkhorn::detail
