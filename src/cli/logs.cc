#include "cli/logs.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <ostream>
#include <thread>

#include "api/v1alpha1/enums.h"
#include "k8s/client.h"

namespace berth::cli {

namespace json = k8s::json;
using k8s::Status;
using runops::LogPath;
using runops::SplitLog;

namespace {

std::string Digits(const std::string& s, size_t from, size_t n) {
  if (from + n > s.size()) return "";
  for (size_t i = from; i < from + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return "";
  }
  return s.substr(from, n);
}

}  // namespace

std::pair<std::string, std::string> SplitTimestamp(const std::string& line) {
  size_t sp = line.find(' ');
  std::string ts = sp == std::string::npos ? line : line.substr(0, sp);
  if (TimeKey(ts).empty()) return {"", line};
  return {ts, sp == std::string::npos ? "" : line.substr(sp + 1)};
}

std::string TimeKey(const std::string& t) {
  // YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z
  if (t.size() < 20 || t.back() != 'Z' || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' || t[16] != ':') return "";
  if (Digits(t, 0, 4).empty() || Digits(t, 5, 2).empty() || Digits(t, 8, 2).empty() || Digits(t, 11, 2).empty() ||
      Digits(t, 14, 2).empty() || Digits(t, 17, 2).empty()) {
    return "";
  }
  std::string fraction;
  if (t.size() > 20) {
    if (t[19] != '.') return "";
    fraction = t.substr(20, t.size() - 21);
    if (fraction.empty() || fraction.size() > 9 || Digits(fraction, 0, fraction.size()).empty()) return "";
  } else if (t[19] != 'Z') {
    return "";
  }
  fraction.resize(9, '0');
  return t.substr(0, 19) + "." + fraction;
}

std::string WholeSeconds(const std::string& t) {
  if (TimeKey(t).empty()) return "";
  return t.substr(0, 19) + "Z";
}

ContainerPhase PhaseOf(const json::Value& pod, const std::string& container, std::string* why) {
  const std::string phase = json::GetString(json::Find(pod, {"status", "phase"}));
  const json::Value* statuses = json::Find(pod, {"status", "containerStatuses"});
  if (statuses != nullptr && statuses->IsArray()) {
    for (const auto& cs : statuses->GetArray()) {
      if (json::GetString(cs, "name") != container) continue;
      if (json::Find(cs, {"state", "running"}) != nullptr) return ContainerPhase::kRunning;
      if (json::Find(cs, {"state", "terminated"}) != nullptr) return ContainerPhase::kEnded;
      if (const json::Value* w = json::Find(cs, {"state", "waiting"})) {
        const std::string reason = json::GetString(*w, "reason");
        if (reason.empty() || reason == "ContainerCreating" || reason == "PodInitializing") break;
        if (why != nullptr) {
          const std::string message = json::GetString(*w, "message");
          *why = reason + (message.empty() ? "" : ": " + message);
        }
        return ContainerPhase::kCannotStart;
      }
    }
  }
  if (api::v1alpha1::IsPodPhase(phase, api::v1alpha1::PodPhase::kSucceeded) || api::v1alpha1::IsPodPhase(phase, api::v1alpha1::PodPhase::kFailed)) {
    return ContainerPhase::kEnded;
  }
  return ContainerPhase::kNotStarted;
}

bool PrintLogs(k8s::Transport& transport, const std::string& ns, const std::vector<LogTarget>& targets,
               std::ostream& out, std::ostream& err) {
  bool ok = true;
  for (const auto& t : targets) {
    k8s::HttpRequest req;
    req.method = "GET";
    req.path = LogPath(ns, t, false);
    auto r = transport.Send(req);
    if (!r.ok()) {
      err << "error: rank " << t.rank << ": " << r.status().message() << "\n";
      ok = false;
      continue;
    }
    if (r->status < 200 || r->status >= 300) {
      err << "error: rank " << t.rank << ": " << k8s::Client::ErrorFromResponse(*r).message() << "\n";
      ok = false;
      continue;
    }
    const std::string prefix = "[rank " + std::to_string(t.rank) + "] ";
    for (const auto& line : SplitLog(r->body)) out << prefix << line << "\n";
    out.flush();
  }
  return ok;
}

namespace {

// Follows one rank (see FollowLogs). `print` writes one whole line; `fail` one error sentence.
bool FollowOne(k8s::Transport& transport, const std::string& ns, const LogTarget& t,
               const std::function<void(const std::string&)>& print, const std::function<void(const std::string&)>& fail) {
  const std::string prefix = "[rank " + std::to_string(t.rank) + "] ";
  const std::string pod_path = "/api/v1/namespaces/" + k8s::UrlEncode(ns) + "/pods/" + k8s::UrlEncode(t.pod);
  std::string last_ts, last_key;
  int failures = 0;
  while (true) {
    k8s::HttpRequest get;
    get.method = "GET";
    get.path = pod_path;
    auto r = transport.Send(get);
    if (!r.ok() || r->status == 429 || r->status >= 500) {
      if (++failures > 5) {
        fail(r.ok() ? k8s::Client::ErrorFromResponse(*r).message() : r.status().message());
        return false;
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    if (r->status == 404) {
      if (!last_key.empty()) return true;  // deleted after it ran: everything it wrote was shown
      fail("pod " + t.pod + " is gone");
      return false;
    }
    if (r->status < 200 || r->status >= 300) {
      fail(k8s::Client::ErrorFromResponse(*r).message());
      return false;
    }
    auto pod = json::Parse(r->body);
    if (!pod.ok()) {
      fail("cannot read pod " + t.pod + ": " + pod.status().message());
      return false;
    }
    std::string why;
    const ContainerPhase before = PhaseOf(*pod, t.container, &why);
    if (before == ContainerPhase::kCannotStart) {
      fail("pod " + t.pod + " cannot start: " + why);
      return false;
    }
    if (before == ContainerPhase::kNotStarted) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    k8s::HttpRequest req;
    req.method = "GET";
    req.path = LogPath(ns, t, true, WholeSeconds(last_ts));
    bool got_line = false;
    auto s = transport.Stream(
        req,
        [&](std::string& line) {
          auto [ts, text] = SplitTimestamp(line);
          const std::string key = TimeKey(ts);
          // After a reconnect (sinceTime has whole seconds) lines already shown come again.
          if (!key.empty() && !last_key.empty() && key <= last_key) return true;
          if (!key.empty()) {
            last_key = key;
            last_ts = ts;
          }
          got_line = true;
          print(prefix + text);
          return true;
        },
        nullptr, 3600);
    if (got_line) failures = 0;
    if (!s.ok() || s->status == 429 || s->status >= 500 || s->status == 400) {
      // No answer, or the container is between states (400: "waiting to start"): ask again.
      if (++failures > 5) {
        fail(s.ok() ? k8s::Client::ErrorFromResponse(*s).message() : s.status().message());
        return false;
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    if (s->status < 200 || s->status >= 300) {
      fail(k8s::Client::ErrorFromResponse(*s).message());
      return false;
    }
    // The kubelet ends a follow when the container ends, after its last line.
    if (before == ContainerPhase::kEnded) return true;
    // Ended while followed, or the stream was cut: the loop looks at the Pod again (and reads
    // what came after the last line shown).
  }
}

}  // namespace

bool FollowLogs(k8s::Transport& transport, const std::string& ns, const std::vector<LogTarget>& targets,
                std::ostream& out, std::ostream& err) {
  std::mutex mu;
  auto print = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    out << line << "\n";
    out.flush();
  };
  std::vector<char> ok(targets.size(), 1);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < targets.size(); ++i) {
    threads.emplace_back([&, i] {
      const LogTarget& t = targets[i];
      auto fail = [&](const std::string& why) {
        std::lock_guard<std::mutex> lock(mu);
        err << "error: rank " << t.rank << ": " << why << "\n";
        err.flush();
      };
      ok[i] = FollowOne(transport, ns, t, print, fail) ? 1 : 0;
    });
  }
  for (auto& th : threads) th.join();
  return std::all_of(ok.begin(), ok.end(), [](char c) { return c != 0; });
}

}  // namespace berth::cli
