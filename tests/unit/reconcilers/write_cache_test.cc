#include "reconcilers/state/write_cache.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace berth::reconcilers {
namespace {

using std::chrono::seconds;
using Cache = WriteCache<std::string>;

const base::TimePoint kT0{base::Duration(1'000'000)};

WriteState StateOf(const Cache& c, const std::string& key) {
  const auto* e = c.Find(key);
  EXPECT_NE(e, nullptr) << key;
  return e ? e->state : WriteState::kConfirmed;
}

TEST(WriteCache, AssumeThenWrittenThenAddConfirms) {
  Cache c;
  const uint64_t t = c.Assume("a", "v1", /*base_rv=*/10);
  EXPECT_EQ(StateOf(c, "a"), WriteState::kAssumed);
  EXPECT_EQ(c.Find("a")->base_rv, 10u);
  c.Finish("a", t, WriteAnswer::kWritten, 12);
  EXPECT_EQ(StateOf(c, "a"), WriteState::kAssumed) << "answers apply at Settle only";
  const auto settled = c.Settle();
  ASSERT_EQ(settled.size(), 1u);
  EXPECT_EQ(settled[0].key, "a");
  EXPECT_EQ(StateOf(c, "a"), WriteState::kWritten);
  EXPECT_EQ(c.Find("a")->written_rv, 12u);
  EXPECT_FALSE(c.Add("a", 11)) << "the watch is behind the written version";
  EXPECT_EQ(StateOf(c, "a"), WriteState::kWritten);
  EXPECT_TRUE(c.Add("a", 12));
  EXPECT_EQ(StateOf(c, "a"), WriteState::kConfirmed);
  EXPECT_EQ(c.Find("a")->value, "v1");
  c.Erase("a");
  EXPECT_EQ(c.Find("a"), nullptr);
}

TEST(WriteCache, AddConfirmsOnlyAWrittenWrite) {
  Cache c;
  const uint64_t t = c.Assume("a", "v1", 10);
  EXPECT_FALSE(c.Add("a", 99)) << "no answer yet: the written version is not known";
  c.Finish("a", t, WriteAnswer::kUnknown);
  c.Settle();
  EXPECT_FALSE(c.Add("a", 99));
  EXPECT_EQ(StateOf(c, "a"), WriteState::kUnknown);
  c.Confirm("a");  // a read showed it applied
  EXPECT_EQ(StateOf(c, "a"), WriteState::kConfirmed);
  EXPECT_FALSE(c.Add("b", 1)) << "no such key";
}

TEST(WriteCache, RefusedForgetsAndRestoresThePreviousValue) {
  Cache c;
  const uint64_t t1 = c.Assume("a", "v1");
  c.Finish("a", t1, WriteAnswer::kWritten, 5);
  c.Settle();
  const uint64_t t2 = c.Assume("a", "v2");
  EXPECT_EQ(c.Find("a")->value, "v2");
  c.Finish("a", t2, WriteAnswer::kRefused);
  const auto settled = c.Settle();
  ASSERT_EQ(settled.size(), 1u);
  EXPECT_EQ(settled[0].answer, WriteAnswer::kRefused);
  ASSERT_NE(c.Find("a"), nullptr);
  EXPECT_EQ(c.Find("a")->value, "v1") << "the value last known applied";
  EXPECT_EQ(StateOf(c, "a"), WriteState::kConfirmed);
}

TEST(WriteCache, ForgetWithoutAPreviousValueDropsTheKey) {
  Cache c;
  const uint64_t t = c.Assume("a", "v1");
  c.Finish("a", t, WriteAnswer::kRefused);
  c.Settle();
  EXPECT_EQ(c.Find("a"), nullptr);
  c.Assume("b", "v1");
  c.Forget("b");  // the loop thread's own rollback
  EXPECT_EQ(c.Find("b"), nullptr);
}

TEST(WriteCache, AnUnknownWriteIsNoPreviousValue) {
  Cache c;
  const uint64_t t1 = c.Assume("a", "v1");
  c.Finish("a", t1, WriteAnswer::kUnknown);
  c.Settle();
  c.Assume("a", "v2");
  c.Forget("a");
  EXPECT_EQ(c.Find("a"), nullptr) << "v1 may or may not have been applied: nothing to restore";
}

TEST(WriteCache, UnknownIsKeptAndVerifiedNeverDropped) {
  Cache c;
  const uint64_t t = c.Assume("a", "v1", 10, kT0 + seconds(30));
  c.Finish("a", t, WriteAnswer::kUnknown);
  c.Settle();
  EXPECT_EQ(StateOf(c, "a"), WriteState::kUnknown);
  EXPECT_EQ(c.Expire(kT0), std::vector<std::string>{"a"}) << "an unknown outcome is verified at once";
  EXPECT_TRUE(c.Find("a")->verify);
  EXPECT_TRUE(c.Expire(kT0 + seconds(600)).empty()) << "marked once";
  EXPECT_EQ(StateOf(c, "a"), WriteState::kUnknown) << "kept while it may have been applied";
  // The verifying read got no answer either: marked again by the next Expire.
  c.Finish("a", c.Find("a")->ticket, WriteAnswer::kUnknown);
  c.Settle();
  EXPECT_EQ(c.Expire(kT0), std::vector<std::string>{"a"});
  // The read shows it applied at 14: awaiting the watch.
  c.Finish("a", c.Find("a")->ticket, WriteAnswer::kWritten, 14);
  c.Settle();
  EXPECT_EQ(StateOf(c, "a"), WriteState::kWritten);
  EXPECT_FALSE(c.Find("a")->verify);
  EXPECT_TRUE(c.Add("a", 14));
}

TEST(WriteCache, ExpireMarksOverdueWritesAtTheirDeadlineOnly) {
  Cache c;
  c.Assume("silent", "v", 1, kT0 + seconds(10));  // no answer by its deadline
  const uint64_t tw = c.Assume("unwatched", "v", 1, kT0 + seconds(10));
  c.Finish("unwatched", tw, WriteAnswer::kWritten, 2);  // the watch never shows 2
  const uint64_t tc = c.Assume("seen", "v", 1, kT0 + seconds(10));
  c.Finish("seen", tc, WriteAnswer::kWritten, 2);
  c.Settle();
  ASSERT_TRUE(c.Add("seen", 3));
  EXPECT_TRUE(c.Expire(kT0 + seconds(9)).empty());
  auto marked = c.Expire(kT0 + seconds(10));
  std::sort(marked.begin(), marked.end());
  EXPECT_EQ(marked, (std::vector<std::string>{"silent", "unwatched"}));
  EXPECT_EQ(StateOf(c, "silent"), WriteState::kUnknown);
  EXPECT_EQ(StateOf(c, "unwatched"), WriteState::kUnknown);
  EXPECT_EQ(StateOf(c, "seen"), WriteState::kConfirmed);
  // The verifying read says the silent one was not applied: rolled back.
  c.Finish("silent", c.Find("silent")->ticket, WriteAnswer::kRefused);
  c.Settle();
  EXPECT_EQ(c.Find("silent"), nullptr);
}

TEST(WriteCache, AFinishAfterAddChangesNothing) {
  Cache c;
  const uint64_t t = c.Assume("a", "v1", 10);
  c.Confirm("a");  // the watch showed the change before the writer's answer came
  c.Finish("a", t, WriteAnswer::kUnknown);
  c.Finish("a", t, WriteAnswer::kRefused);
  EXPECT_TRUE(c.Settle().empty());
  EXPECT_EQ(StateOf(c, "a"), WriteState::kConfirmed);
  EXPECT_EQ(c.Find("a")->value, "v1");
}

TEST(WriteCache, AnAnswerForASupersededWriteIsIgnored) {
  Cache c;
  const uint64_t t1 = c.Assume("a", "v1");
  const uint64_t t2 = c.Assume("a", "v2");
  EXPECT_NE(t1, t2);
  c.Finish("a", t1, WriteAnswer::kRefused);
  EXPECT_TRUE(c.Settle().empty());
  ASSERT_NE(c.Find("a"), nullptr);
  EXPECT_EQ(c.Find("a")->value, "v2");
  c.Finish("gone", 77, WriteAnswer::kWritten, 1);
  EXPECT_TRUE(c.Settle().empty());
}

TEST(WriteCache, NextTicketIsTheOneAssumeReturns) {
  Cache c;
  const uint64_t next = c.NextTicket();
  EXPECT_EQ(c.Assume("a", "v"), next);
  EXPECT_EQ(c.NextTicket(), next + 1);
}

TEST(WriteCache, RetainKeepsTheKeysAsked) {
  Cache c;
  c.Assume("a", "v");
  c.Assume("b", "v");
  c.Retain([](const std::string& k) { return k == "b"; });
  EXPECT_EQ(c.Find("a"), nullptr);
  EXPECT_NE(c.Find("b"), nullptr);
  EXPECT_EQ(c.size(), 1u);
}

TEST(WriteCache, FinishFromManyWriterThreads) {
  Cache c;
  constexpr int kThreads = 8, kKeys = 500;
  std::vector<uint64_t> tickets;
  for (int i = 0; i < kThreads * kKeys; ++i) tickets.push_back(c.Assume("k" + std::to_string(i), "v", 1));
  std::vector<std::thread> writers;
  for (int w = 0; w < kThreads; ++w) {
    writers.emplace_back([&c, &tickets, w] {
      for (int i = w * kKeys; i < (w + 1) * kKeys; ++i) {
        c.Finish("k" + std::to_string(i), tickets[i], i % 2 ? WriteAnswer::kWritten : WriteAnswer::kRefused, 2);
      }
    });
  }
  size_t applied = 0;
  for (int round = 0; round < 50; ++round) applied += c.Settle().size();  // the loop meanwhile
  for (auto& t : writers) t.join();
  applied += c.Settle().size();
  EXPECT_EQ(applied, static_cast<size_t>(kThreads * kKeys));
  EXPECT_EQ(c.size(), static_cast<size_t>(kThreads * kKeys / 2)) << "the refused ones are forgotten";
  EXPECT_EQ(StateOf(c, "k1"), WriteState::kWritten);
  EXPECT_EQ(c.Find("k0"), nullptr);
}

TEST(LastWritten, OffersAWriteOnlyWhenItDiffersOrDidNotGo) {
  LastWritten<std::string> w;
  auto same = [](const std::string& a, const std::string& b) { return a == b; };
  std::vector<uint64_t> queued;
  auto queue = [&](uint64_t ticket, const std::string&) {
    queued.push_back(ticket);
    return true;
  };
  EXPECT_TRUE(w.Offer("f", "s1", same, queue));
  EXPECT_TRUE(w.Offer("f", "s1", same, queue));
  EXPECT_EQ(queued.size(), 1u) << "queued already";
  w.Finish("f", queued.back(), /*written=*/true);
  EXPECT_FALSE(w.Settle());
  EXPECT_TRUE(w.Offer("f", "s1", same, queue));
  EXPECT_EQ(queued.size(), 1u) << "written already";
  EXPECT_TRUE(w.Offer("f", "s2", same, queue));
  EXPECT_EQ(queued.size(), 2u);
  w.Finish("f", queued.back(), /*written=*/false);
  EXPECT_TRUE(w.Settle());
  EXPECT_TRUE(w.Offer("f", "s2", same, queue));
  EXPECT_EQ(queued.size(), 3u) << "a write that did not go is made again";
  // Not taken by a writer: nothing assumed, false, offered again next time.
  EXPECT_FALSE(w.Offer("g", "s1", same, [](uint64_t, const std::string&) { return false; }));
  EXPECT_TRUE(w.Offer("g", "s1", same, queue));
  EXPECT_EQ(queued.size(), 4u);
  w.Retain([](const std::string& k) { return k == "f"; });
  EXPECT_TRUE(w.Offer("g", "s1", same, queue));
  EXPECT_EQ(queued.size(), 5u) << "g was dropped";
}

// ---- WriteEntry: one key's entry, kept by its caller (RunMemo::admission, status_write) ----

TEST(WriteEntry, StartsNoneAndAnAssumptionIsHeldUntilErased) {
  WriteEntry<std::string> e;
  EXPECT_EQ(e.state, WriteState::kNone);
  EXPECT_FALSE(e.Held());
  EXPECT_FALSE(e.Finish(0, WriteAnswer::kWritten, 1)) << "nothing to answer";
  EXPECT_FALSE(e.Expire(kT0 + seconds(1000)));
  e.Assume("v1", /*ticket=*/7, /*base_rv=*/10);
  EXPECT_EQ(e.state, WriteState::kAssumed);
  EXPECT_TRUE(e.Held());
  EXPECT_EQ(e.ticket, 7u);
  EXPECT_EQ(e.base_rv, 10u);
  EXPECT_TRUE(e.Finish(7, WriteAnswer::kWritten, 12));
  EXPECT_EQ(e.state, WriteState::kWritten);
  EXPECT_TRUE(e.Held()) << "written, not yet watched";
  e.Confirm();
  EXPECT_FALSE(e.Held());
  EXPECT_FALSE(e.Finish(7, WriteAnswer::kRefused)) << "a Finish after Confirm changes nothing";
  EXPECT_EQ(e.state, WriteState::kConfirmed);
  e.Erase();
  EXPECT_EQ(e.state, WriteState::kNone);
  EXPECT_EQ(e.value, "");
}

TEST(WriteEntry, AnAnswerForAnotherTicketIsIgnored) {
  WriteEntry<std::string> e;
  e.Assume("v1", 1);
  EXPECT_FALSE(e.Finish(2, WriteAnswer::kRefused));
  EXPECT_EQ(e.state, WriteState::kAssumed);
  EXPECT_TRUE(e.Finish(1, WriteAnswer::kWritten, 5));
  e.Assume("v2", 2);
  EXPECT_FALSE(e.Finish(1, WriteAnswer::kRefused)) << "superseded";
  EXPECT_EQ(e.value, "v2");
  EXPECT_TRUE(e.Finish(2, WriteAnswer::kRefused));
  EXPECT_EQ(e.state, WriteState::kConfirmed);
  EXPECT_EQ(e.value, "v1") << "the value last known applied, restored";
}

TEST(WriteEntry, AnUnknownAnswerNamesTheGuardVersionAndIsVerifiedOnceUntilAnswered) {
  WriteEntry<std::string> e;
  e.Assume("v1", 1, /*base_rv=*/10);
  EXPECT_TRUE(e.Finish(1, WriteAnswer::kUnknown, /*rv=*/11));  // the finalizer write moved it
  EXPECT_EQ(e.state, WriteState::kUnknown);
  EXPECT_EQ(e.base_rv, 11u);
  EXPECT_TRUE(e.Held()) << "it may have been applied";
  EXPECT_TRUE(e.Expire(kT0));
  EXPECT_TRUE(e.verify);
  EXPECT_FALSE(e.Expire(kT0)) << "marked once";
  // The verifying read got no answer: Unknown still, marked again by the next Expire.
  EXPECT_TRUE(e.Finish(1, WriteAnswer::kUnknown));
  EXPECT_EQ(e.base_rv, 11u) << "an answer without a version keeps the guard";
  EXPECT_FALSE(e.verify);
  EXPECT_TRUE(e.Expire(kT0));
  // It says: not applied. Nothing was applied before: none.
  EXPECT_TRUE(e.Finish(1, WriteAnswer::kRefused));
  EXPECT_EQ(e.state, WriteState::kNone);
  EXPECT_FALSE(e.Held());
}

TEST(WriteEntry, ExpireMarksOnlyHeldEntriesOverdueOrUnknown) {
  WriteEntry<std::string> assumed;
  assumed.Assume("v", 1, 0, kT0 + seconds(10));
  EXPECT_FALSE(assumed.Expire(kT0 + seconds(9)));
  EXPECT_TRUE(assumed.Expire(kT0 + seconds(10)));
  EXPECT_EQ(assumed.state, WriteState::kUnknown);
  WriteEntry<std::string> written;
  written.Assume("v", 1);
  written.Finish(1, WriteAnswer::kWritten, 3);
  EXPECT_FALSE(written.Expire(kT0 + seconds(1000))) << "no deadline";
  written.Confirm();
  EXPECT_FALSE(written.Expire(base::TimePoint::max()));
  EXPECT_EQ(written.state, WriteState::kConfirmed);
}

TEST(WriteEntry, AValuelessWriteIsAwaitedAtItsLatestVersionUntilAdd) {
  WriteEntry<std::monostate> w;
  EXPECT_FALSE(w.Add(100)) << "nothing awaited";
  w.Wrote(12);
  w.Wrote(10);
  EXPECT_EQ(w.state, WriteState::kWritten);
  EXPECT_EQ(w.written_rv, 12u) << "the later version stays awaited";
  EXPECT_FALSE(w.Add(11));
  EXPECT_EQ(w.state, WriteState::kWritten);
  EXPECT_TRUE(w.Add(12));
  EXPECT_EQ(w.state, WriteState::kConfirmed);
  w.Wrote(5);  // a new write after the last was seen
  EXPECT_EQ(w.state, WriteState::kWritten);
  EXPECT_EQ(w.written_rv, 5u);
}

}  // namespace
}  // namespace berth::reconcilers
