#include "reconcilers/views/queue_view.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

namespace berth::reconcilers {
namespace {

namespace sched = scheduling;
using std::chrono::milliseconds;

// Get's waits are on this clock: they end when the view is made (or stopped), never by time.
const base::FakeClock clock;

sched::PendingRun Pending(const std::string& id, int32_t priority, int submitted_s) {
  sched::PendingRun r;
  r.id = id;
  r.priority = priority;
  r.submitted_at = sched::TimePoint{} + std::chrono::seconds(submitted_s);
  return r;
}

std::vector<std::string> Names(const std::vector<QueueEntry>& view) {
  std::vector<std::string> out;
  for (const auto& e : view) out.push_back(e.ns + "/" + e.name + "@" + std::to_string(e.position));
  return out;
}

std::vector<QueueEntry> Entries(const sched::RunQueue& queue) {
  return MakeQueueEntries(
      queue, sched::CycleResult{}, [](const sched::PendingRun&) { return nullptr; },
      [](const sched::WaitingRun&) { return std::string(); }, [](const std::string&) { return false; });
}

TEST(QueueView, MoveInViewPlacesTheRunAsTheQueueWouldAndNumbersThePlacesAgain) {
  std::vector<QueueEntry> view(3);
  const char* names[] = {"a", "b", "c"};
  for (int i = 0; i < 3; ++i) {
    view[i].ns = "ns";
    view[i].name = names[i];
    view[i].priority = view[i].effective_priority = 10 - i;
    view[i].position = i + 1;
  }
  EXPECT_TRUE(QueueView::MoveInView(view, "ns/c", 50, 50));
  EXPECT_EQ(Names(view), (std::vector<std::string>{"ns/c@1", "ns/a@2", "ns/b@3"}));
  EXPECT_EQ(view[0].priority, 50);
  EXPECT_FALSE(QueueView::MoveInView(view, "ns/zz", 1, 1));
  EXPECT_FALSE(QueueView::MoveInView(view, "no-slash", 1, 1));
}

TEST(QueueView, GetAnswersAtOnceUntilAPassMarksTheViewStaleThenWaitsForTheLoopsView) {
  sched::RunQueue queue(std::chrono::minutes(10));
  queue.Upsert(Pending("ns/a", 5, 1));
  std::atomic<int> nudges{0};
  QueueView view(clock, [&] { ++nudges; });
  EXPECT_TRUE(view.Get(milliseconds(10)).empty());  // nothing published: the empty view at once
  view.SetServing();
  view.MarkStale();
  // The loop thread answers the nudge with a view made from the queue.
  std::thread loop([&] {
    while (!view.Wanted()) std::this_thread::yield();
    view.Publish(Entries(queue), queue, [](const std::string&) { return std::nullopt; });
  });
  const auto got = view.Get(std::chrono::seconds(30));
  loop.join();
  EXPECT_EQ(Names(got), (std::vector<std::string>{"ns/a@1"}));
  EXPECT_GE(nudges.load(), 1);
  EXPECT_FALSE(view.Wanted());
  // Fresh now: answered without the loop.
  EXPECT_EQ(view.Get(milliseconds(0)).size(), 1u);
}

TEST(QueueView, GetAnswersTheViewMadeAfterItsRequestEvenIfAPassMarksItStaleAgainAtOnce) {
  // The loop makes the view the moment it is nudged and its next pass marks it stale before the
  // reader looks again (a fast loop on an idle machine): the reader must get that view, not wait
  // out its time with nobody asked to make another.
  base::FakeClock own_clock;
  sched::RunQueue queue(std::chrono::minutes(10));
  queue.Upsert(Pending("ns/a", 5, 1));
  QueueView* view_ptr = nullptr;
  QueueView view(own_clock, [&] {
    view_ptr->Publish(Entries(queue), queue, [](const std::string&) { return std::nullopt; });
    view_ptr->MarkStale();
  });
  view_ptr = &view;
  view.SetServing();
  view.MarkStale();
  std::atomic<bool> answered{false};
  std::thread timeout([&] {  // ends a wait that would otherwise last forever on the fake clock
    for (int i = 0; i < 200 && !answered; ++i) std::this_thread::sleep_for(milliseconds(10));
    if (!answered) own_clock.Advance(std::chrono::seconds(6));
  });
  const auto got = view.Get(std::chrono::seconds(5));
  answered = true;
  timeout.join();
  EXPECT_EQ(Names(got), (std::vector<std::string>{"ns/a@1"}));
  EXPECT_EQ(own_clock.Now(), base::FakeClock().Now()) << "the request waited out its time";
}

TEST(QueueView, AStoppedViewAnswersTheLastViewWithoutWaiting) {
  QueueView view(clock, [] {});
  view.SetServing();
  view.MarkStale();
  view.Stop();
  EXPECT_TRUE(view.Get(std::chrono::seconds(30)).empty());
}

TEST(QueueView, PriorityNewsMovesAQueuedRunUntilTheQueueHasItsPriority) {
  sched::RunQueue queue(std::chrono::minutes(10));
  queue.Upsert(Pending("ns/a", 10, 1));
  queue.Upsert(Pending("ns/b", 5, 2));
  std::map<std::string, int32_t> priority{{"ns/a", 10}, {"ns/b", 5}};
  auto priority_of = [&](const std::string& key) -> std::optional<int32_t> { return priority.at(key); };
  int nudges = 0;
  QueueView view(clock, [&] { ++nudges; });
  view.Publish(Entries(queue), queue, priority_of);
  ASSERT_EQ(Names(view.Get(milliseconds(0))), (std::vector<std::string>{"ns/a@1", "ns/b@2"}));

  priority["ns/b"] = 20;
  view.NotePriorityChange("ns/b");
  EXPECT_EQ(nudges, 1);
  EXPECT_TRUE(view.HasNews());
  view.ShowNews(queue, priority_of);
  EXPECT_FALSE(view.HasNews());
  EXPECT_EQ(Names(view.Get(milliseconds(0))), (std::vector<std::string>{"ns/b@1", "ns/a@2"}));
  // A view made from the queue before it has the new priority keeps the run where it was shown.
  view.Publish(Entries(queue), queue, priority_of);
  EXPECT_EQ(Names(view.Get(milliseconds(0))), (std::vector<std::string>{"ns/b@1", "ns/a@2"}));
  // The queue has it: the view is the queue's.
  queue.Upsert(Pending("ns/b", 20, 2));
  view.Publish(Entries(queue), queue, priority_of);
  EXPECT_EQ(Names(view.Get(milliseconds(0))), (std::vector<std::string>{"ns/b@1", "ns/a@2"}));
  // News of a run not in the queue moves nothing.
  view.NotePriorityChange("ns/gone");
  priority["ns/gone"] = 99;
  view.ShowNews(queue, priority_of);
  EXPECT_EQ(view.Get(milliseconds(0)).size(), 2u);
}

TEST(QueueView, EqualNeighboursShareOneSentence) {
  sched::RunQueue queue(std::chrono::minutes(10));
  for (int i = 0; i < 3; ++i) queue.Upsert(Pending("ns/r" + std::to_string(i), 5, i));
  sched::CycleResult result;
  for (int i = 0; i < 3; ++i) result.waiting.push_back(sched::WaitingRun{"ns/r" + std::to_string(i), {}, 5, nullptr});
  int explained = 0;
  auto entries = MakeQueueEntries(
      queue, result, [](const sched::PendingRun&) { return nullptr; },
      [&](const sched::WaitingRun&) { return "waits " + std::to_string(++explained); },
      [](const std::string&) { return false; });
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(explained, 1);
  EXPECT_EQ(entries[2].message, "waits 1");
  // A capped namespace's sentence may name the cap: made for each run.
  explained = 0;
  MakeQueueEntries(
      queue, result, [](const sched::PendingRun&) { return nullptr; },
      [&](const sched::WaitingRun&) { return "waits " + std::to_string(++explained); },
      [](const std::string&) { return true; });
  EXPECT_EQ(explained, 3);
}

}  // namespace
}  // namespace berth::reconcilers
