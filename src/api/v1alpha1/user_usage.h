#pragma once
// Issue 47: the per-user usage of one Team (docs/concepts.md "Per-user usage"): a ConfigMap in
// berth's own namespace, written only by the usage fold (reconcilers/objects/usage_keeper.h), read
// by the queue API's usage resource (controller/usage_api.h). Kept out of the Team: whoever may
// read Teams would see every user's.

#include <optional>
#include <string>
#include <string_view>

#include "api/v1alpha1/meta.h"
#include "base/run_waits.h"
#include "base/usage.h"
#include "k8s/json.h"
#include "k8s/result.h"

namespace berth::api::v1alpha1 {

// `history` as a Team's usageHistory, with the users of each day in `by_namespace` (the day's
// kNamedNamespaces largest, the rest under kOthers) and no hourly detail; its own watermark
// `folded_until` (every span of the Team's runs up to then is in it). `starts`: the runs that
// started before `folded_until`, per UTC day and fleet, by submitter and namespace, with their
// waits (base/run_waits.h).
struct UserUsage {
  std::string team;
  base::UsageHistory history;
  std::optional<Time> folded_until;
  std::string resource_version;  // as read ("" when it does not exist yet)
  base::RunStartsHistory starts = {};  // (a default: stores written before it have none)
};

// The ConfigMap: labels berth.dev/usage=users; data "usage.json", the JSON object {"team",
// "usageFoldedUntil", "usageHistory" (as a Team's, users under "byUser"), "runStarts": [{"day",
// "fleet", "waits", "byUser": {user: waits}, "byNamespace": {ns: waits}}]}, waits an object of
// the runs per bucket of wait, keyed by the bucket's lower bound in seconds ({"0": 2, "300": 1}). Its name
// "berth-usage-<team>" (a name too long for that ends in a hash of the team's). An update is
// guarded by the resourceVersion when set.
inline constexpr const char* kUserUsageLabel = "berth.dev/usage";
std::string UserUsageName(std::string_view team);
std::string EncodeUserUsage(const UserUsage& usage, std::string_view ns);
// Refuses a ConfigMap that is not one (no label, no readable usage.json, another team's name).
k8s::Result<UserUsage> DecodeUserUsage(const k8s::json::Value& configmap);

}  // namespace berth::api::v1alpha1
