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

ContainerPhase PhaseOf(const k8s::PodView& pod, const std::string& container, std::string* why) {
  for (const auto& cs : pod.statuses) {
    if (cs.name != container) continue;
    if (cs.running) return ContainerPhase::kRunning;
    if (cs.terminated) return ContainerPhase::kEnded;
    if (cs.waiting) {
      const std::string& reason = cs.waiting_reason;
      if (reason.empty() || reason == "ContainerCreating" || reason == "PodInitializing") break;
      if (why != nullptr) *why = reason + (cs.waiting_message.empty() ? "" : ": " + cs.waiting_message);
      return ContainerPhase::kCannotStart;
    }
  }
  if (api::v1alpha1::IsPodPhase(pod.phase, api::v1alpha1::PodPhase::kSucceeded) ||
      api::v1alpha1::IsPodPhase(pod.phase, api::v1alpha1::PodPhase::kFailed)) {
    return ContainerPhase::kEnded;
  }
  return ContainerPhase::kNotStarted;
}

ContainerPhase PhaseOf(const k8s::json::Value& pod, const std::string& container, std::string* why) {
  return PhaseOf(k8s::DecodePodView(pod), container, why);
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
class RankFollower {
 public:
  using LineFn = std::function<void(const std::string&)>;
  RankFollower(k8s::Transport& transport, const std::string& ns, const LogTarget& t, const LineFn& print,
               const LineFn& fail)
      : transport_(transport), ns_(ns), t_(t), print_(print), fail_(fail),
        prefix_("[rank " + std::to_string(t.rank) + "] "),
        pod_path_("/api/v1/namespaces/" + k8s::UrlEncode(ns) + "/pods/" + k8s::UrlEncode(t.pod)) {}

  bool Run() {
    while (true) {
      ContainerPhase before = ContainerPhase::kNotStarted;
      Step step = ReadPod(before);
      if (step == Step::kGo) step = StreamLogs();
      if (step == Step::kRetry) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        continue;
      }
      if (step != Step::kGo) return step == Step::kDone;
      // The kubelet ends a follow when the container ends, after its last line.
      if (before == ContainerPhase::kEnded) return true;
      // Ended while followed, or the stream was cut: the loop looks at the Pod again (and reads
      // what came after the last line shown).
    }
  }

 private:
  enum class Step { kGo, kRetry, kDone, kFailed };

  Step Fail(const std::string& why) {
    fail_(why);
    return Step::kFailed;
  }

  // No answer or a server error: retry, up to 5 times in a row.
  Step RetryOrFail(const std::string& why) { return ++failures_ > 5 ? Fail(why) : Step::kRetry; }

  // The Pod's container: kGo once it has started (`before` says whether it has ended).
  Step ReadPod(ContainerPhase& before) {
    k8s::HttpRequest get;
    get.method = "GET";
    get.path = pod_path_;
    auto r = transport_.Send(get);
    if (!r.ok() || r->status == 429 || r->status >= 500) {
      return RetryOrFail(r.ok() ? k8s::Client::ErrorFromResponse(*r).message() : r.status().message());
    }
    if (r->status == 404) {
      if (!last_key_.empty()) return Step::kDone;  // deleted after it ran: everything it wrote was shown
      return Fail("pod " + t_.pod + " is gone");
    }
    if (r->status < 200 || r->status >= 300) return Fail(k8s::Client::ErrorFromResponse(*r).message());
    auto pod = k8s::ParsePodView(r->body);
    if (!pod.ok()) return Fail("cannot read pod " + t_.pod + ": " + pod.status().message());
    std::string why;
    before = PhaseOf(*pod, t_.container, &why);
    if (before == ContainerPhase::kCannotStart) return Fail("pod " + t_.pod + " cannot start: " + why);
    if (before == ContainerPhase::kNotStarted) return Step::kRetry;
    return Step::kGo;
  }

  // Follows the container's log from the last line shown until the stream ends.
  Step StreamLogs() {
    k8s::HttpRequest req;
    req.method = "GET";
    req.path = LogPath(ns_, t_, true, WholeSeconds(last_ts_));
    bool got_line = false;
    auto s = transport_.Stream(
        req,
        [&](std::string& line) {
          auto [ts, text] = SplitTimestamp(line);
          const std::string key = TimeKey(ts);
          // After a reconnect (sinceTime has whole seconds) lines already shown come again.
          if (!key.empty() && !last_key_.empty() && key <= last_key_) return true;
          if (!key.empty()) {
            last_key_ = key;
            last_ts_ = ts;
          }
          got_line = true;
          print_(prefix_ + text);
          return true;
        },
        nullptr, 3600);
    if (got_line) failures_ = 0;
    if (!s.ok() || s->status == 429 || s->status >= 500 || s->status == 400) {
      // No answer, or the container is between states (400: "waiting to start"): ask again.
      return RetryOrFail(s.ok() ? k8s::Client::ErrorFromResponse(*s).message() : s.status().message());
    }
    if (s->status < 200 || s->status >= 300) return Fail(k8s::Client::ErrorFromResponse(*s).message());
    return Step::kGo;
  }

  k8s::Transport& transport_;
  const std::string& ns_;
  const LogTarget& t_;
  const LineFn& print_;
  const LineFn& fail_;
  const std::string prefix_;
  const std::string pod_path_;
  std::string last_ts_, last_key_;
  int failures_ = 0;
};

bool FollowOne(k8s::Transport& transport, const std::string& ns, const LogTarget& t,
               const std::function<void(const std::string&)>& print, const std::function<void(const std::string&)>& fail) {
  return RankFollower(transport, ns, t, print, fail).Run();
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
