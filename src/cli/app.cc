#include "cli/app.h"

#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "api/v1alpha1/codec.h"
#include "api/v1alpha1/http_api.h"
#include "api/v1alpha1/enums.h"
#include "base/time.h"
#include "cli/command_line.h"
#include "cli/fleet_view.h"
#include "cli/format.h"
#include "cli/team_view.h"
#include "cli/usage_view.h"
#include "cli/logs.h"
#include "cli/manifests.h"
#include "cli/priority.h"
#include "k8s/workload_objects.h"
#include "k8s/objects.h"
#include "workloads/job.h"
#include "workloads/pod_group.h"
#include "cli/queue_view.h"
#include "cli/run_view.h"
#include "controller/dashboard_api.h"
#include "controller/http_server.h"
#include "reconcilers/objects/namespace_policy.h"
#include "k8s/client.h"
#include "k8s/config.h"
#include "k8s/core_types.h"
#include "k8s/transport.h"
#include "runops/run_control.h"

extern char** environ;

namespace berth::cli {
namespace {

namespace api = api::v1alpha1;
using k8s::Status;

// How often `priority` asks whether the controller reflected the change (--wait: how long).
constexpr std::chrono::milliseconds kObservePoll(100);
// How many times `queue` asks again while a standby replica answers. The chart's queue API Service
// selects the leader's Pod alone (docs/install.md, "The queue API"); a standby answers only where
// the APIService names a Service over every replica (an older chart, a hand-made install), where
// the API server's proxy picks an endpoint per request: with two replicas, 16 tries all miss the
// leader once in 65,536.
constexpr int kStandbyTries = 16;
// How long `stop`, `suspend` and `resume` wait for the controller to show the change.
constexpr std::chrono::milliseconds kControlTimeout(5000);

int Fail(std::ostream& err, const std::string& sentence) {
  err << "error: " << Printable(sentence, TextLines::kMany) << "\n";  // it may quote the API
  return 1;
}

// kubectl's rule: --kubeconfig, else $KUBECONFIG, else ~/.kube/config; inside a Pod with none of
// these, the Pod's service account.
k8s::Result<k8s::ClientConfig> LoadConfig(const CommandLine& cl) {
  auto cfg = k8s::LoadDefaultConfig(cl.kubeconfig, cl.context, /*allow_in_cluster=*/false);
  if (cfg.ok()) return cfg;
  const char* env = std::getenv("KUBECONFIG");
  const bool nothing_named = cl.kubeconfig.empty() && cl.context.empty() && (env == nullptr || *env == '\0');
  if (nothing_named && std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) {
    auto in_cluster = k8s::InClusterConfig();
    if (in_cluster.ok()) return in_cluster;
  }
  return cfg;
}

std::string Namespace(const CommandLine& cl, const k8s::ClientConfig& cfg) {
  return cl.ns.empty() ? cfg.default_namespace : cl.ns;
}

// What a command on one run starts with: the configuration (LoadConfig), the namespace (-n, else
// the context's), a client that retries twice and, with `read_run`, the run named first on the
// command line. An error is the sentence to Fail with.
struct RunSession {
  std::string ns;
  std::string name;
  std::unique_ptr<k8s::Client> client;
  api::Run run;  // with `read_run` (its spec's values as written: RunDecodeOptions::keep_spelling)
};

k8s::Result<RunSession> OpenRun(const CommandLine& cl, bool read_run) {
  auto cfg = LoadConfig(cl);
  if (!cfg.ok()) return cfg.status();
  RunSession s;
  s.ns = Namespace(cl, *cfg);
  s.name = cl.positionals[0];
  s.client = std::make_unique<k8s::Client>(*cfg);
  s.client->SetMaxRetries(2);
  if (read_run) {
    auto run = s.client->Get(k8s::resources::kRuns.Path(s.ns, s.name));
    if (!run.ok()) return Status::Error(RunErrorSentence(run.status(), s.ns, s.name));
    api::RunDecodeOptions options;
    options.keep_spelling = true;
    s.run = api::DecodeRunLeniently(*run, options);
  }
  return s;
}

// ---- apply ----

k8s::Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("cannot read " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Source {
  std::string name, text;
};

k8s::Result<std::vector<Source>> ReadSources(const std::vector<std::string>& files, std::istream& in) {
  std::vector<Source> out;
  bool stdin_read = false;
  for (const auto& f : files) {
    if (f == "-") {
      if (stdin_read) return Status::Error("-f - can be given only once");
      stdin_read = true;
      std::stringstream ss;
      ss << in.rdbuf();
      out.push_back({"stdin", ss.str()});
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(f, ec)) {
      std::vector<std::string> names;
      for (const auto& e : std::filesystem::directory_iterator(f, ec)) {
        const std::string ext = e.path().extension().string();
        if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) names.push_back(e.path().string());
      }
      if (ec) return Status::Error("cannot list " + f + ": " + ec.message());
      std::sort(names.begin(), names.end());
      for (const auto& n : names) {
        auto text = ReadFile(n);
        if (!text.ok()) return text.status();
        out.push_back({n, std::move(text).value()});
      }
      continue;
    }
    if (!std::filesystem::exists(f, ec)) return Status::Error("file " + f + " does not exist");
    auto text = ReadFile(f);
    if (!text.ok()) return text.status();
    out.push_back({f, std::move(text).value()});
  }
  return out;
}

// A Run of the manifests that exists and has ended (Succeeded or Failed).
struct EndedRun {
  std::string ns, name, uid, phase, reason;
  std::string Words() const { return Printable(phase + (reason.empty() || reason == phase ? "" : ", " + reason)); }
};

k8s::Result<std::vector<EndedRun>> FindEndedRuns(k8s::Client& client, const std::string& default_ns,
                                                 const std::vector<NamedRun>& runs) {
  std::vector<EndedRun> ended;
  for (const auto& r : runs) {
    const std::string ns = r.ns.empty() ? default_ns : r.ns;
    auto got = client.Get(k8s::resources::kRuns.Path(ns, r.name));
    if (!got.ok()) {
      if (got.status().IsNotFound()) continue;
      return Status::Error(RunErrorSentence(got.status(), ns, r.name));
    }
    const api::Run run = api::DecodeRunLeniently(*got);
    if (!api::IsTerminalPhase(run.status.phase)) continue;
    if (run.meta.deleting) continue;  // already going
    ended.push_back({ns, r.name, run.meta.uid, std::string(api::PhaseName(run.status.phase)), run.status.reason.str()});
  }
  return ended;
}

// Deletes an ended run (guarded by its uid) and waits until it is gone: berth-controller removes
// its finalizer once the run's Pods are deleted.
Status DeleteEndedRun(k8s::Client& client, const EndedRun& run, std::chrono::seconds timeout) {
  const std::string path = k8s::resources::kRuns.Path(run.ns, run.name);
  k8s::DeleteOptions o;
  o.precondition_uid = run.uid;
  Status s = client.Delete(path, o);
  if (!s.ok() && !s.IsNotFound() && !s.IsConflict()) return Status::Error(RunErrorSentence(s, run.ns, run.name));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto got = client.Get(path);
    if (!got.ok() && got.status().IsNotFound()) return Status();
    if (got.ok() && k8s::DecodeMeta(*got).uid != run.uid) return Status();
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Error("run " + run.ns + "/" + run.name + " was deleted to be submitted again but is still there after " +
                           std::to_string(timeout.count()) +
                           " s (berth-controller removes its finalizer: is it running?); nothing was applied");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// Every document of every source, as one stream for kubectl apply.
k8s::Result<PreparedManifests> GatherManifests(const CommandLine& cl, std::istream& in) {
  auto sources = ReadSources(cl.files, in);
  if (!sources.ok()) return sources.status();
  PreparedManifests all;
  for (const auto& s : *sources) {
    auto prepared = PrepareManifests(s.text, s.name, cl.queueing);
    if (!prepared.ok()) return prepared.status();
    if (prepared->documents == 0) continue;
    if (all.documents > 0) all.yaml += "---\n";
    all.yaml += prepared->yaml;
    all.documents += prepared->documents;
    all.runs.insert(all.runs.end(), prepared->runs.begin(), prepared->runs.end());
    all.named_runs.insert(all.named_runs.end(), prepared->named_runs.begin(), prepared->named_runs.end());
  }
  if (all.documents == 0) return Status::Error("no objects passed to apply");
  return all;
}

// Applying an ended run means "run it again": it is deleted first, so kubectl apply creates it.
// The ended runs among `named` (deleted unless --no-resubmit or --dry-run).
k8s::Result<std::vector<EndedRun>> ResubmitEnded(const CommandLine& cl, const std::vector<NamedRun>& named,
                                                 std::ostream& out) {
  if (named.empty()) return std::vector<EndedRun>();
  auto cfg = LoadConfig(cl);
  if (!cfg.ok()) return cfg.status();
  k8s::Client client(*cfg);
  client.SetMaxRetries(2);
  auto found = FindEndedRuns(client, Namespace(cl, *cfg), named);
  if (!found.ok()) return found.status();
  if (!cl.no_resubmit && cl.dry_run.empty()) {
    for (const auto& e : *found) {
      Status s = DeleteEndedRun(client, e, std::chrono::seconds(60));
      if (!s.ok()) return s;
      out << "run/" << e.name << ": had ended (" << e.Words() << "); deleted to submit it again\n";
    }
  }
  return found;
}

std::vector<std::string> KubectlApplyArgs(const CommandLine& cl) {
  std::vector<std::string> argv = {"kubectl"};
  if (!cl.kubeconfig.empty()) argv.insert(argv.end(), {"--kubeconfig", cl.kubeconfig});
  if (!cl.context.empty()) argv.insert(argv.end(), {"--context", cl.context});
  if (!cl.ns.empty()) argv.insert(argv.end(), {"--namespace", cl.ns});
  argv.insert(argv.end(), {"apply", "-f", "-"});
  if (!cl.dry_run.empty()) argv.push_back("--dry-run=" + cl.dry_run);
  return argv;
}

// What became of the ended runs and of queueing, once kubectl apply succeeded.
void ReportApplied(const CommandLine& cl, const std::vector<EndedRun>& ended, const std::vector<RunQueueing>& runs,
                   std::ostream& out) {
  for (const auto& e : ended) {
    if (cl.no_resubmit) {
      out << "run/" << e.name << ": has ended (" << e.Words()
          << "); not submitted again (--no-resubmit): spec changes do not run it\n";
    } else if (!cl.dry_run.empty()) {
      out << "run/" << e.name << ": has ended (" << e.Words() << "); would be deleted and submitted again\n";
    }
  }
  for (const auto& r : runs) {
    if (r.queued) {
      out << "run/" << r.name << ": queueing on (retry on " << r.on_events << ", duration " << r.duration << ")\n";
    } else if (!r.on_events.empty()) {
      out << "run/" << r.name << ": not queueing: the file's retry.onEvents (" << r.on_events
          << ") has no no-capacity, so the run fails when it does not fit\n";
    } else {
      out << "run/" << r.name << ": not queueing: the file's spec.retry is not a mapping\n";
    }
  }
}

int Apply(const CommandLine& cl, std::istream& in, std::ostream& out, std::ostream& err) {
  auto manifests = GatherManifests(cl, in);
  if (!manifests.ok()) return Fail(err, manifests.status().message());
  auto ended = ResubmitEnded(cl, manifests->named_runs, out);
  if (!ended.ok()) return Fail(err, ended.status().message());
  out.flush();
  std::string error;
  int code = RunPassThrough(KubectlApplyArgs(cl), manifests->yaml, &error);
  if (code < 0) return Fail(err, "cannot run kubectl (kubectl berth apply hands the manifests to kubectl apply): " + error);
  if (code != 0) return code;
  ReportApplied(cl, *ended, manifests->runs, out);
  return 0;
}

// ---- queue ----

// The Teams' namespaces, for the fallback queue's TEAM column: none when Teams cannot be listed
// (no CRD, no `list` on teams): the column then shows "-".
TeamOfNamespace TeamsForQueue(const k8s::ClientConfig& cfg) {
  k8s::Client client(cfg);
  client.SetMaxRetries(1);
  auto list = client.List(k8s::resources::kTeams.Path());
  if (!list.ok()) return {};
  std::vector<api::Team> teams;
  for (const auto& item : list->items) {
    if (auto t = api::DecodeTeam(item); t.ok()) teams.push_back(std::move(t.value()));
  }
  return TeamsOfNamespaces(teams);
}

// Lists the runs (of `ns`, or all) and reads the queue from their status.
k8s::Result<QueueView> QueueFromRunStatus(k8s::Transport& transport, const k8s::ClientConfig& cfg,
                                         const std::string& ns, int64_t limit) {
  k8s::HttpRequest req;
  req.method = "GET";
  req.path = ns.empty() ? "/apis/berth.dev/v1alpha1/runs"
                        : "/apis/berth.dev/v1alpha1/namespaces/" + k8s::UrlEncode(ns) + "/runs";
  auto r = transport.Send(req);
  if (!r.ok()) return r.status();
  if (r->status < 200 || r->status >= 300) {
    k8s::Status api = k8s::Client::ErrorFromResponse(*r);
    return Status::Error("cannot list runs at " + cfg.server + ": " + api.ToString(), api.code(), api.reason());
  }
  return QueueFromRuns(r->body, limit, k8s::SystemClock().Now(), TeamsForQueue(cfg));
}

int Queue(const CommandLine& cl, std::ostream& out, std::ostream& err) {
  auto cfg = LoadConfig(cl);
  if (!cfg.ok()) return Fail(err, cfg.status().message());
  const std::string ns = cl.all_namespaces ? std::string() : Namespace(cl, *cfg);
  auto transport = k8s::NewHttpTransport(*cfg);
  // berth's aggregated queue API, with the user's own credentials (they go to the API server only;
  // berth shows the runs the user may list: issue 44, 4).
  auto q = FetchQueue(*transport, cfg->server, ns, cl.limit, kStandbyTries);
  if (!q.ok() && q.status().code() != 401 && q.status().code() != 403) {
    // The queue API is not served (no APIService, as with hack/local-up.sh --host-controller) or the
    // API server cannot reach berth: the runs' status is the next best source.
    auto fallback = QueueFromRunStatus(*transport, *cfg, ns, cl.limit);
    if (fallback.ok()) {
      err << "note: " << Printable(q.status().message(), TextLines::kMany) << "\nnote: showing the queue as the runs' status shows it instead "
          << "(status.queuePosition, kept for the first 100 places and refreshed within seconds)\n";
      q = std::move(fallback);
    }
  }
  if (!q.ok()) return Fail(err, q.status().message());
  if (cl.output == "json") {
    out << QueueItemsJson(*q);
    return 0;
  }
  if (q->items.empty()) {
    err << (ns.empty() ? std::string("No pending runs.") : "No pending runs in namespace " + ns + ".") << "\n";
    return 0;
  }
  out << FormatQueueTable(*q, QueueFormat{cl.all_namespaces, cl.output == "wide"});
  return 0;
}

// ---- priority ----

// `kubectl berth priority KIND/NAME VALUE` (issue 45): a queued workload's priority is its label
// berth.dev/priority and its ticket follows it: job/, jobset/ and pod/ patch that object's label,
// podgroup/NAME every Pod of the group (the ticket reads its first Pod's). Waits as for a run, on
// the ticket. `noun` is the prefix before the slash.
k8s::Status PatchWorkloadPriority(k8s::Client& client, const std::string& ns, const std::string& noun,
                                  const std::string& name, int value) {
  const std::string patch = k8s::LabelPatch(workloads::kPriorityLabel, std::to_string(value));
  const std::string what = noun + " \"" + name + "\" in namespace \"" + ns + "\"";
  auto one = [&](const std::string& path, const std::string& label) -> k8s::Status {
    auto patched = client.MergePatch(path, patch);
    if (patched.ok()) return k8s::Status();
    const k8s::Status s = patched.status();
    if (s.IsNotFound()) return k8s::Status::Error(label + " not found", 404, "NotFound");
    return k8s::Status::Error(label + ": " + s.message(), s.code(), s.reason());
  };
  if (noun == "pod") return one(k8s::resources::kPods.Path(ns, name), what);
  if (noun == "podgroup") {
    k8s::ListOptions opts;
    opts.label_selector = std::string(workloads::kPodGroupLabel) + "=" + name;
    auto pods = client.List(k8s::resources::kPods.Path(ns), opts);
    if (!pods.ok()) return k8s::Status::Error(what + ": " + pods.status().message(), pods.status().code(), pods.status().reason());
    if (pods->items.empty()) return k8s::Status::Error(what + " has no Pods (label " + workloads::kPodGroupLabel + "=" + name + ")", 404, "NotFound");
    for (const auto& item : pods->items) {
      const std::string pod = k8s::DecodeMeta(item).name;
      if (k8s::Status s = one(k8s::resources::kPods.Path(ns, pod), "pod \"" + pod + "\" of " + what); !s.ok() && !s.IsNotFound()) return s;
    }
    return k8s::Status();
  }
  const workloads::WorkloadKind* kind = workloads::KindOf(noun == "job" ? "Job" : "JobSet");
  return one(kind->Resource().Path(ns, name), what);
}

int WorkloadPriority(const CommandLine& cl, const std::string& noun, const std::string& name, int value,
                     std::ostream& out, std::ostream& err) {
  auto session = OpenRun(cl, false);
  if (!session.ok()) return Fail(err, session.status().message());
  const std::string& ns = session->ns;
  k8s::Client& client = *session->client;
  if (k8s::Status s = PatchWorkloadPriority(client, ns, noun, name, value); !s.ok()) return Fail(err, s.message());
  out << noun << "/" << name << " label " << workloads::kPriorityLabel << "=" << value << "\n";
  out.flush();
  const std::string ticket = workloads::TicketName(noun, name);
  const auto deadline = std::chrono::steady_clock::now() + cl.wait;
  while (true) {
    auto run = client.Get(k8s::resources::kRuns.Path(ns, ticket));
    if (run.ok()) {
      const api::Run now = api::DecodeRunLeniently(*run);
      if (now.spec.priority == value && (Observed(now, now.meta.generation) || !Queued(now))) {
        out << "run/" << ticket << ": " << Printable(DescribePlace(now)) << "\n";
        if (std::string note = CapNote(now); !note.empty()) out << "run/" << ticket << ": " << Printable(note) << "\n";
        return 0;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(kObservePoll);
  }
  out << "run/" << ticket << ": the berth controller has not taken the change into account within "
      << base::FormatDuration(cl.wait) << " (is it running? is the " << noun << " labelled berth.dev/queue?); kubectl berth queue shows the queue\n";
  return 0;
}

int Priority(const CommandLine& cl, std::ostream& out, std::ostream& err) {
  const std::string& name = cl.positionals[0];
  auto value = ParsePriority(cl.positionals[1]);
  if (!value.ok()) return Fail(err, value.status().message());
  // A workload's ticket (issue 45): its label, not the ticket's spec.
  for (const char* noun : {"job", "jobset", "pod", "podgroup"}) {
    const std::string prefix = std::string(noun) + "/";
    if (name.rfind(prefix, 0) == 0) return WorkloadPriority(cl, noun, name.substr(prefix.size()), *value, out, err);
  }
  auto session = OpenRun(cl, false);
  if (!session.ok()) return Fail(err, session.status().message());
  const std::string& ns = session->ns;
  k8s::Client& client = *session->client;
  auto change = ChangePriority(client, ns, name, *value);
  if (!change.ok()) return Fail(err, change.status().message());
  if (change->changed) {
    out << "run/" << name << " priority " << change->old_priority << " -> " << change->new_priority << "\n";
  } else {
    out << "run/" << name << " priority " << change->new_priority << " (unchanged)\n";
  }
  out.flush();

  const auto deadline = std::chrono::steady_clock::now() + cl.wait;
  while (true) {
    auto run = client.Get(k8s::resources::kRuns.Path(ns, name));
    if (!run.ok()) return Fail(err, RunErrorSentence(run.status(), ns, name));
    const api::Run now = api::DecodeRunLeniently(*run);
    if (Observed(now, change->generation) || !Queued(now)) {
      out << "run/" << name << ": " << Printable(DescribePlace(now)) << "\n";
      if (std::string note = CapNote(now); !note.empty()) out << "run/" << name << ": " << Printable(note) << "\n";
      return 0;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(kObservePoll);
  }
  out << "run/" << name << ": the berth controller has not taken the change into account within "
      << base::FormatDuration(cl.wait) << " (is it running? --wait waits longer); kubectl berth queue shows the queue\n";
  return 0;
}

// ---- fleets ----

// Every object of one of berth's cluster-scoped kinds at `path`, read with the user's kubeconfig;
// errors are sentences for the user (`not_served`: the API server does not serve the kind).
k8s::Result<k8s::ListResult> ListClusterKind(const CommandLine& cl, const std::string& path, const std::string& not_served) {
  auto cfg = LoadConfig(cl);
  if (!cfg.ok()) return cfg.status();
  k8s::Client client(*cfg);
  client.SetMaxRetries(2);
  auto list = client.List(path);
  if (list.ok()) return list;
  const Status s = list.status();
  if (s.IsNotFound()) return Status::Error(not_served);
  if (s.IsForbidden() || s.code() == 0) return Status::Error(s.message());
  if (s.IsUnauthorized()) return Status::Error("the API server did not accept the credentials (401 Unauthorized): " + s.message());
  return Status::Error(s.ToString());
}

int Fleets(const CommandLine& cl, std::ostream& out, std::ostream& err) {
  auto list = ListClusterKind(cl, k8s::resources::kFleets.Path(),
                              "this cluster does not serve fleets.berth.dev: berth's CRDs are not installed");
  if (!list.ok()) return Fail(err, list.status().message());
  if (list->items.empty()) {
    err << "No fleets found.\n";
    return 0;
  }
  std::vector<FleetSummary> fleets;
  for (const auto& item : list->items) fleets.push_back(DecodeFleetSummary(item));
  std::sort(fleets.begin(), fleets.end(), [](const FleetSummary& a, const FleetSummary& b) { return a.name < b.name; });
  out << FormatFleets(fleets, k8s::SystemClock().Now(), cl.output == "wide");
  return 0;
}

// ---- teams ----

int Teams(const CommandLine& cl, std::ostream& out, std::ostream& err) {
  auto list = ListClusterKind(cl, k8s::resources::kTeams.Path(),
                              "this cluster does not serve teams.berth.dev: berth's Team CRD is not installed");
  if (!list.ok()) return Fail(err, list.status().message());
  std::vector<api::Team> teams;
  for (const auto& item : list->items) {
    auto t = api::DecodeTeam(item);
    if (t.ok()) teams.push_back(std::move(t.value()));
  }
  if (teams.empty()) {
    err << "No teams found.\n";
    return 0;
  }
  out << FormatTeams(std::move(teams));
  return 0;
}

// ---- describe ----

int Describe(const CommandLine& cl, std::ostream& out, std::ostream& err) {
  auto session = OpenRun(cl, true);
  if (!session.ok()) return Fail(err, session.status().message());
  const auto& [ns, name, owner, run] = *session;
  k8s::Client& client = *owner;
  // The Pods and Events are shown when the caller may read them; a note says when not.
  std::vector<std::string> notes;
  k8s::ListOptions pods_opts;
  pods_opts.label_selector = "berth.dev/run=" + name;
  auto pods = client.List(k8s::resources::kPods.Path(ns), pods_opts);
  if (!pods.ok()) notes.push_back("cannot list the run's Pods: " + pods.status().message());
  k8s::ListOptions events_opts;
  events_opts.field_selector = "involvedObject.uid=" + run.meta.uid;
  auto events = client.List(k8s::resources::kEvents.Path(ns), events_opts);
  if (!events.ok()) notes.push_back("cannot list the run's Events: " + events.status().message());
  std::vector<k8s::PodView> pod_views;
  std::vector<k8s::EventView> event_views;
  if (pods.ok()) {
    for (const auto& p : pods->items) pod_views.push_back(k8s::DecodePodView(p));
  }
  if (events.ok()) {
    for (const auto& e : events->items) event_views.push_back(k8s::DecodeEventView(e));
  }
  out << FormatRunDescription(run, pod_views, std::move(event_views), k8s::SystemClock().Now(),
                              runops::PlacementDomain(client, run, notes));  // Printable
  for (const auto& n : notes) err << "note: " << Printable(n, TextLines::kMany) << "\n";
  return 0;
}

// ---- stop, suspend, resume ----

int ControlRun(const CommandLine& cl, runops::Control c, std::ostream& out, std::ostream& err) {
  const std::string& name = cl.positionals[0];
  auto session = OpenRun(cl, false);
  if (!session.ok()) return Fail(err, session.status().message());
  const std::string& ns = session->ns;
  k8s::Client& client = *session->client;
  auto change = runops::ApplyControl(client, ns, name, c);
  if (!change.ok()) return Fail(err, change.status().message());
  const std::string was = change->phase.empty() ? std::string("not yet seen by berth-controller") : "was " + change->phase;
  out << "run/" << name << " " << (c == runops::Control::kStop ? "stop" : c == runops::Control::kSuspend ? "suspension" : "resumption")
      << " requested (" << was << ")\n";
  out.flush();
  const auto deadline = std::chrono::steady_clock::now() + kControlTimeout;
  while (true) {
    auto run = client.Get(k8s::resources::kRuns.Path(ns, name));
    if (!run.ok()) return Fail(err, RunErrorSentence(run.status(), ns, name));
    const api::Run now = api::DecodeRunLeniently(*run);
    if (runops::ControlDone(c, now, change->generation)) {
      out << "run/" << name << ": " << Printable(runops::StatusLine(now)) << "\n";
      return 0;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(kObservePoll);
  }
  out << "run/" << name << ": berth-controller has not shown the change within " << kControlTimeout.count() / 1000
      << " s (is it running?); kubectl berth describe " << name << " shows the run\n";
  return 0;
}

// ---- logs ----

int Logs(const CommandLine& cl, std::ostream& out, std::ostream& err) {
  auto session = OpenRun(cl, true);
  if (!session.ok()) return Fail(err, session.status().message());
  const auto& [ns, name, owner, run] = *session;
  k8s::Client& client = *owner;
  k8s::ListOptions opts;
  opts.label_selector = "berth.dev/run=" + name;
  auto pods = client.List(k8s::resources::kPods.Path(ns), opts);
  if (!pods.ok()) return Fail(err, "cannot list the run's Pods: " + pods.status().message());
  std::vector<k8s::PodView> views;
  for (const auto& p : pods->items) views.push_back(k8s::DecodePodView(p));
  auto sel = runops::SelectLogTargets(run, views, cl.rank);
  if (!sel.ok()) return Fail(err, sel.status().message());
  if (!sel->note.empty()) err << "note: " << sel->note << "\n";
  const bool ok = cl.follow ? FollowLogs(*client.transport(), ns, sel->targets, out, err)
                            : PrintLogs(*client.transport(), ns, sel->targets, out, err);
  return ok ? 0 : 1;
}

// ---- dashboard ----

// GET `path` with the user's own transport; the body of a 2xx, else {"error": the API's sentence}
// with its status (the dashboard page shows it).
controller::HttpReply Forward(k8s::Transport& transport, const std::string& path) {
  k8s::HttpRequest get;
  get.method = "GET";
  get.path = path;
  auto r = transport.Send(get);
  auto error = [](int code, const std::string& m) {
    return controller::HttpReply{code, "application/json", R"({"error":)" + k8s::json::Quote(m) + "}", {}};
  };
  if (!r.ok()) return error(502, "cannot reach the API server: " + r.status().message());
  if (r->status < 200 || r->status >= 300) {
    const Status api = k8s::Client::ErrorFromResponse(*r);
    return error(r->status, api.message());
  }
  return controller::HttpReply{200, "application/json", r->body, {}};
}

// ---- usage (issue 47) ----

int ShowUsage(const CommandLine& cl, std::ostream& out, std::ostream& err) {
  auto cfg = LoadConfig(cl);
  if (!cfg.ok()) return Fail(err, cfg.status().message());
  auto transport = k8s::NewHttpTransport(*cfg);
  // The queue API with the user's own credentials: berth shows a user their own row unless they
  // may read every user's (docs/concepts.md).
  const controller::HttpReply got = Forward(
      *transport, "/apis/queue.berth.dev/v1alpha1/usage?since=" + k8s::UrlEncode(cl.since) + "&by=" + k8s::UrlEncode(cl.by));
  if (got.status != 200) {
    return Fail(err, "cannot read the usage from berth's queue API: " + api::ErrorSentenceOf(got.body));
  }
  if (cl.output == "json") {
    out << PrintableJson(got.body) << "\n";
    return 0;
  }
  auto table = FormatUsage(got.body);
  if (!table.ok()) return Fail(err, table.status().message());
  out << *table;
  return 0;
}

int Dashboard(const CommandLine& cl, std::ostream& out, std::ostream& err) {
  auto cfg = LoadConfig(cl);
  if (!cfg.ok()) return Fail(err, cfg.status().message());
  auto client = std::make_shared<k8s::Client>(*cfg);
  client->SetMaxRetries(1);
  k8s::Transport& transport = *client->transport();
  controller::LocalSources sources;
  sources.queue = [&transport](const controller::HttpRequestView& req) {
    controller::QueueQuery q;
    std::string message;
    if (controller::ParseQueueQuery(req, q, message) != 0) {
      return controller::HttpReply{400, "application/json", R"({"error":)" + k8s::json::Quote(message) + "}", {}};
    }
    return Forward(transport, QueueApiPath(q.ns, static_cast<int64_t>(q.limit),
                                           q.after > 0 ? std::to_string(q.after) : std::string()));
  };
  sources.fleets = [&transport] { return Forward(transport, "/apis/queue.berth.dev/v1alpha1/fleets"); };
  sources.teams = [&transport] { return Forward(transport, "/apis/queue.berth.dev/v1alpha1/teams"); };
  sources.usage = [&transport](const controller::UsageQuery& q) {  // issue 47: the Usage page
    return Forward(transport, "/apis/queue.berth.dev/v1alpha1/usage?since=" + k8s::UrlEncode(q.since) + "&by=" + q.by);
  };
  sources.queue_history = [&transport] { return Forward(transport, "/apis/queue.berth.dev/v1alpha1/usage/queue"); };
  sources.cap_of = [client](const std::string& ns) -> std::optional<reconcilers::PriorityCap> {
    auto n = client->Get(k8s::resources::kNamespaces.Path("", ns));
    if (!n.ok()) return std::nullopt;  // not readable with the user's rights: no note
    auto info = reconcilers::DecodeNamespace(*n);
    return info ? reconcilers::ParsePriorityCap(info->labels) : std::nullopt;
  };
  controller::DashboardApi api(client, std::move(sources));
  controller::HttpServer server("127.0.0.1:" + std::to_string(cl.port), 4);
  api.Register(server);
  // Only this address as the Host: a page of another site that points a DNS name of its own at
  // 127.0.0.1 (DNS rebinding) would otherwise act with the user's credentials.
  int port = 0;
  server.SetGuard([&port](const controller::HttpRequestView& req) -> std::optional<controller::HttpReply> {
    const std::string host = req.Header("host"), p = std::to_string(port);
    if (host == "127.0.0.1:" + p || host == "localhost:" + p) return std::nullopt;
    return controller::HttpReply{403, "text/plain; charset=utf-8",
                                 "kubectl berth dashboard answers only http://127.0.0.1:" + p + "/ (Host \"" + host + "\")\n", {}};
  });
  // SIGINT and SIGTERM end the command: blocked here (every thread the server starts inherits
  // that) and waited for below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  if (Status s = server.Start(); !s.ok()) return Fail(err, s.message());
  port = server.port();
  out << "Serving the berth dashboard at http://127.0.0.1:" << port << "/ with your kubeconfig's credentials for "
      << cfg->server << " (only on this machine; Ctrl-C to stop)\n";
  out.flush();
  int sig = 0;
  sigwait(&stop, &sig);
  server.Stop();
  return 0;
}

}  // namespace

int RunPassThrough(const std::vector<std::string>& argv, const std::string& input, std::string* error) {
  int in_pipe[2];
  if (pipe(in_pipe) != 0) {
    *error = std::strerror(errno);
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_addclose(&fa, in_pipe[0]);
  posix_spawn_file_actions_addclose(&fa, in_pipe[1]);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in_pipe[0]);
  if (rc != 0) {
    close(in_pipe[1]);
    *error = argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  // The child may exit before reading everything (a bad flag): no SIGPIPE for us then.
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &previous);
  size_t off = 0;
  while (off < input.size()) {
    ssize_t n = write(in_pipe[1], input.data() + off, input.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  close(in_pipe[1]);
  sigaction(SIGPIPE, &previous, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

int Main(const std::vector<std::string>& args, std::istream& in, std::ostream& out, std::ostream& err) {
  auto cl = ParseCommandLine(args);
  if (!cl.ok()) return Fail(err, cl.status().message());
  if (cl->help) {
    out << Usage(cl->help_topic);
    return 0;
  }
  switch (cl->command) {
    case Command::kApply: return Apply(*cl, in, out, err);
    case Command::kQueue: return Queue(*cl, out, err);
    case Command::kPriority: return Priority(*cl, out, err);
    case Command::kFleets: return Fleets(*cl, out, err);
    case Command::kTeams: return Teams(*cl, out, err);
    case Command::kDescribe: return Describe(*cl, out, err);
    case Command::kStop: return ControlRun(*cl, runops::Control::kStop, out, err);
    case Command::kSuspend: return ControlRun(*cl, runops::Control::kSuspend, out, err);
    case Command::kResume: return ControlRun(*cl, runops::Control::kResume, out, err);
    case Command::kLogs: return Logs(*cl, out, err);
    case Command::kDashboard: return Dashboard(*cl, out, err);
    case Command::kUsage: return ShowUsage(*cl, out, err);
    case Command::kNone:
    case Command::kHelp: break;
  }
  out << Usage(Command::kNone);
  return 0;
}

}  // namespace berth::cli
