// Issue 47: usage histories (Team.status.usageHistory and a Team's per-user store) and the per-user
// store's ConfigMap.

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>

#include "api/v1alpha1/json_io.h"
#include "api/v1alpha1/usage_io.h"
#include "api/v1alpha1/user_usage.h"

namespace berth::api::v1alpha1 {

namespace json = k8s::json;
using io::Reader;
using io::Writer;

namespace io {

namespace {

// {gpuHours, cpuHours, memoryGiBHours}, each 0 when absent.
base::UsageHours ReadHours(Reader& r) {
  return base::UsageHours{.gpu = r.Number("gpuHours").value_or(0),
                          .cpu = r.Number("cpuHours").value_or(0),
                          .memory_gib = r.Number("memoryGiBHours").value_or(0)};
}

// Opens one day's object: {"day", "fleet", ... (the caller closes it).
void StartDay(Writer& w, const std::string& day, const std::string& fleet) {
  w.raw().StartObject();
  w.StringMember("day", day);
  w.StringMember("fleet", fleet);
}

// {gpuHours, cpuHours, memoryGiBHours} as members, those that are 0 left out when `compact`.
void WriteHours(Writer& w, const base::UsageHours& h, bool compact) {
  if (!compact || h.gpu != 0) w.NumberMember("gpuHours", h.gpu);
  if (!compact || h.cpu != 0) w.NumberMember("cpuHours", h.cpu);
  if (!compact || h.memory_gib != 0) w.NumberMember("memoryGiBHours", h.memory_gib);
}

}  // namespace

base::UsageHistory ReadUsageHistory(Reader& st, std::string_view by, std::string& problem) {
  base::UsageHistory history;
  for (Reader& d : st.Objects("usageHistory")) {
    base::UsageDay day;
    day.day = d.String("day").value_or("");
    day.fleet = d.String("fleet").value_or("");
    day.total = ReadHours(d);
    const json::Value* named = d.value() == nullptr ? nullptr : json::Find(*d.value(), {by});
    if (named != nullptr && named->IsObject()) {
      for (auto it = named->MemberBegin(); it != named->MemberEnd(); ++it) {
        Reader n(&it->value, d.path() + "." + std::string(by) + "." + it->name.GetString(), &problem);
        day.by_namespace[it->name.GetString()] = ReadHours(n);
      }
    }
    for (Reader& h : d.Objects("hourly")) {
      const int64_t hour = h.Int("hour").value_or(-1);
      if (hour < 0 || hour > 23) {
        h.Note("hour", "must be an hour of the day, 0 to 23");
        continue;
      }
      day.hourly[static_cast<int>(hour)] = ReadHours(h);
    }
    history.push_back(std::move(day));
  }
  return history;
}

void WriteUsageHistory(Writer& w, const base::UsageHistory& history, std::string_view by) {
  w.Key("usageHistory");
  w.raw().StartArray();
  for (const base::UsageDay& d : history) {
    StartDay(w, d.day, d.fleet);
    WriteHours(w, d.total, false);
    w.Key(by);
    w.raw().StartObject();
    for (const auto& [ns, h] : d.by_namespace) {
      w.Key(ns);
      w.raw().StartObject();
      WriteHours(w, h, true);
      w.raw().EndObject();
    }
    w.raw().EndObject();
    if (!d.hourly.empty()) {
      w.Key("hourly");
      w.raw().StartArray();
      for (const auto& [hour, h] : d.hourly) {
        w.raw().StartObject();
        w.IntMember("hour", hour);
        WriteHours(w, h, true);
        w.raw().EndObject();
      }
      w.raw().EndArray();
    }
    w.raw().EndObject();
  }
  w.raw().EndArray();
}

}  // namespace io

namespace {
constexpr std::string_view kUserUsagePrefix = "berth-usage-";

// {"<a bucket's lower bound in seconds>": runs, ...}, the buckets without runs left out.
void WriteWaits(Writer& w, const base::WaitHistogram& h) {
  w.raw().StartObject();
  for (size_t i = 0; i < h.counts.size(); ++i) {
    if (h.counts[i] != 0) w.IntMember(std::to_string(base::kWaitBucketFrom[i]), h.counts[i]);
  }
  w.raw().EndObject();
}

void WriteNamedWaits(Writer& w, std::string_view key, const std::map<std::string, base::WaitHistogram>& named) {
  w.Key(key);
  w.raw().StartObject();
  for (const auto& [name, h] : named) {
    w.Key(name);
    WriteWaits(w, h);
  }
  w.raw().EndObject();
}

void WriteRunStarts(Writer& w, const base::RunStartsHistory& starts) {
  w.Key("runStarts");
  w.raw().StartArray();
  for (const base::RunStartsDay& d : starts) {
    io::StartDay(w, d.day, d.fleet);
    w.Key("waits");
    WriteWaits(w, d.total);
    WriteNamedWaits(w, "byUser", d.by_user);
    WriteNamedWaits(w, "byNamespace", d.by_namespace);
    w.raw().EndObject();
  }
  w.raw().EndArray();
}

// A waits object: every key a bucket's lower bound, every count a whole number from 0.
base::WaitHistogram ReadWaits(const json::Value* v, const std::string& path, std::string& problem) {
  base::WaitHistogram h;
  if (v == nullptr) return h;
  if (!v->IsObject()) {
    if (problem.empty()) problem = path + " must be an object of runs per bucket of wait";
    return h;
  }
  for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
    const std::string_view key(it->name.GetString(), it->name.GetStringLength());
    int64_t from = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), from);
    const auto bucket = std::find(base::kWaitBucketFrom.begin(), base::kWaitBucketFrom.end(), from);
    if (ec != std::errc() || end != key.data() + key.size() || bucket == base::kWaitBucketFrom.end() ||
        !it->value.IsInt64() || it->value.GetInt64() < 0) {
      if (problem.empty()) problem = path + "." + std::string(key) + ": not a bucket of wait with a count of runs";
      continue;
    }
    h.counts[static_cast<size_t>(bucket - base::kWaitBucketFrom.begin())] += it->value.GetInt64();
  }
  return h;
}

std::map<std::string, base::WaitHistogram> ReadNamedWaits(const json::Value* v, const std::string& path,
                                                          std::string& problem) {
  std::map<std::string, base::WaitHistogram> out;
  if (v == nullptr || !v->IsObject()) return out;
  for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
    const std::string name = it->name.GetString();
    out[name] = ReadWaits(&it->value, path + "." + name, problem);
  }
  return out;
}

base::RunStartsHistory ReadRunStarts(Reader& r, std::string& problem) {
  base::RunStartsHistory out;
  for (Reader& d : r.Objects("runStarts")) {
    base::RunStartsDay day;
    day.day = d.String("day").value_or("");
    day.fleet = d.String("fleet").value_or("");
    const json::Value* v = d.value();
    day.total = ReadWaits(v == nullptr ? nullptr : json::Find(*v, {"waits"}), d.path() + ".waits", problem);
    day.by_user = ReadNamedWaits(v == nullptr ? nullptr : json::Find(*v, {"byUser"}), d.path() + ".byUser", problem);
    day.by_namespace =
        ReadNamedWaits(v == nullptr ? nullptr : json::Find(*v, {"byNamespace"}), d.path() + ".byNamespace", problem);
    out.push_back(std::move(day));
  }
  return out;
}

constexpr size_t kMaxName = 253;
constexpr const char* kUserUsageKey = "usage.json";
constexpr const char* kUsers = "users";
}  // namespace

std::string UserUsageName(std::string_view team) {
  std::string name = std::string(kUserUsagePrefix) + std::string(team);
  if (name.size() <= kMaxName) return name;
  uint64_t h = 14695981039346656037ULL;  // FNV-1a: the same name whatever the build
  for (char c : team) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  name.resize(kMaxName - 17);
  if (name.back() == '.' || name.back() == '-') name.back() = 'x';
  return name + "-" + hex;
}

std::string EncodeUserUsage(const UserUsage& usage, std::string_view ns) {
  Writer inner;
  inner.raw().StartObject();
  inner.StringMember("team", usage.team);
  inner.Key("usageFoldedUntil");
  inner.TimeOrNull(usage.folded_until);
  io::WriteUsageHistory(inner, usage.history, "byUser");
  WriteRunStarts(inner, usage.starts);
  inner.raw().EndObject();
  Writer w;
  w.raw().StartObject();
  w.StringMember("apiVersion", "v1");
  w.StringMember("kind", "ConfigMap");
  w.Key("metadata");
  w.raw().StartObject();
  w.StringMember("name", UserUsageName(usage.team));
  w.StringMember("namespace", ns);
  w.StringMemberIfSet("resourceVersion", usage.resource_version);
  w.Key("labels");
  w.raw().StartObject();
  w.StringMember(kUserUsageLabel, kUsers);
  w.raw().EndObject();
  w.raw().EndObject();
  w.Key("data");
  w.raw().StartObject();
  w.StringMember(kUserUsageKey, inner.Take());
  w.raw().EndObject();
  w.raw().EndObject();
  return w.Take();
}

k8s::Result<UserUsage> DecodeUserUsage(const json::Value& configmap) {
  const std::string name = json::GetString(json::Find(configmap, {"metadata", "name"}));
  if (json::GetString(json::Find(configmap, {"metadata", "labels", kUserUsageLabel})) != kUsers) {
    return k8s::Status::Error("ConfigMap " + name + " is not a per-user usage store (no label " +
                              std::string(kUserUsageLabel) + "=" + kUsers + ")");
  }
  UserUsage u;
  u.resource_version = json::GetString(json::Find(configmap, {"metadata", "resourceVersion"}));
  auto doc = json::Parse(json::GetString(json::Find(configmap, {"data", kUserUsageKey})));
  if (!doc.ok()) return k8s::Status::Error("ConfigMap " + name + ": " + kUserUsageKey + " is not JSON");
  std::string problem;
  Reader r(&*doc, kUserUsageKey, &problem);
  u.team = r.String("team").value_or("");
  u.folded_until = r.TimeAt("usageFoldedUntil");
  u.history = io::ReadUsageHistory(r, "byUser", problem);
  u.starts = ReadRunStarts(r, problem);
  if (!problem.empty()) return k8s::Status::Error("ConfigMap " + name + ": " + problem);
  if (u.team.empty() || UserUsageName(u.team) != name) {
    return k8s::Status::Error("ConfigMap " + name + " names another team (" + u.team + ")");
  }
  return u;
}

}  // namespace berth::api::v1alpha1
