#include "reconcilers/engine/engine_loop.h"

#include "workloads/workload.h"

#include <utility>

#include "k8s/objects.h"
#include "reconcilers/state/engine_caches.h"
#include "reconcilers/writers/pod_builder.h"
#include "reconcilers/objects/pod_group_tickets.h"

namespace berth::reconcilers {

namespace {

// Issue 45: the tickets ("ns/name") an event on another Pod concerns: its pinned ticket
// (berth.dev/ticket), and <prefix>-<workload> for each kind whose workload it belongs to.
std::vector<std::string> TicketsOfPod(const k8s::Pod& p) {
  std::vector<std::string> out;
  if (const std::string t = p.meta.Label(workloads::kTicketLabel); !t.empty()) out.push_back(k8s::ObjectKey(p.meta.ns, t));
  for (const workloads::WorkloadKind* kind : workloads::ObjectKinds()) {
    if (const workloads::PodOwner o = kind->WorkloadOfPod(p); !o.name.empty()) {
      out.push_back(k8s::ObjectKey(p.meta.ns, workloads::TicketName(kind->TicketPrefix(), o.name)));
    }
  }
  return out;
}

// A ticket's pinned Pod changed, or finished (others() drops it then): its ticket is visited (its
// Job may be done by its Pods, EngineCaches::JobPodsShowDone).
void WatchTicketPods(EngineCaches& caches, const std::function<void(const std::string&)>& touch,
                     const std::function<void()>& wake) {
  caches.ticket_pods().AddHandler([touch, wake](const std::string&, const auto& old, const auto& cur) {
    const auto& p = cur ? cur : old;
    if (p) touch(k8s::ObjectKey(p->meta.ns, p->meta.Label(workloads::kTicketLabel)));
    wake();
  });
}

}  // namespace

void EngineLoop::Watch(EngineCaches& caches, std::function<void(const std::string& key)> priority_changed,
                       std::function<void()> synced) {
  auto wake = [this](const std::string&, const auto&, const auto&) { Wake(); };
  caches.runs().SetSetAsideHandler([this] { Wake(); });  // SetAsideReporter
  // A run whose object or Pods changed is visited by the next pass (see "Incremental passes").
  caches.runs().AddHandler([this, priority_changed = std::move(priority_changed)](const std::string& key,
                                                                                  const auto& old, const auto& cur) {
    if (old && cur && old->spec.priority != cur->spec.priority && !cur->meta.deleting) priority_changed(key);
    Touch(key);
  });
  caches.pods().AddHandler([this](const std::string&, const auto& old, const auto& cur) {
    const auto& p = cur ? cur : old;
    if (!p) return;
    Touch(k8s::ObjectKey(p->meta.ns, p->meta.Label(kRunLabel)));
    if (const std::string owner = OwnerRunName(p->meta); !owner.empty() && owner != p->meta.Label(kRunLabel)) {
      Touch(k8s::ObjectKey(p->meta.ns, owner));
    }
  });
  caches.fleets().AddHandler([this](const std::string&, const auto& old, const auto& cur) {
    // Fleet status writes (berth's own) change nothing a placed run's decision reads.
    if (!old || !cur || old->meta.generation != cur->meta.generation) {
      NoteFleetsChanged();
    } else {
      Wake();
    }
  });
  caches.nodes().AddHandler([this](const std::string& name, const auto&, const auto&) { NoteNodeChanged(name); });
  // A Pod claiming a run by its ownerReference alone is a stray of it (issue 44): the run is visited.
  caches.others().AddHandler([this](const std::string&, const auto& old, const auto& cur) {
    const auto& p = cur ? cur : old;
    if (p) {
      if (const std::string owner = OwnerRunName(p->meta); !owner.empty()) Touch(k8s::ObjectKey(p->meta.ns, owner));
      for (const std::string& t : TicketsOfPod(*p)) Touch(t);  // issue 45
    }
    Wake();
  });
  // Issue 45: a workload changed: its ticket is visited (the ticket sync notes it too: tickets.h).
  for (const workloads::WorkloadKind* kind : workloads::ObjectKinds()) {
    caches.workloads(*kind).AddHandler([this, kind](const std::string&, const auto& old, const auto& cur) {
      const auto& j = cur ? cur : old;
      if (j) Touch(k8s::ObjectKey(j->meta.ns, workloads::TicketName(kind->TicketPrefix(), j->meta.name)));
      Wake();
    });
  }
  WatchTicketPods(caches, [this](const std::string& key) { Touch(key); }, [this] { Wake(); });
  // Issue 45 part 3: a queued Pod or a Pod group's Pod: its ticket is visited (pod_group_tickets.h).
  WatchPodWorkloads(caches, [this](const std::string& key) { Touch(key); }, [this] { Wake(); });
  // A priority cap may have changed: pending runs are decided again.
  caches.namespaces().AddHandler([this](const std::string&, const auto&, const auto&) { NoteNamespacesChanged(); });
  caches.quotas().AddHandler(wake);
  caches.OnSynced([this, synced = std::move(synced)] {
    Nudge();  // the loop waits for the caches (WaitForSync)
    if (synced) synced();
  });
  // A Team's spec (shares, namespaces, weight) changes the core's input; its status is berth's own.
  caches.teams().AddHandler([this](const std::string&, const auto& old, const auto& cur) {
    if (!old || !cur || old->meta.generation != cur->meta.generation) Wake();
  });
}

void EngineLoop::Start() {
  thread_ = std::thread([this] { Run(); });
}

void EngineLoop::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

void EngineLoop::Stop() {
  RequestStop();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool EngineLoop::Stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

void EngineLoop::Nudge() {
  { std::lock_guard<std::mutex> lock(mu_); }  // a wait that checked before the news is in its wait now
  cv_.notify_one();
}

// The loop is woken by the first change since it last looked (dirty_ set): the changes after it
// find the next pass due already, and waking the loop thread for each (thousands in a burst,
// while it paces passes) only cost context switches. Priority news wakes it apart (Nudge).
void EngineLoop::Touch(const std::string& run_key) {
  bool was_dirty;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changes_.runs.insert(run_key);
    was_dirty = std::exchange(dirty_, true);
  }
  if (!was_dirty) cv_.notify_one();
}

void EngineLoop::NoteNodeChanged(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    changes_.nodes.insert(name);
  }
  Wake();
}

void EngineLoop::NoteFleetsChanged() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    changes_.fleets = true;
  }
  Wake();
}

void EngineLoop::NoteNamespacesChanged() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    changes_.namespaces = true;
  }
  Wake();
}

void EngineLoop::Wake() {
  bool was_dirty;
  {
    std::lock_guard<std::mutex> lock(mu_);
    was_dirty = std::exchange(dirty_, true);
  }
  if (!was_dirty) cv_.notify_one();
}

bool EngineLoop::PassDue() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dirty_;
}

EngineLoop::Changes EngineLoop::TakeChanges() {
  Changes taken;
  std::lock_guard<std::mutex> lock(mu_);
  dirty_ = false;  // the pass takes every change noted so far
  std::swap(taken, changes_);
  return taken;
}

bool EngineLoop::WaitForSync() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_ && !hooks_.synced()) {
    // Each informer's first list nudges the loop (Watch).
    clock_.WaitFor(lock, cv_, kMaxSleep, [this] { return stopping_ || hooks_.synced(); });
  }
  return !stopping_;
}

void EngineLoop::Run() {
  if (!WaitForSync()) return;
  hooks_.started();
  // Passes are paced on the clock's monotonic time, as every wait of the loop (see Coalesce).
  base::MonoTime last_end = clock_.Monotonic() - std::chrono::seconds(1);
  std::chrono::milliseconds last_took{0};
  while (true) {
    if (!WaitForWork()) return;
    if (!Coalesce(last_end, std::clamp<std::chrono::milliseconds>(last_took, kCoalesce, kMaxGap))) return;
    const base::MonoTime start = clock_.Monotonic();
    hooks_.pass(clock_.Now());
    last_end = clock_.Monotonic();
    last_took = std::chrono::duration_cast<std::chrono::milliseconds>(last_end - start);
  }
}

bool EngineLoop::Coalesce(base::MonoTime last_end, std::chrono::milliseconds gap) {
  // Coalesce bursts of events into one pass (a pass costs O(runs not finished), whatever changed).
  while (true) {
    const auto left = gap - std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Monotonic() - last_end);
    if (left <= std::chrono::milliseconds::zero()) return true;
    {
      std::unique_lock<std::mutex> lock(mu_);
      clock_.WaitFor(lock, cv_, left, [this] { return stopping_ || hooks_.news() || hooks_.view_wanted(); });
      if (stopping_) return false;
    }
    hooks_.show_news();
    if (hooks_.view_wanted()) hooks_.make_view();
  }
}

bool EngineLoop::WaitForWork() {
  // Deadlines and the wait are on the injected clock (Clock::WaitFor: a FakeClock moved past
  // `until` ends it); the wait is in slices of at most kMaxSleep, after each of which the wall
  // clock is read again (it may have jumped).
  const k8s::TimePoint resync = ResyncAt(clock_.Now());
  k8s::TimePoint until = deadline_ ? std::min(*deadline_, resync) : resync;
  until = std::max(until, clock_.Now() + kMinDeadlineDelay);  // a due deadline never spins the loop
  std::unique_lock<std::mutex> lock(mu_);
  while (!dirty_ && !stopping_) {
    if (hooks_.view_wanted()) {  // a view asked for between passes: made from the last pass' result
      lock.unlock();
      hooks_.make_view();
      lock.lock();
      continue;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_.Now());
    if (left <= std::chrono::milliseconds::zero()) break;
    clock_.WaitFor(lock, cv_, std::min<std::chrono::milliseconds>(left, kMaxSleep),
                   [this] { return dirty_ || stopping_ || hooks_.view_wanted(); });
  }
  if (stopping_) return false;
  dirty_ = false;
  return true;
}

}  // namespace berth::reconcilers
