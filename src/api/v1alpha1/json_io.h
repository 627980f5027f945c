#pragma once
// Internal to the codec (codec.h): reading fields with their paths named in the first problem,
// and writing JSON with RapidJSON's writer (escaping done once, right).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "api/v1alpha1/meta.h"
#include "k8s/json.h"
#include "k8s/objects.h"

namespace berth::api::v1alpha1::io {

namespace json = k8s::json;

// Reads the members of one JSON object at `path` ("status", "status.placement[2]"). A member
// absent or null reads as nullopt; one of the wrong type reads as nullopt too and is noted as the
// first problem ("status.queuePosition must be an integer").
class Reader {
 public:
  // `v` may be null or not an object: every member is then absent (and a non-object noted).
  Reader(const json::Value* v, std::string path, std::string* problem);

  bool Has(std::string_view key) const;
  std::optional<std::string> String(std::string_view key);
  // An integer (a number with a fraction truncated toward zero, as json::GetInt reads it).
  std::optional<int64_t> Int(std::string_view key);
  std::optional<double> Number(std::string_view key);
  std::optional<bool> Bool(std::string_view key);
  // An RFC 3339 time.
  std::optional<Time> TimeAt(std::string_view key);
  std::vector<std::string> Strings(std::string_view key);
  // The elements of an array member (empty when absent), each with its own Reader path.
  std::vector<Reader> Objects(std::string_view key);
  Reader Object(std::string_view key);
  const std::string& path() const { return path_; }
  const json::Value* value() const { return v_; }
  void Note(std::string_view key, std::string_view what);

 private:
  const json::Value* Member(std::string_view key) const;
  const json::Value* v_ = nullptr;
  std::string path_;
  std::string* problem_;
};

std::vector<Condition> ReadConditions(Reader& r);

// A string, number or boolean member as text ("8", "64Gi", "1.5", "true"); "" when `v` is null or
// anything else (what a user wrote, for display).
std::string ScalarText(const json::Value* v);
// The elements of an array as ScalarText, empty ones left out.
std::vector<std::string> ScalarTexts(const json::Value* v);

// RapidJSON's writer over a string buffer, with the shapes the codec writes.
class Writer {
 public:
  Writer() : w_(buf_) {}
  rapidjson::Writer<rapidjson::StringBuffer>& raw() { return w_; }
  void Key(std::string_view k) { w_.Key(k.data(), static_cast<rapidjson::SizeType>(k.size())); }
  void String(std::string_view s) { w_.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }
  void Int(int64_t v) { w_.Int64(v); }
  void Null() { w_.Null(); }
  // A member of the open object: its key, then its value.
  void StringMember(std::string_view key, std::string_view value);
  void IntMember(std::string_view key, int64_t value);
  void NumberMember(std::string_view key, double value);
  void BoolMember(std::string_view key, bool value);
  // The same, left out when the value is empty or unset (a time as RFC 3339).
  void StringMemberIfSet(std::string_view key, std::string_view value);
  void IntMemberIfSet(std::string_view key, const std::optional<int64_t>& value);
  void TimeMemberIfSet(std::string_view key, const std::optional<Time>& value);
  // "" as null (a merge patch then clears the field).
  void StringOrNull(std::string_view s);
  void TimeOrNull(const std::optional<Time>& t);
  void IntOrNull(const std::optional<int64_t>& v);
  void StringList(const std::vector<std::string>& v);
  // Inserts `text`, already JSON, as the next value.
  void RawJson(std::string_view text);
  std::string Take() { return std::string(buf_.GetString(), buf_.GetSize()); }

 private:
  rapidjson::StringBuffer buf_;
  rapidjson::Writer<rapidjson::StringBuffer> w_;
};

// "apiVersion", "kind" and "metadata" of a whole object (the writer inside an open object).
void WriteHead(Writer& w, std::string_view kind, const k8s::ObjectMeta& meta);
// {"resourceVersion":rv} as the "metadata" member, when rv is not empty.
void WritePrecondition(Writer& w, std::string_view resource_version);
void WriteConditions(Writer& w, const std::vector<Condition>& conditions);

// A whole object: "apiVersion", "kind", "metadata", then "spec" and "status" as `spec(w)` and
// `status(w)` write them.
template <typename Spec, typename Status>
std::string EncodeObject(std::string_view kind, const k8s::ObjectMeta& meta, Spec spec, Status status) {
  Writer w;
  w.raw().StartObject();
  WriteHead(w, kind, meta);
  w.Key("spec");
  spec(w);
  w.Key("status");
  status(w);
  w.raw().EndObject();
  return w.Take();
}

// A merge patch {"metadata":{"resourceVersion":rv},part:...} (without "metadata" when rv is
// empty), the part's value as `value(w)` writes it.
template <typename F>
std::string MergePatch(std::string_view resource_version, std::string_view part, F value) {
  Writer w;
  w.raw().StartObject();
  WritePrecondition(w, resource_version);
  w.Key(part);
  value(w);
  w.raw().EndObject();
  return w.Take();
}
std::string FormatTime(const Time& t);

}  // namespace berth::api::v1alpha1::io
