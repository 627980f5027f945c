#include "invariants.h"

#include <gtest/gtest.h>

#include "k8s/json.h"

namespace berth::testing {

namespace json = k8s::json;
using k8s::resources::kFleets;
using k8s::resources::kPods;
using k8s::resources::kRuns;

namespace {

bool Placed(const std::string& phase) { return phase == "Scheduled" || phase == "Running"; }

std::string Name(const json::Value& obj) { return json::GetString(json::Find(obj, {"metadata", "name"})); }

int64_t SpecNodes(const json::Value& run) {
  const json::Value* n = json::Find(run, {"spec", "nodes"});
  return n != nullptr && n->IsInt64() ? n->GetInt64() : 1;
}

// spec.wholeInstances: every rank on a whole instance (absent: when nodes > 1); a gang of slices
// (false, nodes > 1) may put several ranks on one instance.
bool SpecWholeInstances(const json::Value& run, int64_t nodes) {
  const json::Value* w = json::Find(run, {"spec", "wholeInstances"});
  return w != nullptr && w->IsBool() ? w->GetBool() : nodes > 1;
}

// BERTH_BLOCKS of the pod's first container (berth sets it on every container).
int PodBlocks(const json::Value& pod) {
  const json::Value* containers = json::Find(pod, {"spec", "containers"});
  if (containers == nullptr || !containers->IsArray() || containers->Empty()) return 0;
  const json::Value* env = json::Find((*containers)[0], {"env"});
  if (env == nullptr || !env->IsArray()) return 0;
  for (const auto& e : env->GetArray()) {
    if (json::GetString(e, "name") == "BERTH_BLOCKS") return std::atoi(json::GetString(e, "value").c_str());
  }
  return 0;
}

bool LivePod(const json::Value& pod) {
  std::string phase = json::GetString(json::Find(pod, {"status", "phase"}));
  return !json::GetString(json::Find(pod, {"spec", "nodeName"})).empty() && phase != "Succeeded" &&
         phase != "Failed" && json::Find(pod, {"metadata", "deletionTimestamp"}) == nullptr;
}

std::string Label(const json::Value& obj, const char* key) {
  const json::Value* labels = json::Find(obj, {"metadata", "labels"});
  return labels == nullptr ? std::string() : json::GetString(*labels, key);
}

}  // namespace

InvariantSampler::InvariantSampler(k8s::ClientPtr client, std::string ns, std::string fleet,
                                   std::map<std::string, int> total_blocks)
    : client_(std::move(client)), ns_(std::move(ns)), fleet_(std::move(fleet)), total_blocks_(std::move(total_blocks)) {}

InvariantSampler::~InvariantSampler() { Stop(); }

void InvariantSampler::Start(std::chrono::milliseconds period) {
  stop_ = false;
  thread_ = std::thread([this, period] {
    while (!stop_) {
      SampleOnce();
      std::this_thread::sleep_for(period);
    }
  });
}

void InvariantSampler::SetSelector(std::string label_selector) {
  std::lock_guard<std::mutex> lock(mu_);
  selector_ = std::move(label_selector);
}

void InvariantSampler::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void InvariantSampler::Violation(std::string what) {
  std::lock_guard<std::mutex> lock(mu_);
  if (violations_.size() < 200) violations_.push_back(std::move(what));
}

std::vector<std::string> InvariantSampler::violations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return violations_;
}

std::map<std::string, std::set<std::string>> InvariantSampler::started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return started_;
}

void InvariantSampler::SampleOnce() {
  // The API may be down on purpose (API server or etcd restarts): a failed read is no sample.
  // From the API server's watch cache (resourceVersion 0, no pages): a selected list of a few
  // hundred objects stays cheap however many other runs the namespace holds.
  k8s::ListOptions opts;
  opts.resource_version = "0";
  opts.limit = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    opts.label_selector = selector_;
  }
  auto runs = client_->List(kRuns.Path(ns_), opts);
  if (!runs.ok()) return;
  auto pods = client_->List(kPods.Path(ns_), opts);
  if (!pods.ok()) return;
  auto fleet = client_->Get(kFleets.Path("", fleet_));
  if (!fleet.ok()) return;
  ++samples_;
  int64_t checks = 0;
  bool saw_placed = false;

  // Blocks by the runs' placements.
  std::map<std::string, int> by_runs;
  std::map<std::string, std::set<std::string>> started_now;
  for (const auto& run : runs->items) {
    const std::string name = Name(run);
    const std::string phase = json::GetString(json::Find(run, {"status", "phase"}));
    const json::Value* placement = json::Find(run, {"status", "placement"});
    const size_t entries = placement != nullptr && placement->IsArray() ? placement->Size() : 0;
    ++checks;
    if (phase == "Pending" && entries != 0) Violation("pending run " + name + " still holds a placement");
    if (!Placed(phase) && phase != "Succeeded") continue;
    if (Placed(phase) && entries > 0) saw_placed = true;
    const int64_t nodes = SpecNodes(run);
    const bool whole = SpecWholeInstances(run, nodes);
    ++checks;
    if (static_cast<int64_t>(entries) != nodes) {
      Violation(phase + " run " + name + " has " + std::to_string(entries) + " placement entries for " +
                std::to_string(nodes) + " nodes (not all-or-nothing)");
      continue;
    }
    std::set<std::string> distinct;
    const std::string uid = json::GetString(json::Find(run, {"metadata", "uid"}));
    for (const auto& p : placement->GetArray()) {
      std::string node = json::GetString(p, "node");
      int blocks = static_cast<int>(json::GetInt(p, "blocks"));
      distinct.insert(node);
      auto total = total_blocks_.find(node);
      ++checks;
      if (total == total_blocks_.end()) {
        Violation("run " + name + " is placed on " + node + ", which is not an instance of " + fleet_);
        continue;
      }
      if (whole && blocks != total->second) {
        Violation("whole-instance run " + name + " has " + std::to_string(blocks) + " of " + std::to_string(total->second) +
                  " blocks of " + node + " (must take whole instances)");
      }
      if (Placed(phase)) by_runs[node] += blocks;
      if (phase == "Running" || phase == "Succeeded") started_now[node].insert(uid);
    }
    ++checks;
    if (static_cast<int64_t>(distinct.size()) != nodes && (whole || nodes == 1)) {
      Violation("run " + name + " uses one instance twice");
    }
  }
  for (const auto& [node, used] : by_runs) {
    ++checks;
    if (used > total_blocks_[node]) {
      Violation("instance " + node + " is over-booked by placements: " + std::to_string(used) + " of " +
                std::to_string(total_blocks_[node]) + " blocks");
    }
  }

  // Blocks by the live Pods; duplicate ranks.
  std::map<std::string, int> by_pods;
  std::set<std::string> ranks;
  for (const auto& pod : pods->items) {
    if (!LivePod(pod)) continue;
    std::string node = json::GetString(json::Find(pod, {"spec", "nodeName"}));
    by_pods[node] += PodBlocks(pod);
    std::string rank_key = Label(pod, "berth.dev/run") + "/" + Label(pod, "berth.dev/attempt") + "/" +
                           Label(pod, "berth.dev/rank");
    ++checks;
    if (!ranks.insert(rank_key).second) Violation("two live pods for run/attempt/rank " + rank_key);
  }
  for (const auto& [node, used] : by_pods) {
    auto total = total_blocks_.find(node);
    ++checks;
    if (total != total_blocks_.end() && used > total->second) {
      Violation("instance " + node + " runs pods holding " + std::to_string(used) + " of " +
                std::to_string(total->second) + " blocks");
    }
  }

  // The durable count.
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [node, uids] : started_now) started_[node].insert(uids.begin(), uids.end());
  }
  const json::Value* instances = json::Find(*fleet, {"status", "instances"});
  if (instances != nullptr && instances->IsArray()) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& inst : instances->GetArray()) {
      std::string node = json::GetString(inst, "node");
      std::string key = node + "/" + json::GetString(inst, "uid");
      int64_t count = json::GetInt(inst, "runsStarted");
      checks += 2;
      auto last = last_runs_started_.find(key);
      if (last != last_runs_started_.end() && count < last->second && violations_.size() < 200) {
        violations_.push_back("runsStarted of " + node + " went down from " + std::to_string(last->second) + " to " +
                              std::to_string(count));
      }
      last_runs_started_[key] = count;
      size_t seen = started_.count(node) ? started_[node].size() : 0;
      if (static_cast<size_t>(count) < seen && violations_.size() < 200) {
        violations_.push_back("runsStarted of " + node + " is " + std::to_string(count) + " but " +
                              std::to_string(seen) + " runs were seen started on it");
      }
    }
  }
  checks_ += checks;
  if (saw_placed) ++placed_samples_;
}

void InvariantSampler::CheckSettled(const std::string& expected_phase) {
  k8s::ListOptions opts;  // a quorum read: what etcd holds now
  opts.limit = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    opts.label_selector = selector_;
  }
  auto runs = client_->List(kRuns.Path(ns_), opts);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  auto pods = client_->List(kPods.Path(ns_), opts);
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  // pod name -> (run, node) expected from the placements of the runs' last attempts.
  std::map<std::string, std::pair<std::string, std::string>> expected;
  std::map<std::string, std::set<std::string>> started_final;
  for (const auto& run : runs->items) {
    const std::string name = Name(run);
    const std::string phase = json::GetString(json::Find(run, {"status", "phase"}));
    if (!expected_phase.empty()) {
      EXPECT_EQ(phase, expected_phase) << "run " << name << ": " << json::GetString(json::Find(run, {"status", "message"}));
    }
    ++checks_;
    const json::Value* placement = json::Find(run, {"status", "placement"});
    if (placement == nullptr || !placement->IsArray()) continue;
    for (const auto& p : placement->GetArray()) {
      expected[json::GetString(p, "pod")] = {name, json::GetString(p, "node")};
      if (phase == "Succeeded" || phase == "Running") {
        started_final[json::GetString(p, "node")].insert(json::GetString(json::Find(run, {"metadata", "uid"})));
      }
    }
  }
  std::set<std::string> seen;
  for (const auto& pod : pods->items) {
    const std::string name = Name(pod);
    ++checks_;
    auto it = expected.find(name);
    if (it == expected.end()) {
      if (json::Find(pod, {"metadata", "deletionTimestamp"}) == nullptr) {
        ADD_FAILURE() << "orphan pod " << name << " (run " << Label(pod, "berth.dev/run") << ") is in no placement";
      }
      continue;
    }
    EXPECT_EQ(json::GetString(json::Find(pod, {"spec", "nodeName"})), it->second.second) << "pod " << name;
    seen.insert(name);
  }
  for (const auto& [pod, owner] : expected) {
    ++checks_;
    EXPECT_TRUE(seen.count(pod)) << "run " << owner.first << " misses its pod " << pod << " (not all-or-nothing)";
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [node, uids] : started_final) started_[node].insert(uids.begin(), uids.end());
  }
  // The Fleet status follows the runs within a few passes (after an API outage its writes back
  // off for up to 30 s): wait for it, then every instance must agree.
  auto started_all = started();
  std::vector<std::string> mismatches;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  do {
    mismatches.clear();
    auto fleet = client_->Get(kFleets.Path("", fleet_));
    const json::Value* instances = fleet.ok() ? json::Find(*fleet, {"status", "instances"}) : nullptr;
    if (instances == nullptr || !instances->IsArray()) {
      mismatches.push_back("fleet " + fleet_ + " has no instances in its status");
    } else {
      for (const auto& inst : instances->GetArray()) {
        std::string node = json::GetString(inst, "node");
        if (expected_phase == "Succeeded" && json::GetInt(inst, "busyBlocks") != 0) {
          mismatches.push_back(node + " still has " + std::to_string(json::GetInt(inst, "busyBlocks")) + " busy blocks");
        }
        size_t real = started_all.count(node) ? started_all[node].size() : 0;
        if (json::GetInt(inst, "runsStarted") != static_cast<int64_t>(real)) {
          std::string counted;
          if (const json::Value* c = json::Find(inst, {"countedRuns"}); c != nullptr && c->IsArray()) {
            for (const auto& u : c->GetArray()) {
              std::string uid = u.IsString() ? u.GetString() : "?";
              counted += " " + uid + (started_all[node].count(uid) ? "" : "(never seen started)");
            }
          }
          mismatches.push_back("runsStarted of " + node + " is " + std::to_string(json::GetInt(inst, "runsStarted")) +
                               ", runs really started there: " + std::to_string(real) + "; countedRuns:" + counted);
        }
      }
    }
    if (mismatches.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  } while (std::chrono::steady_clock::now() < deadline);
  checks_ += static_cast<int64_t>(total_blocks_.size()) * 2;
  for (const auto& m : mismatches) ADD_FAILURE() << m;
}

}  // namespace berth::testing
