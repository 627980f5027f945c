#pragma once
// What a caller of the controller's queue (/queue, /api/queue) may see (issue 29, 8). Asked of
// the API server as a SelfSubjectAccessReview made with the caller's own bearer token: every
// authenticated user may create one, so berth needs no right of its own for it (no TokenReview,
// no SubjectAccessReview), and the answer is what `kubectl auth can-i list runs.berth.dev` says
// for that token. Answers are kept briefly, per token digest (SHA-256, never the token itself) and
// question, in a bounded cache.

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "base/time.h"
#include "k8s/client.h"
#include "k8s/result.h"

namespace berth::controller {

struct AccessQuestion {
  std::string group, resource, verb;
  std::string ns;  // empty: cluster-wide (for a namespaced resource: in every namespace)
};

class AccessReview {
 public:
  // `viewer_client` must hold no credentials of its own (no client certificate, no token): every
  // review is made with the caller's token only (see Manager).
  AccessReview(k8s::ClientPtr viewer_client, const base::Clock& clock,
               std::chrono::milliseconds ttl = std::chrono::seconds(10), size_t max_entries = 4096);

  // Whether the holder of `token` may do `q`. An error with code 401 when the token is empty or
  // the API server refuses it; with the API server's code (or 0) when it gave no answer. Errors
  // are not kept. A kept answer is used for `ttl`, so a right granted or revoked shows within it.
  k8s::Result<bool> Allowed(const std::string& token, const AccessQuestion& q) const;

  size_t cached() const;

 private:
  struct Entry {
    bool allowed;
    base::MonoTime expires;
  };
  k8s::ClientPtr client_;
  const base::Clock& clock_;
  std::chrono::milliseconds ttl_;
  size_t max_entries_;
  mutable std::mutex mu_;
  mutable std::map<std::string, Entry> cache_;  // sha256(token) + question -> answer
};

// The namespaces of the queue a caller is shown: every one, or those listed.
struct QueueScope {
  bool all = false;
  std::set<std::string> namespaces;
  bool Shows(const std::string& ns) const { return all || namespaces.count(ns) != 0; }
};

// What the holder of `token` may see of a queue whose runs are in `present` (namespaces): all of
// it when it may list runs.berth.dev cluster-wide; else the namespaces of `present` where it may
// list them (one review each, kept as above). `asked_ns` (the query's namespace, or empty): only
// that one; when the caller may not list runs there, an error with code 403 and a sentence.
// Errors: 401 (no token, or one the API server refuses), 502 (the API server did not answer).
k8s::Result<QueueScope> QueueScopeFor(const AccessReview& reviews, const std::string& token, const std::string& asked_ns,
                                      const std::set<std::string>& present);

}  // namespace berth::controller
