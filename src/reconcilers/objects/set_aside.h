#pragma once
// Set-aside runs (issue 29): Runs the informer cannot read (nested deeper than json::kMaxDepth,
// k8s::SetAsideObject) stay out of the queue; each new one (uid and generation) gets a status that
// says why (reason InvalidSpec, condition Ready=False) and a Warning Event, once.
// A run made unreadable while it holds machines (issue 44: placed, Scheduled or Running, or with
// Pods that still run) would run on beyond maxDuration, preemption, reclaim and its team's usage:
// it is ended instead. Its status is written first (Failed, reason InvalidSpec, the rest of its
// status kept, guarded by its resourceVersion), then its Pods are deleted (status before Pods, as
// everywhere in the engine), with a Warning Event; its blocks come free as its Pods go. A Failed
// set-aside run whose Pods still run (a crash between the two) has them deleted. A deleted
// set-aside run has its Pods deleted, then berth's finalizer removed.
//
// Threads. Report: the engine's loop thread, at the start of each pass. The status write runs on a
// writer thread (not guarded by resourceVersion, its answer not read: it is the Run, as deep as
// ever), which forgets a failed report under this object's lock so that the next pass tries again.
// unreadable: any thread (the metric).
// Owns: which set-aside runs were reported (key -> "uid/generation") and how many there are.
// Cost: O(set-aside runs) a pass.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "k8s/client.h"
#include "k8s/events.h"
#include "k8s/store.h"
#include "reconcilers/writers/run_writes.h"  // PodRef

namespace berth::reconcilers {

class SetAsideReporter {
 public:
  using Dispatch = DispatchWrite;
  // The run's Pods that neither finished nor are being deleted (CacheReads::PodsToStop of a run
  // with only its metadata and status: its spec is what berth cannot read); loop thread.
  using PodsToStop = std::function<std::vector<PodRef>(const Run& run)>;
  // Deletes these Pods of namespace `ns` (RunWrites::DeletePods); writer thread.
  using DeletePods = std::function<bool(const std::string& ns, const std::vector<PodRef>& pods)>;
  SetAsideReporter(k8s::ClientPtr client, k8s::EventRecorder& events, Dispatch dispatch, PodsToStop pods_to_stop,
                   DeletePods delete_pods)
      : client_(std::move(client)),
        events_(events),
        dispatch_(std::move(dispatch)),
        pods_to_stop_(std::move(pods_to_stop)),
        delete_pods_(std::move(delete_pods)) {}

  // The runs set aside now (k8s::Informer::SetAside): the new ones are reported.
  void Report(const std::map<std::string, k8s::SetAsideObject>& aside, k8s::TimePoint now);
  // How many runs are set aside (as of the last Report).
  int64_t unreadable() const { return unreadable_.load(); }

 private:
  // Ends a set-aside run that holds machines, deletes the Pods of one that ended or was deleted
  // (then its finalizer); true when it handled `o` (else it is only reported).
  bool EndIfHolding(const k8s::SetAsideObject& o, k8s::TimePoint now);
  // Writes the Failed status (once per resourceVersion), then deletes `pods`, on a writer.
  void End(const k8s::SetAsideObject& o, const RunStatus& current, std::vector<PodRef> pods, k8s::TimePoint now);

  k8s::ClientPtr client_;
  k8s::EventRecorder& events_;
  // A write that reports `key` (reported_): forgotten again when refused as it is carried out.
  PassWrite Report(const std::string& key, WriteKind kind, const std::string& body, std::function<bool()> write);
  Dispatch dispatch_;
  PodsToStop pods_to_stop_;
  DeletePods delete_pods_;
  std::mutex mu_;  // guards reported_ (writer threads forget a failed report)
  std::map<std::string, std::string> reported_;
  std::atomic<int64_t> unreadable_{0};
};

}  // namespace berth::reconcilers
