// Run: decode (spec checked as the engine needs it, status read defensively), encode.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>

#include "api/v1alpha1/codec.h"
#include "api/v1alpha1/json_io.h"
#include "k8s/duration.h"
#include "k8s/store.h"
#include "k8s/quantity.h"

namespace berth::api::v1alpha1 {

namespace json = k8s::json;
using io::Reader;
using io::Writer;

namespace {

// Reads a quantity that the CRD allows as integer or string.
bool ReadQuantity(const json::Value* v, bool milli, int64_t& out, std::string& error, const char* field) {
  if (v == nullptr) return true;
  std::string text;
  if (v->IsString()) {
    text = v->GetString();
  } else if (v->IsInt64()) {
    text = std::to_string(v->GetInt64());
  } else if (v->IsNumber()) {
    text = std::to_string(v->GetDouble());
  } else {
    error = std::string("spec.resources.") + field + " must be a quantity";
    return false;
  }
  auto r = milli ? k8s::ParseMilliValue(text) : k8s::ParseValue(text);
  if (!r.ok()) {
    error = std::string("spec.resources.") + field + ": " + r.status().message();
    return false;
  }
  out = r.value();
  return true;
}

// spec.nodes, strictly: a value that does not fit (4294967297, 1e30) must not wrap or fall back
// to 1. Returns false when it is unreadable.
bool ReadNodes(const json::Value& spec, RunSpec& run) {
  const json::Value* n = json::Find(spec, {"nodes"});
  if (n == nullptr || n->IsNull()) return true;
  if (n->IsInt64()) {
    run.nodes = n->GetInt64();
    return true;
  }
  if (n->IsDouble() && n->GetDouble() >= 1 && n->GetDouble() <= static_cast<double>(kMaxRunNodes) &&
      n->GetDouble() == static_cast<double>(static_cast<int64_t>(n->GetDouble()))) {
    run.nodes = static_cast<int64_t>(n->GetDouble());
    return true;
  }
  return false;
}

// spec.maxDuration and spec.startTimeout.
void ReadDurations(const json::Value& spec, RunSpec& run, std::string& err) {
  auto parsed = k8s::ParseDuration(json::GetString(spec, "maxDuration", "off"));
  if (!parsed.ok()) {
    if (err.empty()) err = "spec.maxDuration: " + parsed.status().message();
  } else {
    run.max_duration = parsed.value();
  }
  if (const json::Value* st = json::Find(spec, {"startTimeout"}); st != nullptr && st->IsString()) {
    auto d = k8s::ParseDuration(st->GetString());
    if (!d.ok()) {
      if (err.empty()) err = "spec.startTimeout: " + d.status().message();
    } else {
      run.start_timeout = d.value();
    }
  }
}

void ReadRetry(const json::Value& spec, RunSpec& run, std::string& err) {
  const json::Value* r = json::Find(spec, {"retry"});
  if (r == nullptr || !r->IsObject()) return;
  RetrySpec retry;
  const json::Value* events = json::Find(*r, {"onEvents"});
  if (events == nullptr || !events->IsArray()) {
    retry.on_no_capacity = retry.on_interruption = retry.on_error = true;
  } else {
    for (auto& e : events->GetArray()) {
      std::string ev = e.IsString() ? e.GetString() : "";
      if (ev == "no-capacity") retry.on_no_capacity = true;
      if (ev == "interruption") retry.on_interruption = true;
      if (ev == "error") retry.on_error = true;
    }
  }
  auto d = k8s::ParseDuration(json::GetString(*r, "duration", "1h"));
  if (!d.ok()) {
    if (err.empty()) err = "spec.retry.duration: " + d.status().message();
  } else {
    retry.duration = d.value();
  }
  run.retry = retry;
}

// spec.template: kept as written (up to `kept` bytes of JSON; its size and hash either way), at
// most kMaxTemplateBytes; at least one container, and no constraint on nodes (berth chooses the
// machine itself: a template constraint on nodes would only make the kubelet refuse the Pod on the
// machine berth chose; machines are chosen with Fleets instead).
// FNV-1a, 64 bits: a hash that does not change between builds (status.templateHash is kept).
uint64_t Fnv1a64(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void ReadTemplate(const json::Value& spec, size_t kept, Run& run, std::string& err) {
  if (const json::Value* t = json::Find(spec, {"template"}); t != nullptr) {
    std::string text = json::Serialize(*t);
    run.template_bytes = text.size();
    run.template_hash = Fnv1a64(text);
    if (text.size() <= kept) run.spec.template_json = std::move(text);
    if (run.template_bytes > kMaxTemplateBytes && err.empty()) err = TemplateTooLarge(run.template_bytes);
  }
  const json::Value* containers = json::Find(spec, {"template", "spec", "containers"});
  if ((containers == nullptr || !containers->IsArray() || containers->Empty()) && err.empty()) {
    err = "spec.template.spec.containers must list at least one container";
  }
}

void CheckNoNodeConstraints(const json::Value& spec, std::string& err) {
  for (const char* field : {"nodeSelector", "affinity", "nodeName"}) {
    const json::Value* v = json::Find(spec, {"template", "spec", field});
    bool set = v != nullptr && !v->IsNull() && !(v->IsObject() && v->ObjectEmpty()) && !(v->IsString() && v->GetStringLength() == 0);
    if (std::string_view(field) == "affinity" && set) {
      set = json::Find(*v, {"nodeAffinity"}) != nullptr;  // Pod (anti-)affinity is the kubelet's to ignore
    }
    if (set && err.empty()) {
      err = std::string("spec.template.spec.") + field +
            " is not supported: berth places the run on a machine of its fleets; choose machines with a Fleet's "
            "nodeSelector and list that fleet in spec.fleets";
    }
  }
}

void ReadResourcesAndFleets(const json::Value& spec, RunSpec& run, std::string& err) {
  if (const json::Value* res = json::Find(spec, {"resources"}); res != nullptr && res->IsObject()) {
    ReadQuantity(json::Find(*res, {"cpu"}), true, run.cpu_milli, err, "cpu") &&
        ReadQuantity(json::Find(*res, {"memory"}), false, run.memory_bytes, err, "memory");
    run.gpus = json::GetInt(*res, "gpu", 0);
  }
  if (const json::Value* f = json::Find(spec, {"fleets"}); f != nullptr && f->IsArray()) {
    for (auto& x : f->GetArray()) {
      if (x.IsString()) run.fleets.emplace_back(x.GetString());
    }
  }
}

void ReadTopology(const json::Value& spec, RunSpec& run, std::string& err) {
  const json::Value* topology = json::Find(spec, {"topology"});
  if (topology == nullptr || !topology->IsObject()) return;
  run.topology_required = json::GetString(*topology, "required");
  run.topology_preferred = json::GetString(*topology, "preferred");
  if (!run.topology_required.empty() && !run.topology_preferred.empty() && err.empty()) {
    err = "spec.topology: required and preferred are exclusive";
  }
}

void DecodeRunSpec(const json::Value& spec, size_t kept_template_bytes, Run& whole) {
  RunSpec& run = whole.spec;
  std::string& err = whole.invalid_message;
  run.priority = json::GetInt(spec, "priority", base::kDefaultPriority);
  if (const json::Value* b = json::Find(spec, {"stop"}); b != nullptr && b->IsBool()) run.stop = b->GetBool();
  if (const json::Value* b = json::Find(spec, {"suspend"}); b != nullptr && b->IsBool()) run.suspend = b->GetBool();
  const bool nodes_readable = ReadNodes(spec, run);
  if (const json::Value* b = json::Find(spec, {"wholeInstances"}); b != nullptr && !b->IsNull()) {
    if (b->IsBool()) {
      run.whole_instances = b->GetBool();
    } else if (err.empty()) {
      err = "spec.wholeInstances must be true or false";
    }
  }
  ReadTopology(spec, run, err);
  ReadResourcesAndFleets(spec, run, err);
  ReadDurations(spec, run, err);
  ReadRetry(spec, run, err);
  if (const json::Value* ttl = json::Find(spec, {"ttlSecondsAfterFinished"}); ttl != nullptr && !ttl->IsNull()) {
    if (ttl->IsInt64() && ttl->GetInt64() >= 0 && ttl->GetInt64() <= kMaxTtlSeconds) {
      run.ttl_seconds_after_finished = ttl->GetInt64();
    } else if (err.empty()) {
      err = "spec.ttlSecondsAfterFinished must be an integer from 0 to " + std::to_string(kMaxTtlSeconds);
    }
  }
  if (const json::Value* ref = json::Find(spec, {"workloadRef"}); ref != nullptr && ref->IsObject()) {
    run.workload_ref = WorkloadRef{json::GetString(json::Find(*ref, {"apiVersion"})), json::GetString(json::Find(*ref, {"kind"})),
                                   json::GetString(json::Find(*ref, {"name"})), json::GetString(json::Find(*ref, {"uid"}))};
    if ((run.workload_ref->kind.empty() || run.workload_ref->name.empty() || run.workload_ref->uid.empty()) && err.empty()) {
      err = "spec.workloadRef must name the workload's kind, name and uid";
    }
  }
  if (run.workload_ref) {
    if (json::Find(spec, {"template"}) != nullptr && err.empty()) {
      err = "a Run has either spec.template or spec.workloadRef, not both";
    }
  } else {
    ReadTemplate(spec, kept_template_bytes, whole, err);
  }
  if (!nodes_readable && err.empty()) err = "spec.nodes must be an integer from 1 to " + std::to_string(kMaxRunNodes);
  CheckNoNodeConstraints(spec, err);
  if (run.nodes < 1 && err.empty()) err = "spec.nodes must be at least 1";
  if (run.nodes > kMaxRunNodes && err.empty()) {
    err = "spec.nodes must be at most " + std::to_string(kMaxRunNodes) + ", not " + std::to_string(run.nodes);
  }
  if ((run.priority < base::kMinPriority || run.priority > base::kMaxPriority) && err.empty()) {
    err = "spec.priority must be between " + std::to_string(base::kMinPriority) + " and " + std::to_string(base::kMaxPriority);
  }
}

std::optional<RunStatus::Preemption> ReadPreemption(Reader& st) {
  if (!st.Has("preemption")) return std::nullopt;
  Reader pr = st.Object("preemption");
  if (pr.value() == nullptr) return std::nullopt;
  RunStatus::Preemption p;
  p.fleet = pr.String("fleet").value_or("");
  p.nodes = pr.Strings("nodes");
  p.victims = pr.Strings("victims");
  p.other_victims = pr.Int("otherVictims").value_or(0);
  p.victim_uids = pr.Strings("victimUIDs");
  p.reclaim = pr.Bool("reclaim").value_or(false);
  return p;
}

RunStatus ReadRunStatus(const json::Value& v, std::string& problem) {
  RunStatus s;
  Reader st(&v, "status", &problem);
  if (auto phase = st.String("phase"); phase && !phase->empty()) {
    s.phase = ParsePhase(*phase);
    if (!s.phase) st.Note("phase", "must be Pending, Scheduled, Running, Succeeded or Failed, not \"" + *phase + "\"");
  }
  s.reason = ReasonCode::FromApi(st.String("reason").value_or(""));
  s.message = st.String("message").value_or("");
  s.queue_position = st.Int("queuePosition");
  s.effective_priority = st.Int("effectivePriority");
  s.estimated_start_at = st.TimeAt("estimatedStartAt");
  if (st.Has("estimatedStartRange")) {
    Reader range = st.Object("estimatedStartRange");
    const std::optional<Time> earliest = range.TimeAt("earliest"), latest = range.TimeAt("latest");
    if (earliest && latest) s.estimated_start_range = RunStatus::StartRange{*earliest, *latest};
  }
  s.fleet = st.String("fleet").value_or("");
  for (Reader& e : st.Objects("placement")) {
    s.placement.push_back(PlacementEntry{static_cast<int>(e.Int("rank").value_or(0)), e.String("node").value_or(""),
                                         static_cast<int>(e.Int("blocks").value_or(0)), e.String("pod").value_or("")});
  }
  s.pod_uids = st.Strings("podUIDs");
  s.submitted_at = st.TimeAt("submittedAt");
  s.scheduled_at = st.TimeAt("scheduledAt");
  s.started_at = st.TimeAt("startedAt");
  s.finished_at = st.TimeAt("finishedAt");
  s.resubmissions = st.Int("resubmissions").value_or(0);
  s.retry_after = st.TimeAt("retryAfter");
  s.retry_backoff_seconds = st.Int("retryBackoffSeconds").value_or(0);
  s.observed_generation = st.Int("observedGeneration").value_or(0);
  s.preemption = ReadPreemption(st);
  s.template_hash = st.String("templateHash").value_or("");
  s.conditions = io::ReadConditions(st);
  s.held_since = st.TimeAt("heldSince");
  s.released_at = st.TimeAt("releasedAt");
  s.accounted_until = st.TimeAt("accountedUntil");
  if (st.Has("held")) {
    Reader h = st.Object("held");
    s.held = RunStatus::Held{h.String("fleet").value_or(""), h.Int("gpu").value_or(0), h.Int("cpuMilli").value_or(0),
                             h.Int("memoryBytes").value_or(0)};
  }
  return s;
}

std::string DurationText(const std::optional<Duration>& d) { return d ? base::FormatDuration(*d) : "off"; }

// spec.resources, as a Run and a ticket write it.
void WriteResources(Writer& w, const RunSpec& s) {
  auto& raw = w.raw();
  w.Key("resources");
  raw.StartObject();
  w.StringMember("cpu", k8s::FormatMilli(s.cpu_milli));
  w.StringMember("memory", k8s::FormatBytes(s.memory_bytes));
  w.IntMember("gpu", s.gpus);
  raw.EndObject();
}

// spec.workloadRef when set (a ticket's).
void WriteWorkloadRef(Writer& w, const RunSpec& s) {
  if (!s.workload_ref) return;
  auto& raw = w.raw();
  w.Key("workloadRef");
  raw.StartObject();
  w.StringMember("apiVersion", s.workload_ref->api_version);
  w.StringMember("kind", s.workload_ref->kind);
  w.StringMember("name", s.workload_ref->name);
  w.StringMember("uid", s.workload_ref->uid);
  raw.EndObject();
}

void WriteRunSpec(Writer& w, const RunSpec& s) {
  auto& raw = w.raw();
  raw.StartObject();
  w.IntMember("priority", s.priority);
  w.IntMember("nodes", s.nodes);
  if (s.whole_instances) w.BoolMember("wholeInstances", *s.whole_instances);
  if (!s.topology_required.empty() || !s.topology_preferred.empty()) {
    w.Key("topology");
    raw.StartObject();
    w.StringMemberIfSet("required", s.topology_required);
    w.StringMemberIfSet("preferred", s.topology_preferred);
    raw.EndObject();
  }
  WriteResources(w, s);
  if (!s.fleets.empty()) {
    w.Key("fleets");
    w.StringList(s.fleets);
  }
  w.StringMember("maxDuration", DurationText(s.max_duration));
  if (s.start_timeout) w.StringMember("startTimeout", DurationText(*s.start_timeout));
  if (s.retry) {
    w.Key("retry");
    raw.StartObject();
    w.Key("onEvents");
    raw.StartArray();
    if (s.retry->on_no_capacity) w.String("no-capacity");
    if (s.retry->on_interruption) w.String("interruption");
    if (s.retry->on_error) w.String("error");
    raw.EndArray();
    w.StringMember("duration", DurationText(s.retry->duration));
    raw.EndObject();
  }
  w.IntMemberIfSet("ttlSecondsAfterFinished", s.ttl_seconds_after_finished);
  w.BoolMember("stop", s.stop);
  w.BoolMember("suspend", s.suspend);
  if (!s.template_json.empty()) {
    w.Key("template");
    w.RawJson(s.template_json);
  }
  WriteWorkloadRef(w, s);
  raw.EndObject();
}

void WritePlacement(Writer& w, const std::vector<PlacementEntry>& placement) {
  if (placement.empty()) {
    w.Null();
    return;
  }
  w.raw().StartArray();
  for (const auto& p : placement) {
    w.raw().StartObject();
    w.IntMember("rank", p.rank);
    w.StringMember("node", p.node);
    w.IntMember("blocks", p.blocks);
    w.StringMember("pod", p.pod);
    w.raw().EndObject();
  }
  w.raw().EndArray();
}

void WritePreemption(Writer& w, const std::optional<RunStatus::Preemption>& p) {
  if (!p) {
    w.Null();
    return;
  }
  w.raw().StartObject();
  w.StringMember("fleet", p->fleet);
  w.Key("nodes");
  w.StringList(p->nodes);
  w.Key("victims");
  w.StringList(p->victims);
  w.IntMember("otherVictims", p->other_victims);  // always, like every field: a merge patch replaces the record whole
  w.Key("victimUIDs");
  w.StringList(p->victim_uids);
  w.BoolMember("reclaim", p->reclaim);  // always: a merge patch of a reclaim's record by a preemption's clears it
  w.raw().EndObject();
}

// Both ends, always (a merge patch replaces the range whole); null without one.
void WriteStartRange(Writer& w, const std::optional<RunStatus::StartRange>& r) {
  if (!r) {
    w.Null();
    return;
  }
  w.raw().StartObject();
  w.Key("earliest");
  w.TimeOrNull(r->earliest);
  w.Key("latest");
  w.TimeOrNull(r->latest);
  w.raw().EndObject();
}

// Issue 47: the span of usage (heldSince, releasedAt, accountedUntil, held); `nulls` as below.
void WriteSpan(Writer& w, const RunStatus& s, bool nulls) {
  for (const auto& [key, t] : {std::pair<const char*, const std::optional<Time>*>{"heldSince", &s.held_since},
                               {"releasedAt", &s.released_at}, {"accountedUntil", &s.accounted_until}}) {
    if (!*t && !nulls) continue;
    w.Key(key);
    w.TimeOrNull(*t);
  }
  if (!s.held && !nulls) return;
  w.Key("held");
  if (!s.held) {
    w.Null();
    return;
  }
  w.raw().StartObject();
  w.StringMember("fleet", s.held->fleet);
  w.IntMember("gpu", s.held->gpus);
  w.IntMember("cpuMilli", s.held->cpu_milli);
  w.IntMember("memoryBytes", s.held->memory_bytes);
  w.raw().EndObject();
}

// Every status field; `nulls`: the empty ones as null (a merge patch), else left out.
void WriteRunStatus(Writer& w, const RunStatus& s, bool nulls) {
  auto str = [&](const char* k, std::string_view v) {
    if (v.empty() && !nulls) return;
    w.Key(k);
    w.StringOrNull(v);
  };
  auto time = [&](const char* k, const std::optional<Time>& t) {
    if (!t && !nulls) return;
    w.Key(k);
    w.TimeOrNull(t);
  };
  auto num = [&](const char* k, const std::optional<int64_t>& v) {
    if (!v && !nulls) return;
    w.Key(k);
    w.IntOrNull(v);
  };
  w.raw().StartObject();
  str("phase", PhaseName(s.phase));
  str("reason", s.reason.api());
  str("message", s.message);
  num("queuePosition", s.queue_position);
  num("effectivePriority", s.effective_priority);
  time("estimatedStartAt", s.estimated_start_at);
  if (s.estimated_start_range || nulls) {
    w.Key("estimatedStartRange");
    WriteStartRange(w, s.estimated_start_range);
  }
  str("fleet", s.fleet);
  if (!s.placement.empty() || nulls) {
    w.Key("placement");
    WritePlacement(w, s.placement);
  }
  if (!s.pod_uids.empty() || nulls) {
    w.Key("podUIDs");
    if (s.pod_uids.empty()) {
      w.Null();
    } else {
      w.StringList(s.pod_uids);
    }
  }
  time("submittedAt", s.submitted_at);
  time("scheduledAt", s.scheduled_at);
  time("startedAt", s.started_at);
  time("finishedAt", s.finished_at);
  w.IntMember("resubmissions", s.resubmissions);
  time("retryAfter", s.retry_after);
  num("retryBackoffSeconds", s.retry_backoff_seconds > 0 ? std::optional<int64_t>(s.retry_backoff_seconds) : std::nullopt);
  w.IntMember("observedGeneration", s.observed_generation);
  if (s.preemption || nulls) {
    w.Key("preemption");
    WritePreemption(w, s.preemption);
  }
  str("templateHash", s.template_hash);
  w.Key("conditions");
  io::WriteConditions(w, s.conditions);
  WriteSpan(w, s, nulls);
  w.raw().EndObject();
}

RunSpelling ReadSpelling(const json::Value& spec) {
  RunSpelling s;
  if (const json::Value* r = json::Find(spec, {"resources"}); r != nullptr && r->IsObject()) {
    s.cpu = io::ScalarText(json::Find(*r, {"cpu"}));
    s.memory = io::ScalarText(json::Find(*r, {"memory"}));
    s.gpu = io::ScalarText(json::Find(*r, {"gpu"}));
  }
  s.max_duration = io::ScalarText(json::Find(spec, {"maxDuration"}));
  s.start_timeout = io::ScalarText(json::Find(spec, {"startTimeout"}));
  s.ttl_seconds_after_finished = io::ScalarText(json::Find(spec, {"ttlSecondsAfterFinished"}));
  if (const json::Value* retry = json::Find(spec, {"retry"}); retry != nullptr && retry->IsObject()) {
    s.has_retry = true;
    s.retry_on = io::ScalarTexts(json::Find(*retry, {"onEvents"}));
    s.retry_duration = io::ScalarText(json::Find(*retry, {"duration"}));
  }
  return s;
}

}  // namespace

std::string TemplateHashText(uint64_t hash) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4) out[static_cast<size_t>(i)] = kHex[hash & 15];
  return out;
}

std::string TemplateChangedAfterPlacement(const std::string& placed_hash, const std::string& now_hash) {
  return "spec.template changed after the run was placed (placed with template " + placed_hash + ", now " + now_hash +
         "): berth runs a placed run only with the template it placed, and its Pods are to be made now; the run "
         "ends here. Create a new Run for the new template";
}

std::string TemplateTooLarge(size_t bytes) {
  return "spec.template is " + std::to_string(bytes) + " bytes as JSON; berth takes templates of at most " +
         std::to_string(kMaxTemplateBytes) + " bytes (256 KiB): put large data in a ConfigMap or Secret and mount "
         "it, or pass it with envFrom";
}

k8s::Result<Run> DecodeRun(const json::Value& obj, const RunDecodeOptions& options) {
  if (!obj.IsObject()) return k8s::Status::Error("a Run must be a JSON object");
  Run run;
  run.meta = k8s::DecodeMeta(obj, k8s::MetaKeep{.label_prefix = options.keep_meta_prefix,
                                                 .only_needed = options.only_needed_meta,
                                                 .finalizer = kRunFinalizer});
  if (run.meta.name.empty() && options.name_required) return k8s::Status::Error("a Run needs metadata.name");
  const json::Value* spec = json::Find(obj, {"spec"});
  if (spec != nullptr && spec->IsObject()) {
    DecodeRunSpec(*spec, options.kept_template_bytes, run);
    if (options.keep_spelling) run.spelling = ReadSpelling(*spec);
  } else {
    run.invalid_message = "spec is missing";
    if (options.keep_spelling) run.spelling = RunSpelling{};
  }
  if (const json::Value* st = json::Find(obj, {"status"}); st != nullptr) {
    run.status = ReadRunStatus(*st, run.status_problem);
  }
  return run;
}

Run DecodeRunLeniently(const json::Value& obj, RunDecodeOptions options) {
  options.name_required = false;
  auto run = DecodeRun(obj, options);
  return run.ok() ? std::move(run).value() : Run{};
}

k8s::Result<std::vector<Run>> DecodeRunList(std::string_view text, const RunDecodeOptions& options) {
  auto doc = json::Parse(text);
  if (!doc.ok()) return k8s::Status::Error("the run list is not JSON: " + doc.status().message());
  const json::Value* items = doc->IsObject() ? json::Find(*doc, {"items"}) : nullptr;
  if (items == nullptr || !items->IsArray()) return k8s::Status::Error("no \"items\" array in the run list");
  std::vector<Run> runs;
  runs.reserve(items->Size());
  for (const auto& v : items->GetArray()) {
    auto run = DecodeRun(v, options);
    if (run.ok()) runs.push_back(std::move(run).value());
  }
  return runs;
}

int64_t RunPriorityOf(const json::Value* obj) {
  const json::Value* p = obj != nullptr ? json::Find(*obj, {"spec", "priority"}) : nullptr;
  return p != nullptr && p->IsInt64() ? p->GetInt64() : base::kDefaultPriority;
}

RunStatus DecodeRunStatusLeniently(const json::Value& status, std::string* problem) {
  std::string p;
  RunStatus s = ReadRunStatus(status, p);
  if (problem != nullptr) *problem = std::move(p);
  return s;
}

RunStatus DecodeRunStatusText(std::string_view text) {
  if (text.empty()) return RunStatus{};
  auto doc = json::Parse(text);
  return doc.ok() ? DecodeRunStatusLeniently(*doc) : RunStatus{};
}

k8s::Result<RunStatus> DecodeRunStatus(const json::Value& status) {
  std::string problem;
  RunStatus s = ReadRunStatus(status, problem);
  if (!problem.empty()) return k8s::Status::Error(problem);
  return s;
}

std::string EncodeRunStatus(const RunStatus& status) {
  Writer w;
  WriteRunStatus(w, status, /*nulls=*/false);
  return w.Take();
}

std::string EncodeRun(const Run& run) {
  return io::EncodeObject(
      "Run", run.meta, [&](Writer& w) { WriteRunSpec(w, run.spec); },
      [&](Writer& w) { WriteRunStatus(w, run.status, /*nulls=*/false); });
}

namespace {

// A ticket's spec as berth keeps it from its workload's labels (issue 45): never spec.stop or
// spec.suspend (a user's kubectl berth stop on the ticket stays); in a patch, fleets null clears them.
void WriteTicketSpec(Writer& w, const RunSpec& s, bool patch) {
  auto& raw = w.raw();
  raw.StartObject();
  w.IntMember("priority", s.priority);
  w.IntMember("nodes", s.nodes);
  WriteResources(w, s);
  if (!s.fleets.empty()) {
    w.Key("fleets");
    w.StringList(s.fleets);
  } else if (patch) {
    w.Key("fleets");
    w.Null();
  }
  w.StringMember("maxDuration", DurationText(s.max_duration));
  w.Key("retry");
  raw.StartObject();
  w.Key("onEvents");
  raw.StartArray();
  w.String("no-capacity");
  raw.EndArray();
  w.StringMember("duration", "off");
  raw.EndObject();
  if (s.whole_instances) w.BoolMember("wholeInstances", *s.whole_instances);
  // spec.topology (issue 48): in a patch both members, null when unset (a merge patch keeps the
  // other one otherwise), and null for the whole object when neither is set.
  if (!s.topology_required.empty() || !s.topology_preferred.empty()) {
    w.Key("topology");
    raw.StartObject();
    for (const auto& [name, value] : {std::pair{"required", &s.topology_required}, std::pair{"preferred", &s.topology_preferred}}) {
      if (!value->empty()) {
        w.StringMember(name, *value);
      } else if (patch) {
        w.Key(name);
        w.Null();
      }
    }
    raw.EndObject();
  } else if (patch) {
    w.Key("topology");
    w.Null();
  }
  WriteWorkloadRef(w, s);
  raw.EndObject();
}

}  // namespace

std::string EncodeTicket(const k8s::ObjectMeta& meta, const k8s::OwnerRef& owner, const RunSpec& spec) {
  Writer w;
  auto& raw = w.raw();
  raw.StartObject();
  w.StringMember("apiVersion", "berth.dev/v1alpha1");
  w.StringMember("kind", "Run");
  w.Key("metadata");
  raw.StartObject();
  w.StringMember("name", meta.name);
  w.StringMember("namespace", meta.ns);
  if (!meta.labels.empty()) {
    w.Key("labels");
    raw.StartObject();
    for (const auto& [k, v] : meta.labels) w.StringMember(k, v);
    raw.EndObject();
  }
  if (!meta.annotations.empty()) {
    w.Key("annotations");
    raw.StartObject();
    for (const auto& [k, v] : meta.annotations) w.StringMember(k, v);
    raw.EndObject();
  }
  if (!owner.uid.empty()) {  // a Pod group's ticket has no owner (issue 45 part 3)
    w.Key("ownerReferences");
    raw.StartArray();
    raw.StartObject();
    w.StringMember("apiVersion", owner.api_version);
    w.StringMember("kind", owner.kind);
    w.StringMember("name", owner.name);
    w.StringMember("uid", owner.uid);
    w.BoolMember("controller", false);
    raw.EndObject();
    raw.EndArray();
  }
  raw.EndObject();
  w.Key("spec");
  WriteTicketSpec(w, spec, /*patch=*/false);
  raw.EndObject();
  return w.Take();
}

std::string TicketSpecPatch(const RunSpec& spec, const std::map<std::string, std::string>& annotations,
                            std::string_view resource_version) {
  Writer w;
  auto& raw = w.raw();
  raw.StartObject();
  w.Key("metadata");
  raw.StartObject();
  if (!resource_version.empty()) w.StringMember("resourceVersion", resource_version);
  w.Key("annotations");
  raw.StartObject();
  for (const auto& [k, v] : annotations) {
    if (v.empty()) {
      w.Key(k);
      w.Null();
    } else {
      w.StringMember(k, v);
    }
  }
  raw.EndObject();
  raw.EndObject();
  w.Key("spec");
  WriteTicketSpec(w, spec, /*patch=*/true);
  raw.EndObject();
  return w.Take();
}

std::string RunStatusPatch(const RunStatus& status, std::string_view resource_version) {
  return io::MergePatch(resource_version, "status", [&](Writer& w) { WriteRunStatus(w, status, /*nulls=*/true); });
}

std::string RunSpanPatch(const std::optional<Time>& released_at, const Time& accounted_until,
                         std::string_view resource_version) {
  return io::MergePatch(resource_version, "status", [&](Writer& w) {
    w.raw().StartObject();
    if (released_at) {
      w.Key("releasedAt");
      w.TimeOrNull(released_at);
    }
    w.Key("accountedUntil");
    w.TimeOrNull(accounted_until);
    w.raw().EndObject();
  });
}

std::string RunKey(const Run& r) { return k8s::ObjectKey(r.meta.ns, r.meta.name); }

bool IsPendingPhase(const std::optional<Phase>& p) { return !p || *p == Phase::kPending; }
bool IsPlacedPhase(const std::optional<Phase>& p) { return p == Phase::kScheduled || p == Phase::kRunning; }
bool IsTerminalPhase(const std::optional<Phase>& p) { return p == Phase::kSucceeded || p == Phase::kFailed; }
std::string_view PhaseName(const std::optional<Phase>& p) { return p ? ToApi(*p) : std::string_view(); }

}  // namespace berth::api::v1alpha1
