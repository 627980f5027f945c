// Issue 15: the queuePositions a user reads across runs are one picture of the queue, also while
// a thousand runs arrive, change priority and leave. A sampler lists every run of the namespace
// (one List = one snapshot of the API) all the time and records every place two pending runs show
// at once; when the churn settles, the first 100 places must be exactly 1..100, in queue order.
// Its own binary: a thousand runs are more than the engine suite should carry.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine_fixture.h"
#include "k8s/json.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;

using k8s::resources::kRuns;

class Positions : public EngineTest {
 protected:
  Positions() {
    keep_runs_ = true;  // the control plane goes away with the binary
    metrics_port_ = FreePort();
    controller_args_ = {"--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_port_), "--queue-auth=false"};
  }
  int metrics_port_ = 0;

  // GET /queue?QUERY on the controller's metrics port, parsed (a null document on error).
  json::Document Queue(const std::string& query) {
    int code = 0;
    std::string body = HttpGet("http://127.0.0.1:" + std::to_string(metrics_port_) + "/queue?" + query, &code,
                               cp().AdminToken());
    auto doc = json::Parse(body);
    EXPECT_EQ(code, 200) << query << ": " << body;
    return doc.ok() ? std::move(*doc) : json::Document();
  }

  std::string RunBody(const std::string& name, int priority) const {
    return R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")" + name + R"(","namespace":")" +
           ns_ + R"("},"spec":{"priority":)" + std::to_string(priority) +
           R"(,"retry":{"onEvents":["no-capacity"],"duration":"off"},)"
           R"("template":{"spec":{"containers":[{"name":"main","image":"busybox"}]}}}})";
  }
  void Create(const std::string& name, int priority) {
    auto r = client()->Create(kRuns.Path(ns_), RunBody(name, priority));
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().ToString();
    priorities_[name] = priority;
  }

  // PATCHes of runs/status the API server has served so far (its own metrics).
  double StatusWrites() {
    CommandResult m = cp().Kubectl({"get", "--raw", "/metrics"});
    double total = 0;
    std::istringstream in(m.out);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("apiserver_request_total{", 0) != 0) continue;
      if (line.find("resource=\"runs\"") == std::string::npos || line.find("subresource=\"status\"") == std::string::npos ||
          line.find("verb=\"PATCH\"") == std::string::npos) {
        continue;
      }
      total += std::stod(line.substr(line.rfind(' ') + 1));
    }
    return total;
  }

  // True when the pending runs that show a place are exactly 1..min(100, pending), one run each,
  // in queue order (priority never rises down the list, and no run without a place outranks the
  // last one). `why` says what is not so yet.
  bool Settled(std::string& why) {
    auto l = client()->List(kRuns.Path(ns_));
    if (!l.ok()) {
      why = l.status().ToString();
      return false;
    }
    std::map<int64_t, std::vector<std::string>> shown;
    std::vector<std::string> unplaced;
    int pending = 0;
    for (auto& item : l->items) {
      if (json::GetString(json::Find(item, {"status", "phase"})) != "Pending") continue;
      if (json::Find(item, {"metadata", "deletionTimestamp"}) != nullptr) continue;
      ++pending;
      const std::string name = json::GetString(json::Find(item, {"metadata", "name"}));
      const json::Value* pos = json::Find(item, {"status", "queuePosition"});
      if (pos != nullptr && pos->IsInt64()) {
        shown[pos->GetInt64()].push_back(name);
      } else {
        unplaced.push_back(name);
      }
    }
    const int64_t want = std::min(pending, 100);
    if (static_cast<int64_t>(shown.size()) != want || (want > 0 && (shown.begin()->first != 1 || shown.rbegin()->first != want))) {
      why = std::to_string(shown.size()) + " places shown for " + std::to_string(pending) + " pending runs";
      return false;
    }
    int last = 101;
    for (const auto& [pos, names] : shown) {
      if (names.size() != 1) {
        why = "place " + std::to_string(pos) + " shown by " + std::to_string(names.size()) + " runs";
        return false;
      }
      const int p = priorities_.at(names[0]);
      if (p > last) {
        why = "place " + std::to_string(pos) + " (" + names[0] + ", priority " + std::to_string(p) +
              ") behind a lower priority";
        return false;
      }
      last = p;
    }
    for (const auto& name : unplaced) {
      if (priorities_.at(name) > last) {
        why = name + " (priority " + std::to_string(priorities_.at(name)) + ") has no place but outranks place " +
              std::to_string(want);
        return false;
      }
    }
    return true;
  }

  std::map<std::string, int> priorities_;
};

TEST_F(Positions, AThousandRunsArriveReorderAndLeaveAndNoTwoEverShowOnePlace) {
  const std::string kQueue = "  retry: {onEvents: [no-capacity], duration: \"off\"}\n";
  Nodes("pos", 1, "4", "8Gi");
  Fleet("pos", "pos");
  Run("blocker", kQueue);
  ASSERT_TRUE(WaitPhase("blocker", "Scheduled"));
  priorities_["blocker"] = 50;

  std::atomic<bool> stop{false};
  std::atomic<int> samples{0}, full_samples{0};
  std::mutex mu;
  std::vector<std::string> duplicates;
  std::thread sampler([&] {
    while (!stop) {
      auto shown = PendingPositions();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // pacing, not waiting for anything
      if (!shown) continue;
      ++samples;
      if (shown->size() >= 50) ++full_samples;
      for (const auto& [pos, names] : *shown) {
        if (names.size() < 2) continue;
        std::string d = "place " + std::to_string(pos) + ":";
        for (const auto& n : names) d += " " + n;
        std::lock_guard<std::mutex> lock(mu);
        duplicates.push_back(d);
      }
    }
  });

  std::mt19937 rng(15);
  std::uniform_int_distribution<int> priority(0, 100);
  const double writes_before = StatusWrites();
  const auto started = std::chrono::steady_clock::now();
  // Arrivals: a thousand runs of random priority.
  for (int i = 0; i < 1000; ++i) Create("r" + std::to_string(i), priority(rng));
  std::string why;
  EXPECT_TRUE(Eventually([&] { return Settled(why); }, std::chrono::seconds(300))) << "after 1,000 arrivals: " << why;

  // Reordering: a hundred priority changes; leaving: two hundred deletes; a hundred more arrive.
  std::vector<std::string> names;
  for (const auto& [name, p] : priorities_) {
    if (name != "blocker") names.push_back(name);
  }
  std::shuffle(names.begin(), names.end(), rng);
  for (int i = 0; i < 100; ++i) {
    const int p = priority(rng);
    auto r = client()->MergePatch(kRuns.Path(ns_, names[i]), R"({"spec":{"priority":)" + std::to_string(p) + "}}");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    priorities_[names[i]] = p;
  }
  for (int i = 100; i < 300; ++i) {
    k8s::Status s = client()->Delete(kRuns.Path(ns_, names[i]), {});
    ASSERT_TRUE(s.ok() || s.IsNotFound()) << s.ToString();
  }
  for (int i = 1000; i < 1100; ++i) Create("r" + std::to_string(i), priority(rng));
  EXPECT_TRUE(Eventually([&] { return Settled(why); }, std::chrono::seconds(300)))
      << "after 100 priority changes, 200 deletes and 100 arrivals: " << why;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double writes = StatusWrites() - writes_before;

  stop = true;
  sampler.join();

  // Issue 29 (10): /queue answers one bounded page (500 by default, at most 1000) and "continue"
  // leads through the rest; the pages together are the whole queue, positions 1..900 in order.
  json::Document page = Queue("namespace=" + ns_);
  ASSERT_TRUE(page.IsObject());
  EXPECT_EQ(json::GetInt(page, "total"), 900);
  EXPECT_EQ(page["items"].Size(), 500u) << "the default page";
  EXPECT_EQ(json::GetString(page, "continue"), "500");
  std::vector<int64_t> seen;
  for (std::string token;;) {
    page = Queue("namespace=" + ns_ + "&limit=300" + (token.empty() ? "" : "&continue=" + token));
    ASSERT_TRUE(page.IsObject());
    ASSERT_LE(page["items"].Size(), 300u);
    for (const auto& item : page["items"].GetArray()) seen.push_back(json::GetInt(item, "position"));
    token = json::GetString(page, "continue");
    if (token.empty()) break;
    ASSERT_LT(seen.size(), 2000u) << "continue never ends";
  }
  ASSERT_EQ(seen.size(), 900u);
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], static_cast<int64_t>(i + 1)) << "at " << i;
  page = Queue("limit=99999");
  ASSERT_TRUE(page.IsObject());
  EXPECT_EQ(page["items"].Size(), 900u) << "a limit above the most a page holds (1000) is that most, not an error";
  EXPECT_FALSE(json::Find(page, {"continue"}));
  // What it cost (docs/performance.md records it): every runs/status PATCH the API server served,
  // positions and waiting messages together.
  std::cout << "positions: 1,100 arrivals, 100 priority changes, 200 deletes settled in " << seconds << " s with "
            << writes << " run status writes (" << writes / seconds << " per second); " << samples.load()
            << " samples, " << full_samples.load() << " with at least 50 places shown" << std::endl;
  EXPECT_GT(full_samples.load(), 0) << "no sample saw the queue (" << samples.load() << " samples)";
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_TRUE(duplicates.empty()) << duplicates.size() << " places shown by two runs at once in " << samples.load()
                                  << " samples, first: " << duplicates.front();
}

}  // namespace
}  // namespace berth::testing
