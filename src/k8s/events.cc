#include "k8s/events.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "k8s/timefmt.h"

namespace berth::k8s {

EventRecorder::EventRecorder(ClientPtr client, const Clock& clock, std::string component, size_t max_queued,
                             double normal_per_second, double normal_burst)
    : client_(std::move(client)),
      clock_(clock),
      component_(std::move(component)),
      max_queued_(max_queued),
      normal_per_second_(normal_per_second),
      normal_burst_(normal_burst),
      normal_tokens_(normal_burst),
      normal_refilled_at_(clock.Monotonic()) {
  thread_ = std::thread([this] { Loop(); });
}

EventRecorder::~EventRecorder() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void EventRecorder::Record(const ObjectReference& obj, std::string_view type, std::string_view reason,
                           const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (type == "Normal") {
      const base::MonoTime now = clock_.Monotonic();
      const double elapsed = std::chrono::duration<double>(now - normal_refilled_at_).count();
      normal_refilled_at_ = now;
      normal_tokens_ = std::min(normal_burst_, normal_tokens_ + std::max(0.0, elapsed) * normal_per_second_);
      if (normal_tokens_ < 1) {
        ++dropped_;
        return;
      }
      normal_tokens_ -= 1;
    }
    if (queue_.size() >= max_queued_) {
      queue_.pop_front();
      ++dropped_;
    }
    queue_.push_back(Pending{obj, std::string(type), std::string(reason), message, clock_.Now()});
  }
  cv_.notify_one();
}

void EventRecorder::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return (queue_.empty() && !busy_) || stopped_; });
}

uint64_t EventRecorder::posted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return posted_;
}

uint64_t EventRecorder::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

void EventRecorder::Loop() {
  while (true) {
    Pending e;
    {
      std::unique_lock<std::mutex> lock(mu_);
      busy_ = false;
      idle_cv_.notify_all();
      cv_.wait(lock, [this] { return stopped_ || !queue_.empty(); });
      if (stopped_) return;
      e = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    Post(e);
  }
}

void EventRecorder::Post(const Pending& e) {
  std::string ns = e.obj.ns.empty() ? "default" : e.obj.ns;
  std::string ts = FormatRfc3339(e.at);
  std::string body = R"({"apiVersion":"v1","kind":"Event","metadata":{"generateName":)" + json::Quote(e.obj.name + ".") +
                     R"(,"namespace":)" + json::Quote(ns) + R"(},"involvedObject":{"apiVersion":)" +
                     json::Quote(e.obj.api_version) + R"(,"kind":)" + json::Quote(e.obj.kind) + R"(,"name":)" +
                     json::Quote(e.obj.name) + R"(,"namespace":)" + json::Quote(e.obj.ns) + R"(,"uid":)" +
                     json::Quote(e.obj.uid) + R"(},"reason":)" + json::Quote(e.reason) + R"(,"message":)" +
                     json::Quote(e.message) + R"(,"type":)" + json::Quote(e.type) + R"(,"source":{"component":)" +
                     json::Quote(component_) + R"(},"reportingComponent":)" + json::Quote(component_) +
                     R"(,"firstTimestamp":)" + json::Quote(ts) + R"(,"lastTimestamp":)" + json::Quote(ts) +
                     R"(,"count":1})";
  auto r = client_->Create(resources::kEvents.Path(ns), body);
  if (r.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++posted_;
  }
  if (!r.ok()) spdlog::debug("event {} for {}/{} not recorded: {}", e.reason, ns, e.obj.name, r.status().ToString());
}

}  // namespace berth::k8s
