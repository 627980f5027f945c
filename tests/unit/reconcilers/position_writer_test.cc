#include "reconcilers/writers/position_writer.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fakes/fake_api.h"
#include "unit/reconcilers/api_fixture.h"
#include "k8s/informer.h"

namespace berth::reconcilers {
namespace {

namespace sched = scheduling;
using k8s::resources::kRuns;
using testing::FakeApi;

class PositionWriterTest : public ApiFixture {
 protected:
  PositionWriterTest()
      : admissions_(client_, clock_, events_, [](reconcilers::PassWrite w) { return w.write(); }),
        writes_(
            client_, clock_, events_, admissions_, options_,
            [](reconcilers::PassWrite w) { return w.write(); },
            [](const reconcilers::Run&) { return std::vector<std::shared_ptr<const k8s::Pod>>{}; }),
        positions_(
            client_, options_, admissions_, writes_,
            [this](reconcilers::PassWrite w) {
              ++sequences_;
              last_ok_ = w.write();  // the writer thread's work, done at once
              return true;
            },
            [] { return false; }),
        queue_(std::chrono::minutes(10)) {
    options_.position_limit = 2;
    options_.position_writes_per_second = 1000;
  }

  void Submit(const std::string& name, int32_t priority) {
    CreateRun(name, R"("retry":{"onNoCapacity":true},)");
    names_.push_back(name);
    priority_[name] = priority;
  }
  // A pass: every run read from the API, queued by priority and waiting in the result.
  const Keyed& Pass() {
    working_.BeginPass();
    for (const auto& n : names_) working_.Touch("ns/" + n);
    const Keyed& keyed = working_.Make(
        clock_.Now(),
        [this](const std::string& key) { return GetRun(key.substr(3)); },
        [] {}, 1000);
    result_.waiting.clear();
    for (const auto& k : keyed) {
      sched::PendingRun pr;
      pr.id = k.key;
      pr.priority = priority_[k.key.substr(3)];
      pr.owner = k.memo;
      queue_.Upsert(pr);
    }
    result_.waiting.reserve(keyed.size());
    for (auto item : queue_) {
      result_.waiting.push_back(sched::WaitingRun{item.run.id, {}, item.effective_priority, item.run.owner});
    }
    working_.MarkWaiting(result_);
    return keyed;
  }
  std::optional<int64_t> Shown(const std::string& name) {
    auto run = GetRun(name);
    return run ? run->status.queue_position : std::nullopt;
  }
  std::unordered_set<std::string> Write(const Keyed& keyed) {
    positions_.Places(queue_, working_, clock_.Now());
    std::optional<k8s::TimePoint> due;
    return positions_.Write(
        keyed, {}, working_,
        [](const reconcilers::Run& run, const sched::WaitingRun&, std::optional<int64_t> place) {
          RunStatus s = run.status;
          s.phase = Phase::kPending;
          s.queue_position = place;
          return s;
        },
        clock_.Now(), due);
  }

  EngineOptions options_;
  Admissions admissions_;
  RunWrites writes_;
  PositionWriter positions_;
  sched::RunQueue queue_;
  WorkingSet working_;
  sched::CycleResult result_;
  std::vector<std::string> names_;
  std::map<std::string, int32_t> priority_;
  int sequences_ = 0;
  bool last_ok_ = false;
};

TEST_F(PositionWriterTest, TheTopOfTheQueueShowsItsPlacesInOneSequence) {
  Submit("low", 1);
  Submit("high", 9);
  Submit("mid", 5);
  const Keyed& keyed = Pass();
  EXPECT_EQ(positions_.Places(queue_, working_, clock_.Now()), (std::vector<std::string>{"ns/high", "ns/mid"}));
  EXPECT_EQ(positions_.PlaceOf("ns/high"), 1);
  EXPECT_EQ(positions_.PlaceOf("ns/low"), std::nullopt);
  const auto touched = Write(keyed);
  EXPECT_EQ(touched, (std::unordered_set<std::string>{"ns/high", "ns/mid"}));
  EXPECT_EQ(sequences_, 1);
  EXPECT_TRUE(last_ok_);
  EXPECT_EQ(Shown("high"), 1);
  EXPECT_EQ(Shown("mid"), 2);
  EXPECT_EQ(Shown("low"), std::nullopt);
  EXPECT_EQ(positions_.InFlight(), touched);
}

TEST_F(PositionWriterTest, TheNextSequenceWaitsUntilTheCacheShowsWhatTheLastOneWrote) {
  Submit("a", 5);
  Submit("b", 4);
  Write(Pass());
  ASSERT_EQ(sequences_, 1);
  // The writer is done, but the pass has not taken what it wrote yet: nothing is planned.
  priority_["b"] = 9;
  const Keyed& keyed = Pass();
  EXPECT_TRUE(Write(keyed).empty());
  EXPECT_EQ(sequences_, 1);
  // Taken, and the cache (the next read) has it: the moves of the new order go out.
  Admissions::ApplyNews(admissions_.TakeNews(), working_);
  for (const auto& k : keyed) k.memo->status_write.Add(UINT64_MAX);  // what ReconcileAll does once the cache has it
  queue_.Upsert([&] {
    sched::PendingRun pr = *queue_.Find("ns/b");
    pr.priority = 9;
    return pr;
  }());
  result_.waiting.clear();
  for (auto item : queue_) {
    result_.waiting.push_back(sched::WaitingRun{item.run.id, {}, item.effective_priority, item.run.owner});
  }
  working_.MarkWaiting(result_);
  EXPECT_FALSE(Write(Pass()).empty());
  EXPECT_EQ(sequences_, 2);
  EXPECT_EQ(Shown("b"), 1);
  EXPECT_EQ(Shown("a"), 2);
}

}  // namespace
}  // namespace berth::reconcilers
