#include "fakes/fake_api.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "k8s/timefmt.h"

namespace berth::testing {

namespace json = k8s::json;
using Alloc = json::Document::AllocatorType;
using k8s::HttpRequest;
using k8s::HttpResponse;

// ---------------------------------------------------------------------------------------------
// Resources served.

struct FakeApi::ResourceInfo {
  enum class CreateStatus { kDrop, kKeep, kPodPending, kNamespaceActive };
  std::string group, version, plural, kind;
  bool namespaced = true;
  bool has_status = false;
  CreateStatus create_status = CreateStatus::kKeep;

  std::string GroupResource() const { return group.empty() ? plural : plural + "." + group; }
  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
  std::string Path(const std::string& ns, const std::string& name) const {
    std::string p = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
    if (namespaced && !ns.empty()) p += "/namespaces/" + ns;
    p += "/" + plural;
    if (!name.empty()) p += "/" + name;
    return p;
  }
};

static const std::vector<FakeApi::ResourceInfo>& Resources() {
  using RI = FakeApi::ResourceInfo;
  static const std::vector<RI> table = {
      {"", "v1", "pods", "Pod", true, true, RI::CreateStatus::kPodPending},
      {"", "v1", "nodes", "Node", false, true, RI::CreateStatus::kKeep},
      {"", "v1", "services", "Service", true, true, RI::CreateStatus::kDrop},
      {"", "v1", "events", "Event", true, false, RI::CreateStatus::kKeep},
      {"", "v1", "namespaces", "Namespace", false, true, RI::CreateStatus::kNamespaceActive},
      // berth-controller watches ResourceQuotas (issue 17); the fake keeps what a test writes.
      {"", "v1", "resourcequotas", "ResourceQuota", true, true, RI::CreateStatus::kKeep},
      {"coordination.k8s.io", "v1", "leases", "Lease", true, false, RI::CreateStatus::kKeep},
      {"berth.dev", "v1alpha1", "runs", "Run", true, true, RI::CreateStatus::kDrop},
      {"berth.dev", "v1alpha1", "fleets", "Fleet", false, true, RI::CreateStatus::kDrop},
      {"berth.dev", "v1alpha1", "teams", "Team", false, true, RI::CreateStatus::kDrop},
      {"batch", "v1", "jobs", "Job", true, true, RI::CreateStatus::kKeep},  // issue 45: tickets of Jobs
      {"jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", true, true, RI::CreateStatus::kKeep},  // and of JobSets
      // Issue 49: DRA fleets count ResourceSlices' devices; their runs' Pods get ResourceClaims.
      {"resource.k8s.io", "v1", "resourceslices", "ResourceSlice", false, false, RI::CreateStatus::kKeep},
      {"resource.k8s.io", "v1", "deviceclasses", "DeviceClass", false, false, RI::CreateStatus::kKeep},
      {"resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", true, true, RI::CreateStatus::kKeep},
  };
  return table;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Errors as the API server writes them.

const char* ReasonFor(int code) {
  switch (code) {
    case 400: return "BadRequest";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 409: return "Conflict";
    case 410: return "Expired";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return "";
  }
}

std::string StatusJson(int code, const std::string& reason, const std::string& message) {
  return R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)" + json::Quote(message) +
         R"(,"reason":)" + json::Quote(reason) + R"(,"code":)" + std::to_string(code) + "}";
}

HttpResponse Error(int code, const std::string& message, const std::string& reason = {}) {
  HttpResponse r;
  r.status = code;
  r.body = StatusJson(code, reason.empty() ? ReasonFor(code) : reason, message);
  return r;
}

HttpResponse Ok(int code, std::string body) {
  HttpResponse r;
  r.status = code;
  r.body = std::move(body);
  return r;
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// ---------------------------------------------------------------------------------------------
// JSON helpers (mutable members only through HasMember/operator[]: RapidJSON 1.1.0's mutable
// member iterators compare ambiguously under C++20 with clang).

json::Value Str(const std::string& s, Alloc& a) {
  return json::Value(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), a);
}

void SetMember(json::Value& obj, const char* key, json::Value v, Alloc& a) {
  if (obj.HasMember(key)) {
    obj[key] = v;
  } else {
    obj.AddMember(Str(key, a), v, a);
  }
}

json::Value& Meta(json::Document& d) {
  if (!d.HasMember("metadata") || !d["metadata"].IsObject()) SetMember(d, "metadata", json::Value(rapidjson::kObjectType), d.GetAllocator());
  return d["metadata"];
}

std::string MetaString(const json::Value& obj, const char* key) { return json::GetString(json::Find(obj, {"metadata", key})); }

bool HasDeletionTimestamp(const json::Value& obj) {
  const json::Value* v = json::Find(obj, {"metadata", "deletionTimestamp"});
  return v != nullptr && !v->IsNull();
}

bool NoFinalizers(const json::Value& obj) {
  const json::Value* f = json::Find(obj, {"metadata", "finalizers"});
  return f == nullptr || f->IsNull() || (f->IsArray() && f->Empty());
}

int64_t MetaInt(const json::Value& obj, const char* key, int64_t def = 0) {
  const json::Value* m = json::Find(obj, {"metadata"});
  return m == nullptr ? def : json::GetInt(*m, key, def);
}

// Copies member `key` of `from` into `to` (or removes it from `to` when `from` lacks it).
void CopyMember(json::Value& to, const json::Value& from, const char* key, Alloc& a) {
  if (from.IsObject() && from.HasMember(key)) {
    json::Value v;
    v.CopyFrom(from[key], a);
    SetMember(to, key, std::move(v), a);
  } else if (to.HasMember(key)) {
    to.RemoveMember(key);
  }
}

// Everything but metadata and status is equal (what metadata.generation tracks).
bool SameOutsideMetaAndStatus(const json::Value& a, const json::Value& b) {
  auto count = [](const json::Value& v) {
    size_t n = 0;
    for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) {
      std::string_view k(m->name.GetString(), m->name.GetStringLength());
      if (k != "metadata" && k != "status") ++n;
    }
    return n;
  };
  if (count(a) != count(b)) return false;
  for (auto m = a.MemberBegin(); m != a.MemberEnd(); ++m) {
    std::string_view k(m->name.GetString(), m->name.GetStringLength());
    if (k == "metadata" || k == "status") continue;
    if (!b.HasMember(m->name) || !(b[m->name] == m->value)) return false;
  }
  return true;
}

json::Document Copy(const json::Value& v) {
  json::Document d;
  d.CopyFrom(v, d.GetAllocator());
  return d;
}

json::Document ParseOrNull(const std::string& text) {
  auto r = json::Parse(text);
  if (!r.ok()) return json::Document();
  return std::move(r).value();
}

// RFC 7386.
void ApplyMergePatch(json::Value& target, const json::Value& patch, Alloc& a) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, a);
    return;
  }
  if (!target.IsObject()) target.SetObject();
  for (auto m = patch.MemberBegin(); m != patch.MemberEnd(); ++m) {
    if (m->value.IsNull()) {
      if (target.HasMember(m->name)) target.RemoveMember(m->name);
      continue;
    }
    if (!target.HasMember(m->name)) target.AddMember(json::Value(m->name, a), json::Value(rapidjson::kNullType), a);
    ApplyMergePatch(target[m->name], m->value, a);
  }
}

// RFC 6901 pointer tokens.
bool PointerTokens(const std::string& pointer, std::vector<std::string>& out) {
  if (pointer.empty() || pointer[0] != '/') return false;
  std::string cur;
  for (size_t i = 1; i <= pointer.size(); ++i) {
    if (i == pointer.size() || pointer[i] == '/') {
      out.push_back(cur);
      cur.clear();
    } else if (pointer[i] == '~' && i + 1 < pointer.size() && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
      cur.push_back(pointer[i + 1] == '0' ? '~' : '/');
      ++i;
    } else {
      cur.push_back(pointer[i]);
    }
  }
  return true;
}

bool ArrayIndex(const std::string& token, size_t size, bool allow_end, size_t& out) {
  if (allow_end && token == "-") {
    out = size;
    return true;
  }
  if (token.empty() || token.find_first_not_of("0123456789") != std::string::npos || token.size() > 9) return false;
  out = static_cast<size_t>(std::stoul(token));
  return allow_end ? out <= size : out < size;
}

// RFC 6902 add, remove, replace, test. Returns an error message, or "" when applied.
std::string ApplyJsonPatch(json::Document& doc, const json::Value& ops) {
  Alloc& a = doc.GetAllocator();
  if (!ops.IsArray()) return "a JSON patch must be an array of operations";
  for (const auto& op : ops.GetArray()) {
    const std::string kind = json::GetString(op, "op");
    const std::string path = json::GetString(op, "path");
    std::vector<std::string> tokens;
    if (!PointerTokens(path, tokens)) return "unsupported JSON pointer " + Quoted(path);
    json::Value* parent = &doc;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      const std::string& t = tokens[i];
      if (parent->IsObject() && parent->HasMember(t.c_str())) {
        parent = &(*parent)[t.c_str()];
      } else if (size_t idx = 0; parent->IsArray() && ArrayIndex(t, parent->Size(), false, idx)) {
        parent = &(*parent)[static_cast<rapidjson::SizeType>(idx)];
      } else {
        return "doc is missing path: " + Quoted(path);
      }
    }
    const std::string& last = tokens.back();
    const bool has_value = op.IsObject() && op.HasMember("value");
    if (kind == "test") {
      const json::Value* at = nullptr;
      if (parent->IsObject() && parent->HasMember(last.c_str())) {
        at = &(*parent)[last.c_str()];
      } else if (size_t idx = 0; parent->IsArray() && ArrayIndex(last, parent->Size(), false, idx)) {
        at = &(*parent)[static_cast<rapidjson::SizeType>(idx)];
      }
      if (at == nullptr || !has_value || !(*at == op["value"])) return "testing value " + Quoted(path) + " failed";
    } else if (kind == "remove" || kind == "replace") {
      if (parent->IsObject()) {
        if (!parent->HasMember(last.c_str())) return "unable to " + kind + " nonexistent key: " + last;
        if (kind == "remove") {
          parent->RemoveMember(last.c_str());
        } else {
          if (!has_value) return "replace operation without a value";
          (*parent)[last.c_str()].CopyFrom(op["value"], a);
        }
      } else if (size_t idx = 0; parent->IsArray() && ArrayIndex(last, parent->Size(), false, idx)) {
        if (kind == "remove") {
          parent->Erase(parent->Begin() + idx);
        } else {
          if (!has_value) return "replace operation without a value";
          (*parent)[static_cast<rapidjson::SizeType>(idx)].CopyFrom(op["value"], a);
        }
      } else {
        return "unable to " + kind + " nonexistent path: " + Quoted(path);
      }
    } else if (kind == "add") {
      if (!has_value) return "add operation without a value";
      json::Value v;
      v.CopyFrom(op["value"], a);
      if (parent->IsObject()) {
        SetMember(*parent, last.c_str(), std::move(v), a);
      } else if (size_t idx = 0; parent->IsArray() && ArrayIndex(last, parent->Size(), true, idx)) {
        json::Value rebuilt(rapidjson::kArrayType);
        for (rapidjson::SizeType i = 0; i <= parent->Size(); ++i) {
          if (i == idx) rebuilt.PushBack(v, a);
          if (i < parent->Size()) rebuilt.PushBack((*parent)[i], a);
        }
        *parent = rebuilt;
      } else {
        return "unable to add at " + Quoted(path);
      }
    } else {
      return "the fake API does not support JSON patch operation " + Quoted(kind);
    }
  }
  return "";
}

std::string PercentDecode(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i] == '+' ? ' ' : s[i]);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Selectors.

struct Requirement {
  enum class Op { kExists, kNotExists, kEquals, kNotEquals };
  std::string key;
  Op op = Op::kExists;
  std::string value;
};

std::string Trim(std::string s) {
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// Equality-based selectors; `labels` allows the bare `k` and `!k` forms. False on anything else.
bool ParseSelector(const std::string& text, bool labels, std::vector<Requirement>& out) {
  if (text.find('(') != std::string::npos) return false;  // set-based: not served by the fake
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string term = Trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (term.empty()) {
      if (text.empty()) break;
      return false;
    }
    Requirement r;
    size_t at;
    if ((at = term.find("!=")) != std::string::npos) {
      r.op = Requirement::Op::kNotEquals;
      r.key = Trim(term.substr(0, at));
      r.value = Trim(term.substr(at + 2));
    } else if ((at = term.find("==")) != std::string::npos) {
      r.op = Requirement::Op::kEquals;
      r.key = Trim(term.substr(0, at));
      r.value = Trim(term.substr(at + 2));
    } else if ((at = term.find('=')) != std::string::npos) {
      r.op = Requirement::Op::kEquals;
      r.key = Trim(term.substr(0, at));
      r.value = Trim(term.substr(at + 1));
    } else if (labels && term[0] == '!') {
      r.op = Requirement::Op::kNotExists;
      r.key = Trim(term.substr(1));
    } else if (labels) {
      r.op = Requirement::Op::kExists;
      r.key = term;
    } else {
      return false;
    }
    if (r.key.empty() || r.key.find(' ') != std::string::npos) return false;
    out.push_back(std::move(r));
  }
  return true;
}

const json::Value* FieldAt(const json::Value& obj, const std::string& dotted) {
  const json::Value* cur = &obj;
  size_t start = 0;
  while (cur != nullptr) {
    size_t dot = dotted.find('.', start);
    std::string part = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->IsObject() || !cur->HasMember(part.c_str())) return nullptr;
    cur = &(*cur)[part.c_str()];
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
  return nullptr;
}

struct Filter {
  std::string ns;  // "" = every namespace
  std::vector<Requirement> labels, fields;

  bool Matches(const json::Value& obj) const {
    if (!ns.empty() && MetaString(obj, "namespace") != ns) return false;
    const json::Value* l = json::Find(obj, {"metadata", "labels"});
    for (const auto& r : labels) {
      const json::Value* v = l != nullptr && l->IsObject() && l->HasMember(r.key.c_str()) ? &(*l)[r.key.c_str()] : nullptr;
      const bool has = v != nullptr && v->IsString();
      const std::string value = has ? v->GetString() : "";
      switch (r.op) {
        case Requirement::Op::kExists: if (!has) return false; break;
        case Requirement::Op::kNotExists: if (has) return false; break;
        case Requirement::Op::kEquals: if (!has || value != r.value) return false; break;
        case Requirement::Op::kNotEquals: if (has && value == r.value) return false; break;
      }
    }
    for (const auto& r : fields) {
      const json::Value* v = FieldAt(obj, r.key);
      const std::string value = v != nullptr && v->IsString() ? v->GetString() : "";
      if (r.op == Requirement::Op::kEquals && value != r.value) return false;
      if (r.op == Requirement::Op::kNotEquals && value == r.value) return false;
    }
    return true;
  }
  bool Matches(const std::string& text) const {
    json::Document d = ParseOrNull(text);
    return d.IsObject() && Matches(d);
  }
};

// The object with its resourceVersion replaced (a DELETED event of an object leaving a filter).
std::string WithResourceVersion(const std::string& text, uint64_t rv) {
  json::Document d = ParseOrNull(text);
  if (!d.IsObject()) return text;
  SetMember(Meta(d), "resourceVersion", Str(std::to_string(rv), d.GetAllocator()), d.GetAllocator());
  return json::Serialize(d);
}

std::string EventLine(const std::string& type, const std::string& object) {
  return R"({"type":)" + json::Quote(type) + R"(,"object":)" + object + "}";
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct FakeApi::Target {
  const ResourceInfo* info = nullptr;
  std::string ns, name, sub;
  std::string path;  // without the query
  std::map<std::string, std::string> query;

  std::string Key() const { return info->group + "/" + info->plural + "/" + ns + "/" + name; }
  std::string Prefix() const { return info->group + "/" + info->plural + "/"; }
  std::string NotFound() const { return info->GroupResource() + " " + Quoted(name) + " not found"; }
  std::string Cannot() const { return "Operation cannot be fulfilled on " + info->GroupResource() + " " + Quoted(name) + ": "; }
};

struct FakeApi::Watcher {
  const ResourceInfo* info = nullptr;
  Filter filter;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> lines;
  bool closed = false;
  bool reading = false;  // a line taken, its reader's callback not returned yet

  bool Idle() {
    std::lock_guard<std::mutex> lock(mu);
    return lines.empty() && !reading;
  }

  void Push(std::string line) {
    {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(std::move(line));
    }
    cv.notify_all();
  }
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu);
      closed = true;
    }
    cv.notify_all();
  }
  // The line this watcher sees for `e`, if any.
  std::optional<std::string> LineFor(const FakeApi::Event& e) const {
    if (e.info != info) return std::nullopt;
    if (e.type == "ADDED") {
      if (filter.Matches(e.object)) return EventLine("ADDED", e.object);
      return std::nullopt;
    }
    if (e.type == "DELETED") {
      if (filter.Matches(e.object)) return EventLine("DELETED", e.object);
      return std::nullopt;
    }
    const bool now = filter.Matches(e.object), before = filter.Matches(e.previous);
    if (now && before) return EventLine("MODIFIED", e.object);
    if (now) return EventLine("ADDED", e.object);
    if (before) return EventLine("DELETED", WithResourceVersion(e.previous, e.rv));
    return std::nullopt;
  }
};

namespace {

// Parses "/api/v1/namespaces/ns/pods/name/sub?query".
template <typename TargetT, typename InfoT>
bool ParseTarget(const std::string& full, const std::vector<InfoT>& table, TargetT& t) {
  size_t q = full.find('?');
  t.path = full.substr(0, q);
  if (q != std::string::npos) {
    std::string query = full.substr(q + 1);
    size_t start = 0;
    while (start < query.size()) {
      size_t amp = query.find('&', start);
      std::string kv = query.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
      size_t eq = kv.find('=');
      t.query[PercentDecode(kv.substr(0, eq))] = eq == std::string::npos ? "" : PercentDecode(kv.substr(eq + 1));
      if (amp == std::string::npos) break;
      start = amp + 1;
    }
  }
  std::vector<std::string> seg;
  size_t start = 1;
  while (start <= t.path.size()) {
    size_t slash = t.path.find('/', start);
    seg.push_back(t.path.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  std::string group, version;
  size_t i = 0;
  if (seg.size() >= 2 && seg[0] == "api") {
    version = seg[1];
    i = 2;
  } else if (seg.size() >= 3 && seg[0] == "apis") {
    group = seg[1];
    version = seg[2];
    i = 3;
  } else {
    return false;
  }
  if (seg.size() >= i + 3 && seg[i] == "namespaces") {
    t.ns = seg[i + 1];
    i += 2;
  }
  if (i >= seg.size() || seg.size() - i > 3) return false;
  for (const auto& info : table) {
    if (info.group == group && info.version == version && info.plural == seg[i]) t.info = &info;
  }
  if (t.info == nullptr) return false;
  if (!t.info->namespaced && !t.ns.empty()) return false;
  if (i + 1 < seg.size()) t.name = seg[i + 1];
  if (i + 2 < seg.size()) t.sub = seg[i + 2];
  return !(t.name.empty() && i + 1 < seg.size());
}

}  // namespace

FakeApi::FakeApi(const base::Clock& clock) : clock_(clock) {}

FakeApi::~FakeApi() { CloseWatches(); }

std::string FakeApi::NowText() const { return k8s::FormatRfc3339(clock_.Now()); }

uint64_t FakeApi::ResourceVersion() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

std::vector<FakeApi::Change> FakeApi::History() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Change> out;
  out.reserve(history_.size());
  for (const auto& e : history_) {
    json::Document d = ParseOrNull(e.object);
    out.push_back(Change{e.rv, e.type, e.info->Path(MetaString(d, "namespace"), MetaString(d, "name")), e.object});
  }
  return out;
}

std::vector<std::string> FakeApi::Requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

int FakeApi::FaultsFired() const {
  std::lock_guard<std::mutex> lock(mu_);
  return faults_fired_;
}

void FakeApi::FailNext(Match match, int times, int code) {
  std::lock_guard<std::mutex> lock(mu_);
  faults_.push_back(Fault{std::move(match), times, code, false});
}

void FakeApi::DropReplyAfterApply(Match match, int times) {
  std::lock_guard<std::mutex> lock(mu_);
  faults_.push_back(Fault{std::move(match), times, 0, true});
}

void FakeApi::HoldWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  if (held_from_ == 0) held_from_ = rv_ + 1;
}

void FakeApi::ReleaseWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  if (held_from_ == 0) return;
  for (const auto& e : history_) {
    if (e.rv < held_from_) continue;
    for (auto& w : watchers_) {
      if (auto line = w->LineFor(e)) w->Push(std::move(*line));
    }
  }
  held_from_ = 0;
}

void FakeApi::WatchesMoved() {
  {
    std::lock_guard<std::mutex> lock(idle_mu_);
    ++idle_gen_;
  }
  idle_cv_.notify_all();
}

void FakeApi::WaitWatchesIdle(size_t watches) const {
  std::unique_lock<std::mutex> idle(idle_mu_);
  while (true) {
    const uint64_t gen = idle_gen_;
    idle.unlock();
    bool all_idle = true;
    {
      std::lock_guard<std::mutex> lock(mu_);  // lines are pushed under mu_ (Record, ReleaseWatches)
      all_idle = watchers_.size() >= watches;
      for (const auto& w : watchers_) all_idle = all_idle && w->Idle();
    }
    idle.lock();
    if (all_idle) return;
    idle_cv_.wait(idle, [&] { return idle_gen_ != gen; });
  }
}

void FakeApi::CloseWatches() {
  std::vector<std::shared_ptr<Watcher>> watchers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    watchers = watchers_;
  }
  for (auto& w : watchers) w->Close();
}

void FakeApi::Compact() {
  std::lock_guard<std::mutex> lock(mu_);
  // Held watch events are not forgotten: they are still to be delivered.
  compacted_ = held_from_ != 0 ? held_from_ : rv_ + 1;
  history_.erase(std::remove_if(history_.begin(), history_.end(), [&](const Event& e) { return e.rv < compacted_; }),
                 history_.end());
  snapshots_.clear();
}

namespace {
bool RequestMatches(const FakeApi::Match& m, const HttpRequest& req) {
  const std::string path = req.path.substr(0, req.path.find('?'));
  if (!m.method.empty() && m.method != req.method) return false;
  if (!m.path.empty() && m.path != path) return false;
  return !m.when || m.when(req);
}
}  // namespace

void FakeApi::HoldRequests(Match match) {
  std::lock_guard<std::mutex> lock(mu_);
  hold_ = std::move(match);
}

void FakeApi::ReleaseRequests() {
  std::lock_guard<std::mutex> lock(mu_);
  hold_.reset();
  released_.notify_all();
}

int FakeApi::RequestsHeld() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_requests_;
}

std::optional<FakeApi::Fault> FakeApi::TakeFault(const HttpRequest& req) {
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (it->remaining <= 0) continue;
    if (!RequestMatches(it->match, req)) continue;
    Fault f = *it;
    if (--it->remaining <= 0) faults_.erase(it);
    ++faults_fired_;
    return f;
  }
  return std::nullopt;
}

void FakeApi::Record(const std::string& type, const std::string& key, const ResourceInfo* info, std::string object,
                     std::string previous) {
  Event e{rv_, type, key, std::move(object), std::move(previous), info};
  if (held_from_ == 0) {
    for (auto& w : watchers_) {
      if (auto line = w->LineFor(e)) w->Push(std::move(*line));
    }
  }
  history_.push_back(std::move(e));
}

k8s::Result<HttpResponse> FakeApi::Send(const HttpRequest& req) {
  std::optional<Fault> fault;
  HttpResponse resp;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (hold_ && RequestMatches(*hold_, req)) {
      ++held_requests_;
      released_.wait(lock, [&] { return !hold_; });
      --held_requests_;
    }
    requests_.push_back(req.method + " " + req.path.substr(0, req.path.find('?')));
    fault = TakeFault(req);
    if (fault && !fault->drop_reply) {
      if (fault->code == 0) return k8s::Status::Error("fake API: no answer (injected fault; not applied)");
      return Error(fault->code, "injected by the test (fake API)");
    }
    resp = Handle(req);
  }
  if (fault && fault->drop_reply) {
    return k8s::Status::Error("fake API: the reply was lost after the request was carried out (injected fault)");
  }
  return resp;
}

HttpResponse FakeApi::Handle(const HttpRequest& req) {
  Target t;
  if (!ParseTarget(req.path, Resources(), t)) return Error(404, "the server could not find the requested resource");
  const bool collection = t.name.empty();
  if (req.method == "GET") {
    if (t.query.count("watch")) return Error(400, "the fake API serves watches only through Transport::Stream");
    if (!t.sub.empty()) return Error(404, "the server could not find the requested resource");
    return collection ? List(t) : Get(t);
  }
  if (req.method == "POST") {
    if (t.sub == "binding" && t.info->plural == "pods") return Bind(t, req.body);
    if (!collection) return Error(405, "the server does not allow this method on the requested resource");
    return Create(t, req.body);
  }
  if (collection) return Error(405, "the server does not allow this method on the requested resource");
  if (!t.sub.empty() && !(t.sub == "status" && t.info->has_status)) {
    return Error(404, "the server could not find the requested resource");
  }
  if (req.method == "PUT" || req.method == "PATCH") return Write(t, req);
  if (req.method == "DELETE") {
    if (!t.sub.empty()) return Error(405, "the server does not allow this method on the requested resource");
    return Delete(t, req.body);
  }
  return Error(405, "the server does not allow this method on the requested resource");
}

HttpResponse FakeApi::Get(const Target& t) {
  auto it = objects_.find(t.Key());
  if (it == objects_.end()) return Error(404, t.NotFound());
  return Ok(200, it->second.json);
}

HttpResponse FakeApi::List(const Target& t) {
  std::vector<std::string> items;
  uint64_t rv = rv_;
  std::string next;
  auto cont = t.query.find("continue");
  if (cont != t.query.end() && !cont->second.empty()) {
    auto snap = snapshots_.find(cont->second);
    if (snap == snapshots_.end()) {
      return Error(410, "The provided continue parameter is too old to display a consistent list result. You can start a "
                        "new list without the continue parameter.", "Expired");
    }
    items = std::move(snap->second.items);
    rv = snap->second.rv;
    snapshots_.erase(snap);
  } else {
    Filter f;
    f.ns = t.ns;
    auto ls = t.query.find("labelSelector");
    auto fs = t.query.find("fieldSelector");
    if (ls != t.query.end() && !ParseSelector(ls->second, true, f.labels)) {
      return Error(400, "unable to parse requirement: the fake API serves only equality-based selectors: " + ls->second);
    }
    if (fs != t.query.end() && !ParseSelector(fs->second, false, f.fields)) {
      return Error(400, "invalid field selector: " + fs->second);
    }
    const std::string prefix = t.Prefix() + (t.ns.empty() ? "" : t.ns + "/");
    for (auto it = objects_.lower_bound(prefix); it != objects_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
      if (f.Matches(it->second.json)) items.push_back(it->second.json);
    }
  }
  int64_t limit = 0;
  if (auto l = t.query.find("limit"); l != t.query.end() && !l->second.empty() &&
                                      l->second.find_first_not_of("0123456789") == std::string::npos && l->second.size() < 10) {
    limit = std::stoll(l->second);
  }
  if (limit > 0 && items.size() > static_cast<size_t>(limit)) {
    Snapshot rest{std::vector<std::string>(items.begin() + limit, items.end()), rv};
    items.resize(static_cast<size_t>(limit));
    next = "fake-continue-" + std::to_string(++continues_);
    snapshots_[next] = std::move(rest);
  }
  std::string body = R"({"kind":)" + json::Quote(t.info->kind + "List") + R"(,"apiVersion":)" +
                     json::Quote(t.info->ApiVersion()) + R"(,"metadata":{"resourceVersion":)" +
                     json::Quote(std::to_string(rv));
  if (!next.empty()) body += R"(,"continue":)" + json::Quote(next);
  body += R"(},"items":[)";
  for (size_t i = 0; i < items.size(); ++i) body += (i ? "," : "") + items[i];
  body += "]}";
  return Ok(200, std::move(body));
}

HttpResponse FakeApi::Create(const Target& t_in, const std::string& body) {
  Target t = t_in;
  json::Document d = ParseOrNull(body);
  if (!d.IsObject()) return Error(400, "the body of the request was not a JSON object");
  Alloc& a = d.GetAllocator();
  json::Value& meta = Meta(d);
  if (t.info->namespaced) {
    if (t.ns.empty()) return Error(404, "the server could not find the requested resource");
    const std::string body_ns = json::GetString(meta, "namespace");
    if (!body_ns.empty() && body_ns != t.ns) {
      return Error(400, "the namespace of the provided object does not match the namespace sent on the request");
    }
    SetMember(meta, "namespace", Str(t.ns, a), a);
  }
  t.name = json::GetString(meta, "name");
  if (t.name.empty()) {
    const std::string gen = json::GetString(meta, "generateName");
    if (gen.empty()) return Error(422, t.info->kind + " is invalid: metadata.name: Required value: name or generateName is required");
    static const char* kChars = "bcdfghjklmnpqrstvwxz2456789";
    uint64_t n = ++names_;
    std::string suffix;
    for (int i = 0; i < 5; ++i, n /= 27) suffix.push_back(kChars[n % 27]);
    t.name = gen + suffix;
    SetMember(meta, "name", Str(t.name, a), a);
  }
  if (objects_.count(t.Key())) {
    return Error(409, t.info->GroupResource() + " " + Quoted(t.name) + " already exists", "AlreadyExists");
  }
  char uid[64];
  std::snprintf(uid, sizeof uid, "fa4e0000-0000-4000-8000-%012llx", static_cast<unsigned long long>(++uids_));
  SetMember(meta, "uid", Str(uid, a), a);
  SetMember(meta, "resourceVersion", Str(std::to_string(++rv_), a), a);
  SetMember(meta, "creationTimestamp", Str(NowText(), a), a);
  SetMember(meta, "generation", json::Value(int64_t{1}), a);
  if (meta.HasMember("deletionTimestamp")) meta.RemoveMember("deletionTimestamp");
  if (meta.HasMember("deletionGracePeriodSeconds")) meta.RemoveMember("deletionGracePeriodSeconds");
  SetMember(d, "kind", Str(t.info->kind, a), a);
  SetMember(d, "apiVersion", Str(t.info->ApiVersion(), a), a);
  switch (t.info->create_status) {
    case ResourceInfo::CreateStatus::kDrop:
      if (d.HasMember("status")) d.RemoveMember("status");
      break;
    case ResourceInfo::CreateStatus::kPodPending: {
      json::Value st(rapidjson::kObjectType);
      st.AddMember("phase", "Pending", a);
      SetMember(d, "status", std::move(st), a);
      break;
    }
    case ResourceInfo::CreateStatus::kNamespaceActive: {
      json::Value st(rapidjson::kObjectType);
      st.AddMember("phase", "Active", a);
      SetMember(d, "status", std::move(st), a);
      break;
    }
    case ResourceInfo::CreateStatus::kKeep:
      break;
  }
  std::string text = json::Serialize(d);
  objects_[t.Key()] = Stored{text, t.info};
  Record("ADDED", t.Key(), t.info, text, "");
  return Ok(201, std::move(text));
}

HttpResponse FakeApi::Bind(const Target& t, const std::string& body) {
  auto it = objects_.find(t.Key());
  if (it == objects_.end()) return Error(404, t.NotFound());
  json::Document binding = ParseOrNull(body);
  const std::string node = json::GetString(json::Find(binding, {"target", "name"}));
  if (node.empty()) return Error(422, "Binding is invalid: target.name: Required value");
  json::Document pod = ParseOrNull(it->second.json);
  const std::string cannot = "Operation cannot be fulfilled on pods/binding " + Quoted(t.name) + ": ";
  const std::string want_uid = MetaString(binding, "uid");
  if (!want_uid.empty() && want_uid != MetaString(pod, "uid")) {
    return Error(409, cannot + "Precondition failed: UID in precondition: " + want_uid + ", UID in object meta: " +
                          MetaString(pod, "uid"));
  }
  if (HasDeletionTimestamp(pod)) return Error(409, cannot + "pod " + t.name + " is being deleted, cannot be assigned to a host");
  const std::string bound = json::GetString(json::Find(pod, {"spec", "nodeName"}));
  if (!bound.empty()) return Error(409, cannot + "pod " + t.name + " is already assigned to node " + Quoted(bound));
  Alloc& a = pod.GetAllocator();
  if (!pod.HasMember("spec") || !pod["spec"].IsObject()) SetMember(pod, "spec", json::Value(rapidjson::kObjectType), a);
  SetMember(pod["spec"], "nodeName", Str(node, a), a);
  SetMember(Meta(pod), "resourceVersion", Str(std::to_string(++rv_), a), a);
  std::string previous = it->second.json;
  it->second.json = json::Serialize(pod);
  Record("MODIFIED", t.Key(), t.info, it->second.json, std::move(previous));
  return Ok(201, R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201})");
}

HttpResponse FakeApi::Write(const Target& t, const HttpRequest& req) {
  auto it = objects_.find(t.Key());
  if (it == objects_.end()) return Error(404, t.NotFound());
  json::Document old = ParseOrNull(it->second.json);
  json::Document next;
  if (req.method == "PUT") {
    next = ParseOrNull(req.body);
    if (!next.IsObject()) return Error(400, "the body of the request was not a JSON object");
    const std::string name = MetaString(next, "name");
    if (!name.empty() && name != t.name) {
      return Error(400, "the name of the object (" + name + ") does not match the name on the URL (" + t.name + ")");
    }
  } else {
    json::Document patch = ParseOrNull(req.body);
    if (patch.IsNull()) return Error(400, "the body of the request was not valid JSON");
    next = Copy(old);
    if (req.content_type == "application/merge-patch+json") {
      ApplyMergePatch(next, patch, next.GetAllocator());
      if (!next.IsObject()) return Error(422, "a merge patch must leave an object");
    } else if (req.content_type == "application/json-patch+json") {
      std::string err = ApplyJsonPatch(next, patch);
      if (!err.empty()) return Error(422, err);
    } else {
      return Error(415, "the body of the request was in an unknown format - accepted media types by the fake API: "
                        "application/json-patch+json, application/merge-patch+json");
    }
  }
  return Commit(t, t.Key(), next, old);
}

HttpResponse FakeApi::Commit(const Target& t, const std::string& key, json::Document& next, const json::Document& old) {
  const std::string old_rv = MetaString(old, "resourceVersion");
  const std::string want_rv = MetaString(next, "resourceVersion");
  if (!want_rv.empty() && want_rv != old_rv) {
    return Error(409, t.Cannot() + "the object has been modified; please apply your changes to the latest version and try again");
  }
  json::Document final_doc;
  Alloc& a = final_doc.GetAllocator();
  if (t.sub == "status") {
    final_doc.CopyFrom(old, a);
    CopyMember(final_doc, next, "status", a);
  } else {
    final_doc.CopyFrom(next, a);
    json::Value& meta = Meta(final_doc);
    static const json::Value kNoMeta(rapidjson::kObjectType);
    const json::Value* old_meta = json::Find(old, {"metadata"});
    for (const char* k : {"uid", "name", "namespace", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "generation"}) {
      CopyMember(meta, old_meta != nullptr ? *old_meta : kNoMeta, k, a);
    }
    SetMember(final_doc, "kind", Str(t.info->kind, a), a);
    SetMember(final_doc, "apiVersion", Str(t.info->ApiVersion(), a), a);
    if (t.info->has_status) CopyMember(final_doc, old, "status", a);
    if (!SameOutsideMetaAndStatus(final_doc, old)) {
      SetMember(Meta(final_doc), "generation", json::Value(MetaInt(old, "generation", 1) + 1), a);
    }
  }
  SetMember(Meta(final_doc), "resourceVersion", Str(old_rv, a), a);
  if (final_doc == old) return Ok(200, objects_[key].json);  // nothing changed: no new version
  SetMember(Meta(final_doc), "resourceVersion", Str(std::to_string(++rv_), a), a);
  std::string text = json::Serialize(final_doc);
  std::string previous = objects_[key].json;
  if (HasDeletionTimestamp(final_doc) && NoFinalizers(final_doc) && MetaInt(final_doc, "deletionGracePeriodSeconds") == 0) {
    objects_.erase(key);
    Record("DELETED", key, t.info, text, std::move(previous));
  } else {
    objects_[key].json = text;
    Record("MODIFIED", key, t.info, text, std::move(previous));
  }
  return Ok(200, std::move(text));
}

HttpResponse FakeApi::Delete(const Target& t, const std::string& body) {
  auto it = objects_.find(t.Key());
  if (it == objects_.end()) return Error(404, t.NotFound());
  json::Document obj = ParseOrNull(it->second.json);
  json::Document opts = ParseOrNull(body);
  const std::string uid = json::GetString(json::Find(opts, {"preconditions", "uid"}));
  const std::string rv = json::GetString(json::Find(opts, {"preconditions", "resourceVersion"}));
  if (!uid.empty() && uid != MetaString(obj, "uid")) {
    return Error(409, t.Cannot() + "Precondition failed: UID in precondition: " + uid + ", UID in object meta: " +
                          MetaString(obj, "uid"));
  }
  if (!rv.empty() && rv != MetaString(obj, "resourceVersion")) {
    return Error(409, t.Cannot() + "Precondition failed: ResourceVersion in precondition: " + rv +
                          ", ResourceVersion in object meta: " + MetaString(obj, "resourceVersion"));
  }
  // Graceful deletion applies to a Pod on a node that has not finished (pkg/registry/core/pod:
  // CheckGracefulDeletion): it waits for its kubelet, which the fake does not have.
  int64_t grace = 0;
  if (t.info->plural == "pods") {
    const std::string phase = json::GetString(json::Find(obj, {"status", "phase"}));
    const bool on_node = !json::GetString(json::Find(obj, {"spec", "nodeName"})).empty();
    if (on_node && phase != "Succeeded" && phase != "Failed") {
      const json::Value* spec = json::Find(obj, {"spec"});
      grace = spec != nullptr ? json::GetInt(*spec, "terminationGracePeriodSeconds", 30) : 30;
      if (opts.IsObject() && opts.HasMember("gracePeriodSeconds") && opts["gracePeriodSeconds"].IsInt64()) {
        grace = opts["gracePeriodSeconds"].GetInt64();
      }
      if (HasDeletionTimestamp(obj)) grace = std::min(grace, MetaInt(obj, "deletionGracePeriodSeconds"));
    }
  }
  Alloc& a = obj.GetAllocator();
  std::string previous = it->second.json;
  if (grace > 0 || !NoFinalizers(obj)) {
    if (HasDeletionTimestamp(obj) && MetaInt(obj, "deletionGracePeriodSeconds") == grace) return Ok(200, previous);
    json::Value& meta = Meta(obj);
    if (!HasDeletionTimestamp(obj)) {
      SetMember(meta, "deletionTimestamp", Str(k8s::FormatRfc3339(clock_.Now() + std::chrono::seconds(grace)), a), a);
    }
    SetMember(meta, "deletionGracePeriodSeconds", json::Value(grace), a);
    SetMember(meta, "resourceVersion", Str(std::to_string(++rv_), a), a);
    it->second.json = json::Serialize(obj);
    Record("MODIFIED", t.Key(), t.info, it->second.json, std::move(previous));
    return Ok(200, it->second.json);
  }
  SetMember(Meta(obj), "resourceVersion", Str(std::to_string(++rv_), a), a);
  std::string text = json::Serialize(obj);
  objects_.erase(it);
  Record("DELETED", t.Key(), t.info, text, std::move(previous));
  return Ok(200, std::move(text));
}

k8s::Result<HttpResponse> FakeApi::Stream(const HttpRequest& req, const std::function<bool(std::string& line)>& on_line,
                                          k8s::Cancellation* cancel, int /*idle_timeout_seconds*/) {
  auto w = std::make_shared<Watcher>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back("WATCH " + req.path.substr(0, req.path.find('?')));
    Target t;
    if (req.method != "GET" || !ParseTarget(req.path, Resources(), t) || !t.name.empty() || !t.sub.empty()) {
      return Error(404, "the server could not find the requested resource");
    }
    const std::string watch = t.query.count("watch") ? t.query["watch"] : "";
    if (watch != "true" && watch != "1") return Error(400, "the fake API streams only watches (?watch=true)");
    w->info = t.info;
    w->filter.ns = t.ns;
    if (t.query.count("labelSelector") && !ParseSelector(t.query["labelSelector"], true, w->filter.labels)) {
      return Error(400, "unable to parse requirement: the fake API serves only equality-based selectors");
    }
    if (t.query.count("fieldSelector") && !ParseSelector(t.query["fieldSelector"], false, w->filter.fields)) {
      return Error(400, "invalid field selector: " + t.query["fieldSelector"]);
    }
    const std::string from = t.query.count("resourceVersion") ? t.query["resourceVersion"] : "";
    if (from.empty() || from == "0") {
      for (auto it = objects_.lower_bound(t.Prefix()); it != objects_.end() && it->first.rfind(t.Prefix(), 0) == 0; ++it) {
        if (w->filter.Matches(it->second.json)) w->lines.push_back(EventLine("ADDED", it->second.json));
      }
    } else {
      uint64_t n = 0;
      if (from.find_first_not_of("0123456789") != std::string::npos || from.size() > 19) {
        return Error(400, "invalid resourceVersion " + Quoted(from));
      }
      n = std::stoull(from);
      if (n + 1 < compacted_) {
        w->lines.push_back(EventLine("ERROR", StatusJson(410, "Expired", "too old resource version: " + from + " (" +
                                                                             std::to_string(compacted_ - 1) + ")")));
        w->closed = true;
      } else {
        for (const auto& e : history_) {
          if (e.rv <= n || (held_from_ != 0 && e.rv >= held_from_)) continue;
          if (auto line = w->LineFor(e)) w->lines.push_back(std::move(*line));
        }
      }
    }
    if (!w->closed) watchers_.push_back(w);
  }
  WatchesMoved();
  int hook = -1;
  if (cancel != nullptr) hook = cancel->OnCancel([w] { w->Close(); });
  while (true) {
    std::string line;
    {
      std::unique_lock<std::mutex> lock(w->mu);
      w->cv.wait(lock, [&] { return !w->lines.empty() || w->closed; });
      if (w->lines.empty() || (cancel != nullptr && cancel->cancelled())) break;
      line = std::move(w->lines.front());
      w->lines.pop_front();
      w->reading = true;
    }
    const bool more = on_line(line);
    {
      std::lock_guard<std::mutex> lock(w->mu);
      w->reading = false;
    }
    WatchesMoved();
    if (!more) break;
  }
  if (cancel != nullptr) cancel->Remove(hook);
  {
    std::lock_guard<std::mutex> lock(mu_);
    watchers_.erase(std::remove(watchers_.begin(), watchers_.end(), w), watchers_.end());
  }
  WatchesMoved();
  return Ok(200, "");
}

}  // namespace berth::testing
