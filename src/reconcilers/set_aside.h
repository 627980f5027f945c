#pragma once
// Set-aside runs (issue 29): Runs the informer cannot read (nested deeper than json::kMaxDepth,
// k8s::SetAsideObject) stay out of the queue; each new one (uid and generation) gets a status that
// says why (reason InvalidSpec, condition Ready=False) and a Warning Event, once.
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

#include "k8s/client.h"
#include "k8s/events.h"
#include "k8s/informer.h"

namespace berth::reconcilers {

class SetAsideReporter {
 public:
  using Dispatch = std::function<bool(const std::string& key, std::function<bool()> write)>;
  SetAsideReporter(k8s::ClientPtr client, k8s::EventRecorder& events, Dispatch dispatch)
      : client_(std::move(client)), events_(events), dispatch_(std::move(dispatch)) {}

  // The runs set aside now (k8s::Informer::SetAside): the new ones are reported.
  void Report(const std::map<std::string, k8s::SetAsideObject>& aside, k8s::TimePoint now);
  // How many runs are set aside (as of the last Report).
  int64_t unreadable() const { return unreadable_.load(); }

 private:
  k8s::ClientPtr client_;
  k8s::EventRecorder& events_;
  Dispatch dispatch_;
  std::mutex mu_;  // guards reported_ (writer threads forget a failed report)
  std::map<std::string, std::string> reported_;
  std::atomic<int64_t> unreadable_{0};
};

}  // namespace berth::reconcilers
