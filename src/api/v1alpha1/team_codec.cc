// Team (issue 31): decode, encode, status patch.

#include "api/v1alpha1/codec.h"
#include "api/v1alpha1/http_api.h"
#include "api/v1alpha1/json_io.h"
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
  s.observed_generation = st.Int("observedGeneration").value_or(0);
  s.conditions = io::ReadConditions(st);
  return s;
}

void WriteAmounts(Writer& w, const ResourceAmounts& a) {
  w.raw().StartObject();
  if (a.cpu_milli) {
    w.Key("cpu");
    w.String(k8s::FormatMilli(*a.cpu_milli));
  }
  if (a.memory_bytes) {
    w.Key("memory");
    w.String(k8s::FormatBytes(*a.memory_bytes));
  }
  if (a.gpus) {
    w.Key("gpu");
    w.Int(*a.gpus);
  }
  w.raw().EndObject();
}

void WriteTeamSpec(Writer& w, const TeamSpec& s) {
  w.raw().StartObject();
  w.Key("namespaces");
  w.StringList(s.namespaces);
  if (!s.parent.empty()) {
    w.Key("parent");
    w.String(s.parent);
  }
  w.Key("weight");
  w.Int(s.weight);
  w.Key("shares");
  w.raw().StartArray();
  for (const auto& share : s.shares) {
    w.raw().StartObject();
    w.Key("fleet");
    w.String(share.fleet);
    w.Key("nominal");
    WriteAmounts(w, share.nominal);
    if (share.borrowing_limit) {
      w.Key("borrowingLimit");
      WriteAmounts(w, *share.borrowing_limit);
    }
    if (share.lending_limit) {
      w.Key("lendingLimit");
      WriteAmounts(w, *share.lending_limit);
    }
    w.raw().EndObject();
  }
  w.raw().EndArray();
  w.raw().EndObject();
}

void WriteTeamStatus(Writer& w, const TeamStatus& s) {
  w.raw().StartObject();
  w.Key("fleets");
  w.raw().StartArray();
  for (const auto& f : s.fleets) {
    w.raw().StartObject();
    w.Key("fleet");
    w.String(f.fleet);
    const std::pair<const char*, const ResourceAmounts*> parts[] = {
        {"nominal", &f.nominal}, {"used", &f.used}, {"borrowed", &f.borrowed}, {"lent", &f.lent}};
    for (const auto& [k, a] : parts) {
      w.Key(k);
      WriteAmounts(w, *a);
    }
    w.raw().EndObject();
  }
  w.raw().EndArray();
  w.Key("usage");
  w.raw().StartObject();
  w.Key("gpuHours");
  w.raw().Double(s.gpu_hours);
  w.Key("cpuHours");
  w.raw().Double(s.cpu_hours);
  w.Key("updatedAt");
  w.TimeOrNull(s.usage_updated_at);
  w.raw().EndObject();
  w.Key("observedGeneration");
  w.Int(s.observed_generation);
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
  Writer w;
  w.raw().StartObject();
  io::WriteHead(w, "Team", team.meta);
  w.Key("spec");
  WriteTeamSpec(w, team.spec);
  w.Key("status");
  WriteTeamStatus(w, team.status);
  w.raw().EndObject();
  return w.Take();
}

namespace {

// One team of the Teams page: its place in the tree, its fleets as its status shows them (with the
// limits its share sets) and its decayed usage.
void WriteTeamsPageItem(Writer& w, const Team& t) {
  w.raw().StartObject();
  w.Key("name");
  w.String(t.meta.name);
  w.Key("parent");
  w.String(t.spec.parent);
  w.Key("weight");
  w.Int(t.spec.weight);
  w.Key("fleets");
  w.raw().StartArray();
  for (const auto& f : t.status.fleets) {
    w.raw().StartObject();
    w.Key("fleet");
    w.String(f.fleet);
    const std::pair<const char*, const ResourceAmounts*> parts[] = {
        {"nominal", &f.nominal}, {"used", &f.used}, {"borrowed", &f.borrowed}, {"lent", &f.lent}};
    for (const auto& [k, a] : parts) {
      w.Key(k);
      WriteAmounts(w, *a);
    }
    for (const auto& share : t.spec.shares) {
      if (share.fleet != f.fleet) continue;
      const std::pair<const char*, const std::optional<ResourceAmounts>*> limits[] = {
          {"borrowingLimit", &share.borrowing_limit}, {"lendingLimit", &share.lending_limit}};
      for (const auto& [k, a] : limits) {
        if (!a->has_value()) continue;
        w.Key(k);
        WriteAmounts(w, **a);
      }
      break;
    }
    w.raw().EndObject();
  }
  w.raw().EndArray();
  w.Key("usage");
  w.raw().StartObject();
  w.Key("gpuHours");
  w.raw().Double(t.status.gpu_hours);
  w.Key("cpuHours");
  w.raw().Double(t.status.cpu_hours);
  w.Key("updatedAt");
  w.TimeOrNull(t.status.usage_updated_at);
  w.raw().EndObject();
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
  Writer w;
  w.raw().StartObject();
  io::WritePrecondition(w, resource_version);
  w.Key("status");
  WriteTeamStatus(w, status);
  w.raw().EndObject();
  return w.Take();
}

}  // namespace berth::api::v1alpha1
