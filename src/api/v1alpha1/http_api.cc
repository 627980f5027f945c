#include "api/v1alpha1/http_api.h"

#include <rapidjson/prettywriter.h>

#include "api/v1alpha1/json_io.h"
#include "k8s/json.h"

namespace berth::api::v1alpha1 {

namespace json = k8s::json;
using io::Writer;

namespace {

std::vector<std::string> StringsOf(const json::Value* v) {
  std::vector<std::string> out;
  if (v == nullptr || !v->IsArray()) return out;
  for (const auto& s : v->GetArray()) {
    if (s.IsString()) out.emplace_back(s.GetString(), s.GetStringLength());
  }
  return out;
}

QueueItem ReadQueueItem(const json::Value& v) {
  QueueItem it;
  it.position = json::GetInt(v, "position");
  it.ns = json::GetString(v, "namespace");
  it.name = json::GetString(v, "name");
  it.priority = json::GetInt(v, "priority");
  it.effective_priority = json::GetInt(v, "effectivePriority", it.priority);
  it.nodes = json::GetInt(v, "nodes", 1);
  it.fleets = StringsOf(json::Find(v, {"fleets"}));
  it.submitted_at = json::GetString(v, "submittedAt");
  it.wait_seconds = json::GetInt(v, "waitSeconds");
  it.reason = json::GetString(v, "reason");
  it.message = json::GetString(v, "message");
  it.team = json::GetString(v, "team");
  it.estimated_start_at = json::GetString(v, "estimatedStartAt");
  if (const json::Value* s = json::Find(v, {"startsInSeconds"}); s != nullptr && s->IsInt64()) {
    it.starts_in_seconds = s->GetInt64();
  }
  it.earliest_start_at = json::GetString(json::Find(v, {"estimatedStartRange", "earliest"}));
  it.latest_start_at = json::GetString(json::Find(v, {"estimatedStartRange", "latest"}));
  if (const json::Value* r = json::Find(v, {"startsInRangeSeconds"});
      r != nullptr && r->IsArray() && r->Size() == 2 && (*r)[0].IsInt64() && (*r)[1].IsInt64()) {
    it.starts_in_range_seconds = std::make_pair((*r)[0].GetInt64(), (*r)[1].GetInt64());
  }
  it.kind = json::GetString(v, "kind");
  if (it.kind.empty()) it.kind = "Run";
  it.workload = json::GetString(v, "workload");
  return it;
}

// The item's members, in the order the controller has always written them.
template <typename W>
void WriteQueueItem(W& w, const QueueItem& it) {
  auto str = [&w](const char* key, const std::string& s) {
    w.Key(key);
    w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  };
  auto num = [&w](const char* key, int64_t v) {
    w.Key(key);
    w.Int64(v);
  };
  w.StartObject();
  num("position", it.position);
  str("namespace", it.ns);
  str("name", it.name);
  num("priority", it.priority);
  num("effectivePriority", it.effective_priority);
  num("nodes", it.nodes);
  w.Key("fleets");
  w.StartArray();
  for (const auto& f : it.fleets) w.String(f.c_str(), static_cast<rapidjson::SizeType>(f.size()));
  w.EndArray();
  str("submittedAt", it.submitted_at);
  num("waitSeconds", it.wait_seconds);
  str("reason", it.reason);
  str("message", it.message);
  if (!it.team.empty()) str("team", it.team);
  if (!it.estimated_start_at.empty()) str("estimatedStartAt", it.estimated_start_at);
  if (it.starts_in_seconds) num("startsInSeconds", *it.starts_in_seconds);
  if (!it.earliest_start_at.empty() && !it.latest_start_at.empty()) {
    w.Key("estimatedStartRange");
    w.StartObject();
    str("earliest", it.earliest_start_at);
    str("latest", it.latest_start_at);
    w.EndObject();
  }
  if (it.starts_in_range_seconds) {
    w.Key("startsInRangeSeconds");
    w.StartArray();
    w.Int64(it.starts_in_range_seconds->first);
    w.Int64(it.starts_in_range_seconds->second);
    w.EndArray();
  }
  str("kind", it.kind.empty() ? std::string("Run") : it.kind);
  if (!it.workload.empty()) str("workload", it.workload);
  w.EndObject();
}

}  // namespace

k8s::Result<QueuePage> DecodeQueuePage(std::string_view body) {
  auto doc = json::Parse(body);
  if (!doc.ok()) return k8s::Status::Error("not JSON: " + doc.status().message());
  const json::Value* items = doc->IsObject() ? json::Find(*doc, {"items"}) : nullptr;
  if (items == nullptr || !items->IsArray()) return k8s::Status::Error("no \"items\" array in the answer");
  QueuePage q;
  if (const json::Value* l = json::Find(*doc, {"leader"}); l != nullptr && l->IsBool()) q.leader = l->GetBool();
  q.generated_at = json::GetString(*doc, "generatedAt");
  q.total = json::GetInt(*doc, "total", static_cast<int64_t>(items->Size()));
  q.continue_token = json::GetString(*doc, "continue");
  for (const auto& v : items->GetArray()) {
    if (v.IsObject()) q.items.push_back(ReadQueueItem(v));
  }
  return q;
}

std::string EncodeQueuePage(const QueuePage& page) {
  Writer w;
  auto& raw = w.raw();
  raw.StartObject();
  w.StringMember("generatedAt", page.generated_at);
  if (page.leader) w.BoolMember("leader", *page.leader);
  w.IntMember("total", page.total);
  w.Key("items");
  raw.StartArray();
  for (const auto& it : page.items) WriteQueueItem(raw, it);
  raw.EndArray();
  w.StringMemberIfSet("continue", page.continue_token);
  raw.EndObject();
  return w.Take();
}

std::string EncodeQueueItemsPretty(const std::vector<QueueItem>& items) {
  rapidjson::StringBuffer buf;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
  w.SetIndent(' ', 2);
  w.StartArray();
  for (const auto& it : items) WriteQueueItem(w, it);
  w.EndArray();
  return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

bool IsEmptyObjectBody(std::string_view body) {
  auto doc = json::Parse(body);
  return doc.ok() && doc->IsObject() && doc->MemberCount() == 0;
}

namespace {

double NumberAt(const json::Value& v, std::string_view key) {
  const json::Value* n = json::Find(v, {key});
  return n != nullptr && n->IsNumber() ? n->GetDouble() : 0;
}

// "medianWait": {"fromSeconds", "underSeconds"} (no underSeconds: -1); null or absent: nullopt.
std::optional<std::pair<int64_t, int64_t>> MedianWaitAt(const json::Value& v) {
  const json::Value* m = json::Find(v, {"medianWait"});
  if (m == nullptr || !m->IsObject()) return std::nullopt;
  const json::Value* under = json::Find(*m, {"underSeconds"});
  return std::make_pair(json::GetInt(*m, "fromSeconds"), under != nullptr && under->IsInt64() ? under->GetInt64() : -1);
}

}  // namespace

k8s::Result<UsageAnswer> DecodeUsageAnswer(std::string_view body) {
  auto doc = json::Parse(body);
  if (!doc.ok() || !doc->IsObject() || json::GetString(json::Find(*doc, {"kind"})) != "Usage") {
    return k8s::Status::Error("the queue API's usage answer is not a Usage object");
  }
  const json::Value* rows = json::Find(*doc, {"rows"});
  if (rows == nullptr || !rows->IsArray()) return k8s::Status::Error("the queue API's usage answer has no rows");
  UsageAnswer out;
  out.by = json::GetString(json::Find(*doc, {"by"}));
  out.from = json::GetString(json::Find(*doc, {"from"}));
  out.to = json::GetString(json::Find(*doc, {"to"}));
  for (const auto& r : rows->GetArray()) {
    out.rows.push_back(UsageRow{.name = json::GetString(json::Find(r, {"name"})),
                                .gpu_hours = NumberAt(r, "gpuHours"),
                                .weighted_gpu_hours = NumberAt(r, "weightedGpuHours"),
                                .share = NumberAt(r, "share"),
                                .cpu_hours = NumberAt(r, "cpuHours"),
                                .memory_gib_hours = NumberAt(r, "memoryGiBHours"),
                                .runs = static_cast<int64_t>(NumberAt(r, "runs")),
                                .median_wait = MedianWaitAt(r)});
    out.runs_known = out.runs_known || json::Find(r, {"runs"}) != nullptr;
  }
  const json::Value* total = json::Find(*doc, {"total"});
  out.runs_known = out.runs_known || (total != nullptr && json::Find(*total, {"runs"}) != nullptr);
  return out;
}

std::string ErrorSentenceOf(std::string_view body) {
  auto doc = json::Parse(body);
  const json::Value* e = doc.ok() && doc->IsObject() ? json::Find(*doc, {"error"}) : nullptr;
  return e != nullptr && e->IsString() ? json::GetString(e) : std::string(body);
}

PriorityBody DecodePriorityBody(std::string_view body) {
  PriorityBody out;
  auto doc = json::Parse(body);
  if (!doc.ok() || !doc->IsObject()) return out;
  out.is_object = true;
  const json::Value* p = json::Find(*doc, {"priority"});
  if (p != nullptr && p->IsInt64()) out.priority = p->GetInt64();
  return out;
}

}  // namespace berth::api::v1alpha1
