#pragma once
// API values written as the API spells them, for tests that build statuses by hand.

#include <optional>
#include <string_view>

#include "api/v1alpha1/meta.h"
#include "k8s/timefmt.h"

namespace berth::reconcilers::testing {

namespace api = berth::api::v1alpha1;

inline api::ConditionKind Kind(std::string_view s) { return api::ConditionKind::FromApi(s); }
inline api::ReasonCode Why(std::string_view s) { return api::ReasonCode::FromApi(s); }
// An RFC 3339 time; nullopt for "" or text that is no time.
inline std::optional<api::Time> TimeAt(std::string_view s) {
  auto t = k8s::ParseRfc3339(s);
  if (!t.ok()) return std::nullopt;
  return api::Time(t.value());
}

}  // namespace berth::reconcilers::testing
