#include "reconcilers/run_types.h"

#include <charconv>
#include <functional>
#include <string_view>

#include "k8s/duration.h"
#include "k8s/informer.h"
#include "k8s/quantity.h"
#include "k8s/timefmt.h"

namespace berth::reconcilers {

namespace json = k8s::json;

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

}  // namespace

RunStatus DecodeRunStatus(const json::Value& st) {
  RunStatus s;
  if (!st.IsObject()) return s;
  s.phase = json::GetString(st, "phase");
  s.reason = json::GetString(st, "reason");
  s.message = json::GetString(st, "message");
  if (auto* v = json::Find(st, {"queuePosition"}); v != nullptr && v->IsInt64()) s.queue_position = v->GetInt64();
  if (auto* v = json::Find(st, {"effectivePriority"}); v != nullptr && v->IsInt64()) s.effective_priority = v->GetInt64();
  s.fleet = json::GetString(st, "fleet");
  if (auto* p = json::Find(st, {"placement"}); p != nullptr && p->IsArray()) {
    for (auto& e : p->GetArray()) {
      PlacementEntry pe;
      pe.rank = static_cast<int>(json::GetInt(e, "rank"));
      pe.node = json::GetString(e, "node");
      pe.blocks = static_cast<int>(json::GetInt(e, "blocks"));
      pe.pod = json::GetString(e, "pod");
      s.placement.push_back(std::move(pe));
    }
  }
  s.submitted_at = json::GetString(st, "submittedAt");
  s.scheduled_at = json::GetString(st, "scheduledAt");
  s.started_at = json::GetString(st, "startedAt");
  s.finished_at = json::GetString(st, "finishedAt");
  s.resubmissions = json::GetInt(st, "resubmissions");
  s.retry_after = json::GetString(st, "retryAfter");
  s.retry_backoff_seconds = json::GetInt(st, "retryBackoffSeconds");
  s.observed_generation = json::GetInt(st, "observedGeneration");
  if (auto* pr = json::Find(st, {"preemption"}); pr != nullptr && pr->IsObject()) {
    RunStatus::Preemption p;
    p.fleet = json::GetString(*pr, "fleet");
    auto strings = [&](const char* field, std::vector<std::string>& out) {
      if (auto* a = json::Find(*pr, {field}); a != nullptr && a->IsArray()) {
        for (auto& e : a->GetArray()) {
          if (e.IsString()) out.emplace_back(e.GetString());
        }
      }
    };
    strings("nodes", p.nodes);
    strings("victims", p.victims);
    s.preemption = std::move(p);
  }
  if (auto* c = json::Find(st, {"conditions"}); c != nullptr && c->IsArray()) {
    for (auto& e : c->GetArray()) {
      Condition cond;
      cond.type = json::GetString(e, "type");
      cond.status = json::GetString(e, "status");
      cond.reason = json::GetString(e, "reason");
      cond.message = json::GetString(e, "message");
      cond.last_transition_time = json::GetString(e, "lastTransitionTime");
      cond.observed_generation = json::GetInt(e, "observedGeneration");
      s.conditions.push_back(std::move(cond));
    }
  }
  return s;
}

namespace {

// spec.nodes, strictly: a value that does not fit (4294967297, 1e30) must not wrap or fall back
// to 1. Returns false when it is unreadable.
bool ReadNodes(const json::Value& spec, Run& run) {
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
void ReadDurations(const json::Value& spec, Run& run, std::string& err) {
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

void ReadRetry(const json::Value& spec, Run& run, std::string& err) {
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

// spec.template: at least one container, and no constraint on nodes (berth chooses the machine
// itself: a template constraint on nodes would only make the kubelet refuse the Pod on the
// machine berth chose; machines are chosen with Fleets instead).
void ReadTemplate(const json::Value& spec, Run& run, std::string& err) {
  if (const json::Value* t = json::Find(spec, {"template"}); t != nullptr) {
    std::string text = json::Serialize(*t);
    run.template_bytes = text.size();
    run.template_hash = std::hash<std::string_view>{}(text);
    if (text.size() <= kKeptTemplateBytes) run.template_json = std::move(text);
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

void DecodeRunSpec(const json::Value& spec, Run& run) {
  run.priority = json::GetInt(spec, "priority", base::kDefaultPriority);
  if (const json::Value* b = json::Find(spec, {"stop"}); b != nullptr && b->IsBool()) run.stop = b->GetBool();
  if (const json::Value* b = json::Find(spec, {"suspend"}); b != nullptr && b->IsBool()) run.suspend = b->GetBool();
  std::string& err = run.invalid_message;
  const bool nodes_readable = ReadNodes(spec, run);
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
  ReadDurations(spec, run, err);
  ReadRetry(spec, run, err);
  if (const json::Value* ttl = json::Find(spec, {"ttlSecondsAfterFinished"}); ttl != nullptr && !ttl->IsNull()) {
    if (ttl->IsInt64() && ttl->GetInt64() >= 0 && ttl->GetInt64() <= kMaxTtlSeconds) {
      run.ttl_seconds_after_finished = ttl->GetInt64();
    } else if (err.empty()) {
      err = "spec.ttlSecondsAfterFinished must be an integer from 0 to " + std::to_string(kMaxTtlSeconds);
    }
  }
  ReadTemplate(spec, run, err);
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

}  // namespace

std::string TemplateTooLarge(size_t bytes) {
  return "spec.template is " + std::to_string(bytes) + " bytes as JSON; berth takes templates of at most " +
         std::to_string(kMaxTemplateBytes) + " bytes (256 KiB): put large data in a ConfigMap or Secret and mount "
         "it, or pass it with envFrom";
}

std::shared_ptr<const Run> DecodeRun(const json::Value& obj) {
  auto run = std::make_shared<Run>();
  // A Run's own labels and annotations are read by nobody in berth (kubectl apply's
  // last-applied-configuration annotation alone is a second copy of the whole Run): none kept.
  run->meta = k8s::DecodeMeta(obj, "berth.dev/");
  if (run->meta.name.empty()) return nullptr;
  const json::Value* spec = json::Find(obj, {"spec"});
  if (spec != nullptr && spec->IsObject()) {
    DecodeRunSpec(*spec, *run);
  } else {
    run->invalid_message = "spec is missing";
  }
  if (const json::Value* st = json::Find(obj, {"status"}); st != nullptr) run->status = DecodeRunStatus(*st);
  return run;
}

std::string RunKey(const Run& r) { return k8s::ObjectKey(r.meta.ns, r.meta.name); }

bool IsPendingPhase(const std::string& p) { return p.empty() || IsPhase(p, Phase::kPending); }
bool IsPlacedPhase(const std::string& p) { return IsPhase(p, Phase::kScheduled) || IsPhase(p, Phase::kRunning); }

uint64_t RvNumber(const std::string& rv) {
  uint64_t n = 0;
  auto [end, err] = std::from_chars(rv.data(), rv.data() + rv.size(), n);
  return err == std::errc() && end == rv.data() + rv.size() ? n : 0;  // no exceptions on the hot path
}

std::optional<k8s::TimePoint> ParseStatusTime(const std::string& s) {
  if (s.empty()) return std::nullopt;
  auto t = k8s::ParseRfc3339(s);
  if (!t.ok()) return std::nullopt;
  return t.value();
}

}  // namespace berth::reconcilers
