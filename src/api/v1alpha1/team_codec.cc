// Team (issue 31): decode, encode, status patch.

#include <algorithm>

#include "api/v1alpha1/codec.h"
#include "api/v1alpha1/http_api.h"
#include "api/v1alpha1/json_io.h"
#include "api/v1alpha1/usage_io.h"
#include "k8s/duration.h"
#include "k8s/quantity.h"

namespace berth::api::v1alpha1 {

namespace json = k8s::json;
using io::Reader;
using io::Writer;

namespace {

// {cpu, memory, gpu} as in Run.spec.resources: quantities (a number or a string) and a count.
ResourceAmounts ReadAmounts(Reader r) {
  ResourceAmounts a;
  auto quantity = [&](const char* key, bool milli) -> std::optional<int64_t> {
    const json::Value* v = r.value() == nullptr ? nullptr : json::Find(*r.value(), {key});
    if (v == nullptr || v->IsNull()) return std::nullopt;
    std::string text = v->IsString() ? std::string(v->GetString()) : v->IsInt64() ? std::to_string(v->GetInt64()) : "";
    auto q = milli ? k8s::ParseMilliValue(text) : k8s::ParseValue(text);
    if (!q.ok()) {
      r.Note(key, "must be a quantity" + (text.empty() ? std::string() : ": " + q.status().message()));
      return std::nullopt;
    }
    return q.value();
  };
  a.cpu_milli = quantity("cpu", true);
  a.memory_bytes = quantity("memory", false);
  a.gpus = r.Int("gpu");
  return a;
}

std::optional<ResourceAmounts> ReadOptionalAmounts(Reader& r, const char* key) {
  if (!r.Has(key)) return std::nullopt;
  return ReadAmounts(r.Object(key));
}

// One of spec.budgets (issue 47): what the CRD cannot check (the period's bounds) noted.
TeamBudget ReadBudget(Reader& b) {
  TeamBudget budget;
  budget.resource = b.String("resource").value_or("");
  if (budget.resource != "gpu" && budget.resource != "cpu" && budget.resource != "memory") {
    b.Note("resource", "must be gpu, cpu or memory");
  }
  budget.hours = b.Number("hours").value_or(0);
  if (!(budget.hours >= 0)) b.Note("hours", "must be a number of hours, 0 or more");
  budget.period = b.String("period").value_or("");
  budget.fleet = b.String("fleet").value_or("");
  auto d = k8s::ParseDurationStrict(budget.period);
  if (!d.ok()) {
    b.Note("period", d.status().message());
  } else if (d.value() < kMinBudgetPeriod || d.value() > kMaxBudgetPeriod) {
    b.Note("period", "must be from 1h to 90d (the usage history berth keeps)");
  } else {
    budget.period_ms = d.value();
  }
  return budget;
}

void DecodeTeamSpec(const json::Value& v, TeamSpec& spec, std::string& err) {
  Reader r(&v, "spec", &err);
  spec.namespaces = r.Strings("namespaces");
  spec.parent = r.String("parent").value_or("");
  spec.weight = r.Int("weight").value_or(1);
  if (spec.weight < 1) r.Note("weight", "must be at least 1");
  for (Reader& s : r.Objects("shares")) {
    TeamShare share;
    share.fleet = s.String("fleet").value_or("");
    if (share.fleet.empty()) s.Note("fleet", "must name a Fleet");
    share.nominal = ReadAmounts(s.Object("nominal"));
    share.borrowing_limit = ReadOptionalAmounts(s, "borrowingLimit");
    share.lending_limit = ReadOptionalAmounts(s, "lendingLimit");
    spec.shares.push_back(std::move(share));
  }
  for (Reader& b : r.Objects("budgets")) spec.budgets.push_back(ReadBudget(b));
}

TeamStatus ReadTeamStatus(const json::Value& v, std::string& problem) {
  TeamStatus s;
  Reader st(&v, "status", &problem);
  for (Reader& f : st.Objects("fleets")) {
    TeamFleetStatus tf;
    tf.fleet = f.String("fleet").value_or("");
    tf.nominal = ReadAmounts(f.Object("nominal"));
    tf.used = ReadAmounts(f.Object("used"));
    tf.borrowed = ReadAmounts(f.Object("borrowed"));
    tf.lent = ReadAmounts(f.Object("lent"));
    s.fleets.push_back(std::move(tf));
  }
  Reader usage = st.Object("usage");
  s.gpu_hours = usage.Number("gpuHours").value_or(0);
  s.cpu_hours = usage.Number("cpuHours").value_or(0);
  s.usage_updated_at = usage.TimeAt("updatedAt");
  s.weighted_gpu_hours = usage.Number("weightedGpuHours");
  s.weighted_cpu_hours = usage.Number("weightedCpuHours");
  s.observed_generation = st.Int("observedGeneration").value_or(0);
  s.conditions = io::ReadConditions(st);
  s.usage_history = io::ReadUsageHistory(st, "byNamespace", problem);
  s.usage_folded_until = st.TimeAt("usageFoldedUntil");
  for (Reader& b : st.Objects("budgets")) {
    TeamBudgetStatus e;
    e.resource = b.String("resource").value_or("");
    e.period = b.String("period").value_or("");
    e.fleet = b.String("fleet").value_or("");
    e.hours = b.Number("hours").value_or(0);
    e.used = b.Number("used").value_or(0);
    e.refills_at = b.TimeAt("refillsAt");
    s.budgets.push_back(std::move(e));
  }
  return s;
}

void WriteAmounts(Writer& w, const ResourceAmounts& a) {
  w.raw().StartObject();
  if (a.cpu_milli) w.StringMember("cpu", k8s::FormatMilli(*a.cpu_milli));
  if (a.memory_bytes) w.StringMember("memory", k8s::FormatBytes(*a.memory_bytes));
  w.IntMemberIfSet("gpu", a.gpus);
  w.raw().EndObject();
}

void WriteAmountsMember(Writer& w, std::string_view key, const ResourceAmounts& a) {
  w.Key(key);
  WriteAmounts(w, a);
}

void WriteAmountsMemberIfSet(Writer& w, std::string_view key, const std::optional<ResourceAmounts>& a) {
  if (a) WriteAmountsMember(w, key, *a);
}

void WriteTeamSpec(Writer& w, const TeamSpec& s) {
  w.raw().StartObject();
  w.Key("namespaces");
  w.StringList(s.namespaces);
  w.StringMemberIfSet("parent", s.parent);
  w.IntMember("weight", s.weight);
  w.Key("shares");
  w.raw().StartArray();
  for (const auto& share : s.shares) {
    w.raw().StartObject();
    w.StringMember("fleet", share.fleet);
    WriteAmountsMember(w, "nominal", share.nominal);
    WriteAmountsMemberIfSet(w, "borrowingLimit", share.borrowing_limit);
    WriteAmountsMemberIfSet(w, "lendingLimit", share.lending_limit);
    w.raw().EndObject();
  }
  w.raw().EndArray();
  if (!s.budgets.empty()) {
    w.Key("budgets");
    w.raw().StartArray();
    for (const auto& b : s.budgets) {
      w.raw().StartObject();
      w.StringMember("resource", b.resource);
      w.NumberMember("hours", b.hours);
      w.StringMember("period", b.period);
      w.StringMemberIfSet("fleet", b.fleet);
      w.raw().EndObject();
    }
    w.raw().EndArray();
  }
  w.raw().EndObject();
}

// The members of one element of status.fleets (the Teams page adds the share's limits to them).
void WriteFleetAmounts(Writer& w, const TeamFleetStatus& f) {
  w.StringMember("fleet", f.fleet);
  WriteAmountsMember(w, "nominal", f.nominal);
  WriteAmountsMember(w, "used", f.used);
  WriteAmountsMember(w, "borrowed", f.borrowed);
  WriteAmountsMember(w, "lent", f.lent);
}

// status.usage as a member.
void WriteUsage(Writer& w, const TeamStatus& s) {
  w.Key("usage");
  w.raw().StartObject();
  w.NumberMember("gpuHours", s.gpu_hours);
  w.NumberMember("cpuHours", s.cpu_hours);
  w.Key("updatedAt");
  w.TimeOrNull(s.usage_updated_at);
  if (s.weighted_gpu_hours) w.NumberMember("weightedGpuHours", *s.weighted_gpu_hours);
  if (s.weighted_cpu_hours) w.NumberMember("weightedCpuHours", *s.weighted_cpu_hours);
  w.raw().EndObject();
}

void WriteTeamStatus(Writer& w, const TeamStatus& s) {
  w.raw().StartObject();
  w.Key("fleets");
  w.raw().StartArray();
  for (const auto& f : s.fleets) {
    w.raw().StartObject();
    WriteFleetAmounts(w, f);
    w.raw().EndObject();
  }
  w.raw().EndArray();
  WriteUsage(w, s);
  w.Key("budgets");
  w.raw().StartArray();
  for (const TeamBudgetStatus& b : s.budgets) {
    w.raw().StartObject();
    w.StringMember("resource", b.resource);
    w.StringMember("period", b.period);
    w.StringMemberIfSet("fleet", b.fleet);
    w.NumberMember("hours", b.hours);
    w.NumberMember("used", b.used);
    if (b.refills_at) {
      w.Key("refillsAt");
      w.TimeOrNull(b.refills_at);
    }
    w.raw().EndObject();
  }
  w.raw().EndArray();
  w.IntMember("observedGeneration", s.observed_generation);
  w.Key("conditions");
  io::WriteConditions(w, s.conditions);
  w.raw().EndObject();
}

}  // namespace

k8s::Result<Team> DecodeTeam(const json::Value& obj) {
  if (!obj.IsObject()) return k8s::Status::Error("a Team must be a JSON object");
  Team t;
  t.meta = k8s::DecodeMeta(obj);
  if (t.meta.name.empty()) return k8s::Status::Error("a Team needs metadata.name");
  if (const json::Value* spec = json::Find(obj, {"spec"}); spec != nullptr) {
    DecodeTeamSpec(*spec, t.spec, t.invalid_message);
  }
  if (const json::Value* st = json::Find(obj, {"status"}); st != nullptr) t.status = ReadTeamStatus(*st, t.status_problem);
  return t;
}

std::string EncodeTeam(const Team& team) {
  return io::EncodeObject(
      "Team", team.meta, [&](Writer& w) { WriteTeamSpec(w, team.spec); },
      [&](Writer& w) { WriteTeamStatus(w, team.status); });
}

namespace {

// One team of the Teams page: its place in the tree, its fleets as its status shows them (with the
// limits its share sets) and its decayed usage.
void WriteTeamsPageItem(Writer& w, const Team& t) {
  w.raw().StartObject();
  w.StringMember("name", t.meta.name);
  w.StringMember("parent", t.spec.parent);
  w.IntMember("weight", t.spec.weight);
  w.Key("fleets");
  w.raw().StartArray();
  for (const auto& f : t.status.fleets) {
    w.raw().StartObject();
    WriteFleetAmounts(w, f);
    auto share = std::find_if(t.spec.shares.begin(), t.spec.shares.end(),
                              [&](const TeamShare& s) { return s.fleet == f.fleet; });
    if (share != t.spec.shares.end()) {
      WriteAmountsMemberIfSet(w, "borrowingLimit", share->borrowing_limit);
      WriteAmountsMemberIfSet(w, "lendingLimit", share->lending_limit);
    }
    w.raw().EndObject();
  }
  w.raw().EndArray();
  WriteUsage(w, t.status);
  w.Key("conditions");
  io::WriteConditions(w, t.status.conditions);
  w.raw().EndObject();
}

}  // namespace

std::string EncodeTeamsPage(const std::vector<Team>& teams) {
  Writer w;
  w.raw().StartObject();
  w.Key("items");
  w.raw().StartArray();
  for (const Team& t : teams) WriteTeamsPageItem(w, t);
  w.raw().EndArray();
  w.raw().EndObject();
  return w.Take();
}

std::string TeamStatusPatch(const TeamStatus& status, std::string_view resource_version) {
  return io::MergePatch(resource_version, "status", [&](Writer& w) { WriteTeamStatus(w, status); });
}

std::string TeamUsagePatch(const base::UsageHistory& history, const Time& folded_until, std::string_view resource_version) {
  return io::MergePatch(resource_version, "status", [&](Writer& w) {
    w.raw().StartObject();
    io::WriteUsageHistory(w, history, "byNamespace");
    w.Key("usageFoldedUntil");
    w.TimeOrNull(folded_until);
    w.raw().EndObject();
  });
}

}  // namespace berth::api::v1alpha1
