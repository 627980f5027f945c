#include "reconcilers/state/engine_caches.h"

#include <algorithm>

#include "k8s/workload_objects.h"
#include "reconcilers/state/cache_indexes.h"
#include "reconcilers/writers/pod_builder.h"
#include "reconcilers/objects/pod_group_tickets.h"
#include "workloads/job.h"

namespace berth::reconcilers {

using k8s::resources::kFleets;
using k8s::resources::kPods;
using k8s::resources::kRuns;

namespace {

// A Pod as the engine keeps it: of its labels and annotations only berth's (the run, rank and
// attempt labels, the blocks annotation) and those that say a workload's (workloads::kPodLabelsKept);
// a template's own may be large and berth reads none of them.
// Of its ownerReferences only the controller (issue 44: a tenant's long lists cost nothing).
// A Job's Pod waiting on berth's gate keeps what pinning it needs (k8s::PinSource), so that the
// pin comes from this cache (TicketWrites::Release), not from a LIST per Job.
std::shared_ptr<const k8s::Pod> DecodeCachedPod(const k8s::json::Value& obj) {
  auto pod = k8s::DecodePodKeeping(
      obj, k8s::MetaKeep{.label_prefix = "berth.dev/", .also_label_prefix = workloads::kPodLabelsKept, .only_needed = true});
  if (!pod) return pod;
  std::string source = k8s::PinSource(obj, workloads::kAdmissionGate);
  if (source.empty()) return pod;
  auto kept = std::make_shared<k8s::Pod>(*pod);
  kept->pin_source = std::move(source);
  return kept;
}

}  // namespace

void EngineCaches::MakePodInformers(const k8s::ClientPtr& client) {
  pods_ = std::make_unique<k8s::Informer<k8s::Pod>>(
      client, kPods.Path(), DecodeCachedPod, [](const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); },
      "pods");
  pods_->SetLabelSelector(kRunLabel);  // only berth's pods
  for (auto& [name, fn] : RunPodIndexes()) pods_->AddIndex(name, std::move(fn));  // cache_indexes.h
  others_ = std::make_unique<k8s::Informer<k8s::Pod>>(
      client, kPods.Path(), DecodeCachedPod, [](const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); },
      "other-pods");
  others_->SetLabelSelector(std::string("!") + kRunLabel);
  for (auto& [name, fn] : OtherPodIndexes()) others_->AddIndex(name, std::move(fn));
  others_->SetFieldSelector("status.phase!=Succeeded,status.phase!=Failed");
  // Pods berth pinned for tickets, in every phase: of their labels berth's and a Job's completion
  // index (workloads::PodsShowJobDone).
  ticket_pods_ = std::make_unique<k8s::Informer<k8s::Pod>>(
      client, kPods.Path(),
      [](const k8s::json::Value& obj) {
        return k8s::DecodePodKeeping(obj, k8s::MetaKeep{.label_prefix = "berth.dev/",
                                                        .also_label_prefix = workloads::kCompletionIndexLabel,
                                                        .only_needed = true});
      },
      [](const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); }, "ticket-pods");
  ticket_pods_->SetLabelSelector(workloads::kTicketLabel);
  for (auto& [name, fn] : TicketPodIndexes()) ticket_pods_->AddIndex(name, std::move(fn));
}

void EngineCaches::MakeDraInformers(const k8s::ClientPtr& client) {
  using k8s::resources::kDeviceClasses;
  using k8s::resources::kResourceClaims;
  using k8s::resources::kResourceSlices;
  resource_slices_ = std::make_unique<k8s::Informer<k8s::ResourceSlice>>(
      client, kResourceSlices.Path(), k8s::DecodeResourceSlice, [](const k8s::ResourceSlice& s) { return s.name; },
      "resourceslices");
  device_classes_ = std::make_unique<k8s::Informer<k8s::DeviceClass>>(
      client, kDeviceClasses.Path(), k8s::DecodeDeviceClass, [](const k8s::DeviceClass& c) { return c.name; },
      "deviceclasses");
  resource_claims_ = std::make_unique<k8s::Informer<k8s::ResourceClaim>>(
      client, kResourceClaims.Path(), k8s::DecodeResourceClaim,
      [](const k8s::ResourceClaim& c) { return k8s::ObjectKey(c.meta.ns, c.meta.name); }, "resourceclaims");
  // A cluster without resource.k8s.io/v1 (or RBAC for it) has no DRA fleets' devices.
  resource_slices_->SetAbsentIsEmpty(true);
  device_classes_->SetAbsentIsEmpty(true);
  resource_claims_->SetAbsentIsEmpty(true);
}

k8s::Informer<workloads::Workload>& EngineCaches::workloads(const workloads::WorkloadKind& kind) const {
  return *workloads_.at(WorkloadKindIndex(kind));
}

bool EngineCaches::CachedCapOf(const std::string& ns, std::optional<PriorityCap>& cap) const {
  if (!namespaces_->HasSynced()) return false;
  auto n = namespaces_->Get(ns);
  if (!n) return false;
  cap = ParsePriorityCap(n->labels, live_->default_max_priority());
  return true;
}

struct EngineCaches::Mirrors {
  k8s::Informer<Run>::Mirror runs;
  k8s::Informer<Fleet>::Mirror fleets;
  k8s::Informer<k8s::Node>::Mirror nodes;
  k8s::Informer<k8s::Pod>::Mirror pods, others;
  k8s::Informer<NamespaceInfo>::Mirror namespaces;
  k8s::Informer<ResourceQuotaInfo>::Mirror quotas;
  k8s::Informer<Team>::Mirror teams;
  std::vector<k8s::Informer<workloads::Workload>::Mirror> workloads;
  k8s::Informer<k8s::GroupPod>::Mirror group_pods, queued_pods;
  k8s::Informer<k8s::Pod>::Mirror ticket_pods;
  k8s::Informer<k8s::ResourceSlice>::Mirror resource_slices;
  k8s::Informer<k8s::DeviceClass>::Mirror device_classes;
  k8s::Informer<k8s::ResourceClaim>::Mirror resource_claims;
};

void EngineCaches::UpdateSnapshot(PassSnapshot& snapshot) {
  Mirrors& m = *mirrors_;
  m.runs.Update(snapshot.runs_);
  m.fleets.Update(snapshot.fleets_);
  m.nodes.Update(snapshot.nodes_);
  m.pods.Update(snapshot.pods_);
  m.others.Update(snapshot.others_);
  m.namespaces.Update(snapshot.namespaces_);
  m.quotas.Update(snapshot.quotas_);
  m.teams.Update(snapshot.teams_);
  for (size_t i = 0; i < m.workloads.size(); ++i) m.workloads[i].Update(*snapshot.workloads_[i]);
  m.group_pods.Update(snapshot.group_pods_);
  m.queued_pods.Update(snapshot.queued_pods_);
  m.ticket_pods.Update(snapshot.ticket_pods_);
  m.resource_slices.Update(snapshot.resource_slices_);
  m.device_classes.Update(snapshot.device_classes_);
  m.resource_claims.Update(snapshot.resource_claims_);
  snapshot.SetDefaultMaxPriority(live_->default_max_priority());
}

void EngineCaches::SetDefaultMaxPriority(int32_t cap) { live_->SetDefaultMaxPriority(cap); }

void EngineCaches::MakeLiveReads() {
  CacheSources s;
  s.runs = runs_.get();
  s.fleets = fleets_.get();
  s.nodes = nodes_.get();
  s.pods = pods_.get();
  s.others = others_.get();
  s.namespaces = namespaces_.get();
  s.quotas = resource_quotas_.get();
  s.teams = teams_.get();
  for (const auto& w : workloads_) s.workloads.push_back(w.get());
  s.group_pods = group_pods_.get();
  s.queued_pods = queued_pods_.get();
  s.ticket_pods = ticket_pods_.get();
  s.resource_slices = resource_slices_.get();
  s.device_classes = device_classes_.get();
  s.resource_claims = resource_claims_.get();
  live_ = std::make_unique<CacheReads>(std::move(s));
  mirrors_.reset(new Mirrors{runs_->NewMirror(), fleets_->NewMirror(), nodes_->NewMirror(), pods_->NewMirror(),
                             others_->NewMirror(), namespaces_->NewMirror(), resource_quotas_->NewMirror(),
                             teams_->NewMirror(), {}, group_pods_->NewMirror(), queued_pods_->NewMirror(),
                             ticket_pods_->NewMirror(), resource_slices_->NewMirror(),
                             device_classes_->NewMirror(), resource_claims_->NewMirror()});
  for (auto& w : workloads_) mirrors_->workloads.push_back(w->NewMirror());
}

EngineCaches::~EngineCaches() = default;

EngineCaches::EngineCaches(const k8s::ClientPtr& client) {
  runs_ = std::make_unique<k8s::Informer<Run>>(client, kRuns.Path(), DecodeRun, [](const Run& r) { return RunKey(r); },
                                               "runs");
  fleets_ = std::make_unique<k8s::Informer<Fleet>>(client, kFleets.Path(), DecodeFleet,
                                                   [](const Fleet& f) { return f.meta.name; }, "fleets");
  nodes_ = std::make_unique<k8s::Informer<k8s::Node>>(client, k8s::resources::kNodes.Path(), k8s::DecodeNode,
                                                      [](const k8s::Node& n) { return n.meta.name; }, "nodes");
  MakePodInformers(client);
  namespaces_ = std::make_unique<k8s::Informer<NamespaceInfo>>(
      client, k8s::resources::kNamespaces.Path(), DecodeNamespace, [](const NamespaceInfo& n) { return n.name; },
      "namespaces");
  resource_quotas_ = std::make_unique<k8s::Informer<ResourceQuotaInfo>>(
      client, "/api/v1/resourcequotas", DecodeResourceQuota,
      [](const ResourceQuotaInfo& q) { return k8s::ObjectKey(q.ns, q.name); }, "resourcequotas");
  teams_ = std::make_unique<k8s::Informer<Team>>(client, k8s::resources::kTeams.Path(), DecodeTeam,
                                                 [](const Team& t) { return t.meta.name; }, "teams");
  for (const workloads::WorkloadKind* kind : workloads::ObjectKinds()) {
    workloads_.push_back(std::make_unique<k8s::Informer<workloads::Workload>>(
        client, kind->Resource().Path(), [kind](const k8s::json::Value& v) { return kind->Decode(v); },
        [](const workloads::Workload& w) { return k8s::ObjectKey(w.meta.ns, w.meta.name); },
        std::string(kind->Resource().plural)));
  }
  auto decode_group_pod = [](const k8s::json::Value& v) { return k8s::DecodeGroupPod(v, workloads::kAdmissionGate); };
  auto group_pod_key = [](const k8s::GroupPod& p) { return k8s::ObjectKey(p.pod.meta.ns, p.pod.meta.name); };
  group_pods_ = std::make_unique<k8s::Informer<k8s::GroupPod>>(client, kPods.Path(), decode_group_pod, group_pod_key, "group-pods");
  group_pods_->SetLabelSelector(workloads::kPodGroupLabel);
  for (auto& [name, fn] : GroupPodIndexes()) group_pods_->AddIndex(name, std::move(fn));
  queued_pods_ = std::make_unique<k8s::Informer<k8s::GroupPod>>(client, kPods.Path(), decode_group_pod, group_pod_key, "queued-pods");
  queued_pods_->SetLabelSelector(std::string(workloads::kQueueLabel) + "=true,!" + workloads::kPodGroupLabel);
  MakeDraInformers(client);
  MakeLiveReads();
}

void EngineCaches::Start() {
  runs_->Start();
  fleets_->Start();
  nodes_->Start();
  pods_->Start();
  others_->Start();
  namespaces_->Start();
  resource_quotas_->Start();
  teams_->SetAbsentIsEmpty(true);  // a cluster whose Team CRD is not applied yet has no Teams
  teams_->Start();
  // A kind whose CRD is not applied (JobSets without the JobSet controller) has no workloads.
  for (auto& w : workloads_) w->SetAbsentIsEmpty(true);
  for (auto& w : workloads_) w->Start();
  group_pods_->Start();
  queued_pods_->Start();
  ticket_pods_->Start();
  resource_slices_->Start();
  device_classes_->Start();
  resource_claims_->Start();
}

void EngineCaches::Stop() {
  runs_->Stop();
  fleets_->Stop();
  nodes_->Stop();
  pods_->Stop();
  others_->Stop();
  namespaces_->Stop();
  resource_quotas_->Stop();
  teams_->Stop();
  for (auto& w : workloads_) w->Stop();
  group_pods_->Stop();
  queued_pods_->Stop();
  ticket_pods_->Stop();
  resource_slices_->Stop();
  device_classes_->Stop();
  resource_claims_->Stop();
}

void EngineCaches::OnSynced(const std::function<void()>& h) {
  runs_->SetSyncedHandler(h);
  fleets_->SetSyncedHandler(h);
  nodes_->SetSyncedHandler(h);
  pods_->SetSyncedHandler(h);
  others_->SetSyncedHandler(h);
  namespaces_->SetSyncedHandler(h);
  resource_quotas_->SetSyncedHandler(h);
  teams_->SetSyncedHandler(h);
  for (auto& w : workloads_) w->SetSyncedHandler(h);
  group_pods_->SetSyncedHandler(h);
  queued_pods_->SetSyncedHandler(h);
  ticket_pods_->SetSyncedHandler(h);
  resource_slices_->SetSyncedHandler(h);
  device_classes_->SetSyncedHandler(h);
  resource_claims_->SetSyncedHandler(h);
}

bool EngineCaches::HasSynced() const {
  return runs_->HasSynced() && fleets_->HasSynced() && nodes_->HasSynced() && pods_->HasSynced() &&
         others_->HasSynced() && namespaces_->HasSynced() && resource_quotas_->HasSynced() &&
         teams_->HasSynced() && group_pods_->HasSynced() && queued_pods_->HasSynced() && ticket_pods_->HasSynced() &&
         resource_slices_->HasSynced() && device_classes_->HasSynced() && resource_claims_->HasSynced() &&
         std::all_of(workloads_.begin(), workloads_.end(), [](const auto& w) { return w->HasSynced(); });
}

}  // namespace berth::reconcilers
