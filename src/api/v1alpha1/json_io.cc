#include "api/v1alpha1/json_io.h"

#include <cmath>
#include <sstream>

#include "k8s/timefmt.h"

namespace berth::api::v1alpha1::io {

Reader::Reader(const json::Value* v, std::string path, std::string* problem)
    : v_(v), path_(std::move(path)), problem_(problem) {
  if (v_ != nullptr && !v_->IsNull() && !v_->IsObject() && problem_ != nullptr && problem_->empty()) {
    *problem_ = path_ + " must be an object";
  }
  if (v_ != nullptr && !v_->IsObject()) v_ = nullptr;
}

const json::Value* Reader::Member(std::string_view key) const {
  if (v_ == nullptr) return nullptr;
  const json::Value* m = json::Find(*v_, {key});
  return m == nullptr || m->IsNull() ? nullptr : m;
}

bool Reader::Has(std::string_view key) const { return Member(key) != nullptr; }

void Reader::Note(std::string_view key, std::string_view what) {
  if (problem_ == nullptr || !problem_->empty()) return;
  *problem_ = path_ + "." + std::string(key) + " " + std::string(what);
}

std::optional<std::string> Reader::String(std::string_view key) {
  const json::Value* m = Member(key);
  if (m == nullptr) return std::nullopt;
  if (!m->IsString()) {
    Note(key, "must be a string");
    return std::nullopt;
  }
  return std::string(m->GetString(), m->GetStringLength());
}

std::optional<int64_t> Reader::Int(std::string_view key) {
  const json::Value* m = Member(key);
  if (m == nullptr) return std::nullopt;
  if (m->IsInt64()) return m->GetInt64();
  if (m->IsNumber()) {
    const double d = std::trunc(m->GetDouble());
    if (d >= -9.2e18 && d <= 9.2e18) return static_cast<int64_t>(d);
  }
  Note(key, "must be an integer");
  return std::nullopt;
}

std::optional<double> Reader::Number(std::string_view key) {
  const json::Value* m = Member(key);
  if (m == nullptr) return std::nullopt;
  if (m->IsNumber()) return m->GetDouble();
  Note(key, "must be a number");
  return std::nullopt;
}

std::optional<bool> Reader::Bool(std::string_view key) {
  const json::Value* m = Member(key);
  if (m == nullptr) return std::nullopt;
  if (m->IsBool()) return m->GetBool();
  Note(key, "must be a boolean");
  return std::nullopt;
}

std::optional<Time> Reader::TimeAt(std::string_view key) {
  std::optional<std::string> s = String(key);
  if (!s || s->empty()) return std::nullopt;
  auto t = k8s::ParseRfc3339(*s);
  if (!t.ok()) {
    Note(key, "must be an RFC 3339 time: " + t.status().message());
    return std::nullopt;
  }
  return Time(t.value());
}

std::vector<std::string> Reader::Strings(std::string_view key) {
  std::vector<std::string> out;
  const json::Value* m = Member(key);
  if (m == nullptr) return out;
  if (!m->IsArray()) {
    Note(key, "must be a list of strings");
    return out;
  }
  for (const auto& e : m->GetArray()) {
    if (e.IsString()) {
      out.emplace_back(e.GetString(), e.GetStringLength());
    } else {
      Note(key, "must be a list of strings");
    }
  }
  return out;
}

std::vector<Reader> Reader::Objects(std::string_view key) {
  std::vector<Reader> out;
  const json::Value* m = Member(key);
  if (m == nullptr) return out;
  if (!m->IsArray()) {
    Note(key, "must be a list");
    return out;
  }
  size_t i = 0;
  for (const auto& e : m->GetArray()) {
    out.emplace_back(&e, path_ + "." + std::string(key) + "[" + std::to_string(i++) + "]", problem_);
  }
  return out;
}

Reader Reader::Object(std::string_view key) {
  return Reader(Member(key), path_ + "." + std::string(key), problem_);
}

std::vector<Condition> ReadConditions(Reader& r) {
  std::vector<Condition> out;
  for (Reader& e : r.Objects("conditions")) {
    Condition c;
    c.type = ConditionKind::FromApi(e.String("type").value_or(""));
    const std::string status = e.String("status").value_or("");
    if (auto s = ParseConditionStatus(status)) {
      c.status = *s;
    } else {
      e.Note("status", "must be True, False or Unknown, not \"" + status + "\"");
    }
    c.reason = ReasonCode::FromApi(e.String("reason").value_or(""));
    c.message = e.String("message").value_or("");
    c.last_transition_time = e.TimeAt("lastTransitionTime");
    c.observed_generation = e.Int("observedGeneration").value_or(0);
    out.push_back(std::move(c));
  }
  return out;
}

void Writer::StringMember(std::string_view key, std::string_view value) {
  Key(key);
  String(value);
}

void Writer::IntMember(std::string_view key, int64_t value) {
  Key(key);
  Int(value);
}

void Writer::NumberMember(std::string_view key, double value) {
  Key(key);
  w_.Double(value);
}

void Writer::BoolMember(std::string_view key, bool value) {
  Key(key);
  w_.Bool(value);
}

void Writer::StringMemberIfSet(std::string_view key, std::string_view value) {
  if (!value.empty()) StringMember(key, value);
}

void Writer::IntMemberIfSet(std::string_view key, const std::optional<int64_t>& value) {
  if (value) IntMember(key, *value);
}

void Writer::TimeMemberIfSet(std::string_view key, const std::optional<Time>& value) {
  if (value) StringMember(key, FormatTime(*value));
}

void Writer::StringOrNull(std::string_view s) {
  if (s.empty()) {
    Null();
  } else {
    String(s);
  }
}

void Writer::TimeOrNull(const std::optional<Time>& t) {
  if (t) {
    String(FormatTime(*t));
  } else {
    Null();
  }
}

void Writer::IntOrNull(const std::optional<int64_t>& v) {
  if (v) {
    Int(*v);
  } else {
    Null();
  }
}

void Writer::StringList(const std::vector<std::string>& v) {
  w_.StartArray();
  for (const auto& s : v) String(s);
  w_.EndArray();
}

void Writer::RawJson(std::string_view text) {
  w_.RawValue(text.data(), text.size(), rapidjson::kObjectType);
}

std::string FormatTime(const Time& t) { return v1alpha1::FormatTime(std::optional<Time>(t)); }

namespace {
void WriteStringMap(Writer& w, std::string_view key, const std::map<std::string, std::string>& m) {
  if (m.empty()) return;
  w.Key(key);
  w.raw().StartObject();
  for (const auto& [k, v] : m) w.StringMember(k, v);
  w.raw().EndObject();
}
}  // namespace

void WriteHead(Writer& w, std::string_view kind, const k8s::ObjectMeta& meta) {
  w.StringMember("apiVersion", kGroupVersion);
  w.StringMember("kind", kind);
  w.Key("metadata");
  w.raw().StartObject();
  w.StringMember("name", meta.name);
  w.StringMemberIfSet("namespace", meta.ns);
  w.StringMemberIfSet("uid", meta.uid);
  w.StringMemberIfSet("resourceVersion", meta.resource_version);
  if (meta.generation != 0) w.IntMember("generation", meta.generation);
  if (meta.created != TimePoint{}) w.StringMember("creationTimestamp", k8s::FormatRfc3339(meta.created));
  WriteStringMap(w, "labels", meta.labels);
  WriteStringMap(w, "annotations", meta.annotations);
  if (!meta.finalizers.empty()) {
    w.Key("finalizers");
    w.StringList(meta.finalizers);
  }
  w.raw().EndObject();
}

void WritePrecondition(Writer& w, std::string_view resource_version) {
  if (resource_version.empty()) return;
  w.Key("metadata");
  w.raw().StartObject();
  w.StringMember("resourceVersion", resource_version);
  w.raw().EndObject();
}

void WriteConditions(Writer& w, const std::vector<Condition>& conditions) {
  w.raw().StartArray();
  for (const auto& c : conditions) {
    w.raw().StartObject();
    w.StringMember("type", c.type.api());
    w.StringMember("status", ToApi(c.status));
    w.StringMember("reason", c.reason.api());
    w.StringMember("message", c.message);
    w.TimeMemberIfSet("lastTransitionTime", c.last_transition_time);
    w.IntMember("observedGeneration", c.observed_generation);
    w.raw().EndObject();
  }
  w.raw().EndArray();
}

std::string ScalarText(const json::Value* v) {
  if (v == nullptr) return "";
  if (v->IsString()) return std::string(v->GetString(), v->GetStringLength());
  if (v->IsInt64()) return std::to_string(v->GetInt64());
  if (v->IsNumber()) {
    std::ostringstream s;
    s << v->GetDouble();
    return s.str();
  }
  if (v->IsBool()) return v->GetBool() ? "true" : "false";
  return "";
}

std::vector<std::string> ScalarTexts(const json::Value* v) {
  std::vector<std::string> out;
  if (v == nullptr || !v->IsArray()) return out;
  for (const auto& e : v->GetArray()) {
    std::string s = ScalarText(&e);
    if (!s.empty()) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace berth::api::v1alpha1::io
