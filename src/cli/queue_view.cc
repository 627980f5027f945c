#include "cli/queue_view.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

#include "api/v1alpha1/codec.h"
#include "cli/format.h"
#include "k8s/timefmt.h"

namespace berth::cli {

namespace api = api::v1alpha1;
using k8s::Status;

namespace {

// A run with a queue position as the queue shows it.
QueueItem ItemOf(const api::Run& run, k8s::TimePoint now, const TeamOfNamespace& team_of) {
  const api::RunStatus& st = run.status;
  QueueItem it;
  it.position = *st.queue_position;
  it.ns = run.meta.ns;
  it.name = run.meta.name;
  if (auto t = team_of.find(it.ns); t != team_of.end()) it.team = t->second;
  it.priority = run.spec.priority;
  it.effective_priority = st.effective_priority.value_or(it.priority);
  it.nodes = run.spec.nodes;
  it.fleets = run.spec.fleets;
  it.submitted_at = api::FormatTime(st.submitted_at);
  if (it.submitted_at.empty() && run.meta.created != k8s::TimePoint{}) it.submitted_at = k8s::FormatRfc3339(run.meta.created);
  if (auto t = k8s::ParseRfc3339(it.submitted_at); t.ok() && now > t.value()) {
    it.wait_seconds = std::chrono::duration_cast<std::chrono::seconds>(now - t.value()).count();
  }
  it.reason = st.reason.str();
  it.message = st.message;
  if (run.spec.workload_ref) {
    it.kind = run.spec.workload_ref->kind;
    it.workload = run.spec.workload_ref->name;
  }
  if (st.estimated_start_at) {
    it.estimated_start_at = api::FormatTime(st.estimated_start_at);
    it.starts_in_seconds = std::max<int64_t>(0, std::chrono::ceil<std::chrono::seconds>(st.estimated_start_at->point() - now).count());
    if (st.estimated_start_range) {
      auto in = [&](const api::Time& t) {
        return std::max<int64_t>(0, std::chrono::ceil<std::chrono::seconds>(t.point() - now).count());
      };
      it.earliest_start_at = api::FormatTime(st.estimated_start_range->earliest);
      it.latest_start_at = api::FormatTime(st.estimated_start_range->latest);
      it.starts_in_range_seconds = std::make_pair(in(st.estimated_start_range->earliest), in(st.estimated_start_range->latest));
    }
  }
  return it;
}

}  // namespace

TeamOfNamespace TeamsOfNamespaces(const std::vector<api::Team>& teams) {
  TeamOfNamespace team_of;
  for (const api::Team& t : teams) {
    for (const std::string& ns : t.spec.namespaces) {
      // Two Teams naming one namespace is a clash: like the controller, the older Team (creation
      // time, then name) keeps it (issue 44).
      // (not a structured binding: clang 14 does not let a lambda capture one)
      const auto emplaced = team_of.emplace(ns, t.meta.name);
      const auto it = emplaced.first;
      if (!emplaced.second) {
        auto other = std::find_if(teams.begin(), teams.end(), [&](const api::Team& o) { return o.meta.name == it->second; });
        if (other == teams.end() || t.meta.created < other->meta.created ||
            (t.meta.created == other->meta.created && t.meta.name < it->second)) {
          it->second = t.meta.name;
        }
      }
    }
  }
  return team_of;
}

k8s::Result<QueueView> QueueFromRuns(std::string_view run_list, int64_t limit, k8s::TimePoint now,
                                     const TeamOfNamespace& team_of) {
  api::RunDecodeOptions options;
  options.kept_template_bytes = 0;  // not shown
  auto runs = api::DecodeRunList(run_list, options);
  if (!runs.ok()) return runs.status();
  QueueView q;
  q.generated_at = k8s::FormatRfc3339(now);
  for (const api::Run& run : *runs) {
    if (run.status.phase != api::Phase::kPending || run.meta.deleting) continue;
    // A suspended run is out of the queue (spec.suspend, a Job's field).
    if (run.spec.suspend) continue;
    ++q.total;
    if (!run.status.queue_position || *run.status.queue_position < 1) continue;
    q.items.push_back(ItemOf(run, now, team_of));
  }
  std::sort(q.items.begin(), q.items.end(), [](const QueueItem& a, const QueueItem& b) {
    return a.position != b.position ? a.position < b.position : std::tie(a.ns, a.name) < std::tie(b.ns, b.name);
  });
  if (limit > 0 && static_cast<int64_t>(q.items.size()) > limit) q.items.resize(static_cast<size_t>(limit));
  return q;
}

k8s::Result<QueueView> DecodeQueue(std::string_view body) { return api::DecodeQueuePage(body); }

std::string QueueApiPath(const std::string& ns, int64_t limit, const std::string& continue_token) {
  std::string path = "/apis/queue.berth.dev/v1alpha1/" + (ns.empty() ? std::string() : "namespaces/" + k8s::UrlEncode(ns) + "/") + "queue";
  std::string query;
  if (limit > 0) query += (query.empty() ? "" : "&") + std::string("limit=") + std::to_string(limit);
  if (!continue_token.empty()) query += (query.empty() ? "" : "&") + std::string("continue=") + k8s::UrlEncode(continue_token);
  if (!query.empty()) path += "?" + query;
  return path;
}

std::string EtaText(const QueueItem& it) {
  if (!it.starts_in_seconds) return "unknown";
  if (*it.starts_in_seconds <= 0) return "now";
  std::string eta = "~" + HumanDuration(std::chrono::seconds(*it.starts_in_seconds));
  // Issue 47: "~40m (20m–1h30m)", the range's ends from now ("now" for an end already due).
  if (const auto& r = it.starts_in_range_seconds) {
    auto end = [](int64_t s) { return s <= 0 ? std::string("now") : HumanDuration(std::chrono::seconds(s)); };
    eta += " (" + end(r->first) + "\u2013" + end(r->second) + ")";
  }
  return eta;
}

std::string KindText(const QueueItem& it) {
  const std::string kind = it.kind.empty() ? "Run" : it.kind;
  return it.workload.empty() ? kind : kind + "/" + it.workload;
}

std::string FormatQueueTable(const QueueView& q, const QueueFormat& f) {
  std::vector<std::string> header = {"POSITION"};
  if (f.show_namespace) header.push_back("NAMESPACE");
  for (const char* h : {"NAME", "KIND", "TEAM", "PRIORITY", "EFFECTIVE", "WAITING", "ETA", "NODES"}) header.emplace_back(h);
  if (f.wide) {
    header.emplace_back("FLEETS");
    header.emplace_back("SUBMITTED");
  }
  header.emplace_back("REASON");
  header.emplace_back("MESSAGE");
  Table t(std::move(header));
  for (const auto& it : q.items) {
    std::vector<std::string> row = {std::to_string(it.position)};
    if (f.show_namespace) row.push_back(it.ns);
    row.push_back(it.name);
    row.push_back(KindText(it));
    row.push_back(it.team.empty() ? "-" : it.team);
    row.push_back(std::to_string(it.priority));
    row.push_back(std::to_string(it.effective_priority));
    row.push_back(HumanDuration(std::chrono::seconds(it.wait_seconds)));
    row.push_back(EtaText(it));
    row.push_back(std::to_string(it.nodes));
    if (f.wide) {
      std::string fleets;
      for (const auto& name : it.fleets) fleets += (fleets.empty() ? "" : ",") + name;
      row.push_back(fleets.empty() ? "<any>" : fleets);
      row.push_back(it.submitted_at.empty() ? "-" : it.submitted_at);
    }
    row.push_back(it.reason.empty() ? "-" : it.reason);
    row.push_back(it.message.empty() ? "-" : it.message);
    t.AddRow(std::move(row));
  }
  return t.Render();
}

std::string QueueItemsJson(const QueueView& q) { return PrintableJson(api::EncodeQueueItemsPretty(q.items)); }

namespace {

// One page: the request, and again while a standby answers (up to `standby_tries` in all).
k8s::Result<QueueView> FetchQueuePage(k8s::Transport& transport, const std::string& server, const std::string& path,
                                      int standby_tries) {
  const std::string where = "the queue API (APIService v1alpha1.queue.berth.dev)";
  k8s::HttpRequest req;
  req.method = "GET";
  req.path = path;
  for (int attempt = 1;; ++attempt) {
    auto r = transport.Send(req);
    if (!r.ok()) {
      // The transport's sentence names the server ("request to https://... failed: ...").
      const std::string m = r.status().message();
      return Status::Error(m.find(server) == std::string::npos ? "cannot reach the API server at " + server + ": " + m : m);
    }
    if (r->status < 200 || r->status >= 300) {
      Status api = k8s::Client::ErrorFromResponse(*r);
      // The API server's (RBAC) or berth's refusal: both are Statuses with the sentence to show.
      if (api.IsForbidden()) return Status::Error(api.message(), 403, api.reason());
      if (api.IsUnauthorized()) {
        return Status::Error("the API server did not accept the credentials (401 Unauthorized): " + api.message(), 401,
                             api.reason());
      }
      if (api.IsNotFound()) {
        return Status::Error("the API server does not serve " + where + ": is berth installed with its chart?", 404,
                             api.reason());
      }
      return Status::Error(where + " did not answer through the API server: " + api.ToString(), api.code(), api.reason());
    }
    auto q = DecodeQueue(r->body);
    if (!q.ok()) return Status::Error("the answer of " + where + " is not a queue: " + q.status().message());
    if (q->leader.value_or(true)) return q;
    // Another replica is the leader: the API server picks an endpoint per request.
    if (attempt >= standby_tries) {
      return Status::Error("only standby replicas of the berth controller answered through the API server (" +
                           std::to_string(attempt) + " tries); a standby does not compute the queue");
    }
  }
}

}  // namespace

k8s::Result<QueueView> FetchQueue(k8s::Transport& transport, const std::string& server, const std::string& ns,
                                  int64_t limit, int standby_tries) {
  constexpr int64_t kMaxPage = 1000;  // the most the controller answers at once
  QueueView all;
  std::string next;  // the continue token of the last page
  for (bool first = true;; first = false) {
    const int64_t want = limit == 0 ? 0 : std::min(kMaxPage, limit - static_cast<int64_t>(all.items.size()));
    auto page = FetchQueuePage(transport, server, QueueApiPath(ns, want, next), standby_tries);
    if (!page.ok()) return page.status();
    if (first) {
      all.leader = page->leader;
      all.generated_at = page->generated_at;
      all.total = page->total;
    }
    for (auto& it : page->items) all.items.push_back(std::move(it));
    // Positions only grow from page to page; a token that does not is not followed (no loop).
    const bool more = !page->continue_token.empty() && page->continue_token != next && !page->items.empty();
    if (!more || (limit > 0 && static_cast<int64_t>(all.items.size()) >= limit)) break;
    next = page->continue_token;
  }
  if (limit > 0 && static_cast<int64_t>(all.items.size()) > limit) all.items.resize(static_cast<size_t>(limit));
  return all;
}

}  // namespace berth::cli
