#include "k8s/json.h"

#include <utility>
#include <vector>

#include <rapidjson/error/en.h>

namespace berth::k8s::json {

namespace {

Status TooDeep(size_t offset, int max_depth) {
  return Status::Error("invalid JSON at offset " + std::to_string(offset) + ": nested deeper than " +
                       std::to_string(max_depth) + " levels");
}

}  // namespace

bool DeeperThan(const Value& v, int max_depth) {
  // Depth-first over containers with an explicit stack of (container, depth).
  std::vector<std::pair<const Value*, int>> stack;
  if (v.IsObject() || v.IsArray()) stack.emplace_back(&v, 1);
  while (!stack.empty()) {
    auto [cur, depth] = stack.back();
    stack.pop_back();
    if (depth > max_depth) return true;
    if (cur->IsObject()) {
      for (auto it = cur->MemberBegin(); it != cur->MemberEnd(); ++it) {
        const Value& child = it->value;
        if (child.IsObject() || child.IsArray()) stack.emplace_back(&child, depth + 1);
      }
    } else {
      for (auto it = cur->Begin(); it != cur->End(); ++it) {
        if (it->IsObject() || it->IsArray()) stack.emplace_back(&*it, depth + 1);
      }
    }
  }
  return false;
}

size_t FindTooDeep(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // skips the escaped character (an escaped quote does not end the string)
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      --depth;  // unbalanced text is RapidJSON's to refuse
    }
  }
  return std::string_view::npos;
}

Result<Document> Parse(std::string_view text, int max_depth) {
  if (max_depth != kNoDepthCap) {
    if (size_t at = FindTooDeep(text, max_depth); at != std::string_view::npos) return TooDeep(at, max_depth);
  }
  Document d;
  d.Parse<rapidjson::kParseIterativeFlag>(text.data(), text.size());
  if (d.HasParseError()) {
    return Status::Error(std::string("invalid JSON at offset ") + std::to_string(d.GetErrorOffset()) + ": " +
                         rapidjson::GetParseError_En(d.GetParseError()));
  }
  return d;
}

Status ParseInSitu(std::string& buffer, Document& out, int max_depth) {
  if (max_depth != kNoDepthCap) {
    if (size_t at = FindTooDeep(buffer, max_depth); at != std::string_view::npos) return TooDeep(at, max_depth);
  }
  out.ParseInsitu<rapidjson::kParseIterativeFlag>(buffer.data());
  if (out.HasParseError()) {
    return Status::Error(std::string("invalid JSON at offset ") + std::to_string(out.GetErrorOffset()) + ": " +
                         rapidjson::GetParseError_En(out.GetParseError()));
  }
  return Status();
}

std::string Serialize(const Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

const Value* Find(const Value& v, std::initializer_list<std::string_view> path) {
  const Value* cur = &v;
  for (std::string_view key : path) {
    if (!cur->IsObject()) return nullptr;
    auto it = cur->FindMember(rapidjson::StringRef(key.data(), key.size()));
    if (it == cur->MemberEnd()) return nullptr;
    cur = &it->value;
  }
  return cur;
}

std::string GetString(const Value& v, std::string_view key, std::string_view def) {
  if (!v.IsObject()) return std::string(def);
  auto it = v.FindMember(rapidjson::StringRef(key.data(), key.size()));
  if (it == v.MemberEnd() || !it->value.IsString()) return std::string(def);
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

std::string GetString(const Value* v, std::string_view def) {
  if (v == nullptr || !v->IsString()) return std::string(def);
  return std::string(v->GetString(), v->GetStringLength());
}

int64_t GetInt(const Value& v, std::string_view key, int64_t def) {
  if (!v.IsObject()) return def;
  auto it = v.FindMember(rapidjson::StringRef(key.data(), key.size()));
  if (it == v.MemberEnd()) return def;
  if (it->value.IsInt64()) return it->value.GetInt64();
  if (it->value.IsDouble()) {
    // Truncated toward zero; a number outside int64 does not fit, like a uint64 above it (the
    // cast would be undefined behaviour: found by fuzz/run_fuzz.cc).
    const double d = it->value.GetDouble();
    constexpr double kTwoTo63 = 9223372036854775808.0;
    if (d >= -kTwoTo63 && d < kTwoTo63) return static_cast<int64_t>(d);
  }
  return def;
}

bool GetBool(const Value& v, std::string_view key, bool def) {
  if (!v.IsObject()) return def;
  auto it = v.FindMember(rapidjson::StringRef(key.data(), key.size()));
  if (it == v.MemberEnd() || !it->value.IsBool()) return def;
  return it->value.GetBool();
}

std::string Quote(std::string_view s) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace berth::k8s::json
