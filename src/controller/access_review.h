#pragma once
// What a caller of the aggregated queue API may see (issue 29, 8; issue 44, 4). The caller is the
// user the API server authenticated and named in front-proxy headers (controller/front_proxy.h):
// berth never holds the caller's credential. It asks the API server a SubjectAccessReview about
// that user with its own identity (its ServiceAccount may create subjectaccessreviews, nothing
// more), and the answer is what `kubectl auth can-i list runs.berth.dev --as USER` says. Answers are
// kept briefly, per user (name, uid, groups, extra: its SHA-256) and question, in a bounded cache
// that forgets the least recently used answer when full.

#include <chrono>
#include <cstddef>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "base/time.h"
#include "controller/front_proxy.h"
#include "k8s/client.h"
#include "k8s/result.h"

namespace berth::controller {

struct AccessQuestion {
  std::string group, resource, verb;
  std::string ns;  // empty: cluster-wide (for a namespaced resource: in every namespace)
};

// The SubjectAccessReview of `user` and `q` (authorization.k8s.io/v1).
std::string SubjectAccessReviewBody(const UserInfo& user, const AccessQuestion& q);

class AccessReview {
 public:
  // `reviewer`: berth's own client, allowed to create subjectaccessreviews; it must not be held
  // back by leader election's write guard (a standby answers the queue API too: see Manager).
  AccessReview(k8s::ClientPtr reviewer, const base::Clock& clock, std::chrono::milliseconds ttl = std::chrono::seconds(10),
               size_t max_entries = 4096);

  // Whether `user` may do `q`. An error with code 401 for a user without a name; with code 502 and
  // a sentence when the API server gave no answer or refused berth the review (berth lacks the
  // right to create subjectaccessreviews). Errors are not kept. A kept answer is used for `ttl`,
  // so a right granted or revoked shows within it; when `max_entries` answers are kept, the least
  // recently used one makes room (never all of them: one busy caller does not make every other
  // ask again).
  k8s::Result<bool> Allowed(const UserInfo& user, const AccessQuestion& q) const;

  size_t cached() const;

 private:
  struct Entry {
    bool allowed;
    base::MonoTime expires;
    std::list<std::string>::iterator use;  // its place in `lru_`
  };
  k8s::ClientPtr client_;
  const base::Clock& clock_;
  std::chrono::milliseconds ttl_;
  size_t max_entries_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, Entry> cache_;  // sha256(user) + question -> answer
  mutable std::list<std::string> lru_;                     // keys, most recently used first
};

// The namespaces of the queue a caller is shown: every one, or those listed.
struct QueueScope {
  bool all = false;
  std::set<std::string> namespaces;
  bool Shows(const std::string& ns) const { return all || namespaces.count(ns) != 0; }
};

// The most namespaces one request has reviewed one by one (a caller who may not list runs
// cluster-wide): with more in the queue the answer is a 403 asking for one namespace, so one
// request costs the API server at most this many reviews.
inline constexpr size_t kMaxReviewedNamespaces = 256;

// What `user` may see of a queue whose runs are in `present` (namespaces): all of it when it may
// list runs.berth.dev cluster-wide; else the namespaces of `present` where it may list them (one
// review each, kept as above; more than kMaxReviewedNamespaces: 403). `asked_ns` (the request's
// namespace, or empty): only that one; when the user may not list runs there, an error with code
// 403 and a sentence. Errors: 401 (no user), 502 (no answer from the API server).
k8s::Result<QueueScope> QueueScopeFor(const AccessReview& reviews, const UserInfo& user, const std::string& asked_ns,
                                      const std::set<std::string>& present);

}  // namespace berth::controller
