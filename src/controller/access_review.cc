#include "controller/access_review.h"

#include <openssl/evp.h>

#include <algorithm>

#include "k8s/core_types.h"

namespace berth::controller {

namespace {

std::string Sha256Hex(const std::string& s) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(s.data(), s.size(), digest, &n, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

constexpr const char* kReviews = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

std::string ReviewBody(const AccessQuestion& q) { return k8s::SelfSubjectAccessReviewBody(q.group, q.resource, q.verb, q.ns); }

AccessQuestion ListRuns(const std::string& ns) { return AccessQuestion{"berth.dev", "runs", "list", ns}; }

}  // namespace

AccessReview::AccessReview(k8s::ClientPtr viewer_client, const base::Clock& clock, std::chrono::milliseconds ttl,
                           size_t max_entries)
    : client_(std::move(viewer_client)), clock_(clock), ttl_(ttl), max_entries_(std::max<size_t>(1, max_entries)) {}

k8s::Result<bool> AccessReview::Allowed(const std::string& token, const AccessQuestion& q) const {
  if (token.empty()) return k8s::Status::Error("no bearer token", 401, "Unauthorized");
  const std::string key = Sha256Hex(token) + "\n" + q.group + "\n" + q.resource + "\n" + q.verb + "\n" + q.ns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end() && it->second.expires > clock_.Monotonic()) return it->second.allowed;
  }
  auto r = client_->Create(kReviews, ReviewBody(q), token);
  bool yes = false;
  if (r.ok()) {
    yes = k8s::AccessReviewAllowed(*r);
  } else if (!r.status().IsForbidden()) {
    // 401: the token is refused; anything else: no answer. (Forbidden to ask at all: not allowed.)
    return r.status();
  }
  const base::MonoTime now = clock_.Monotonic();
  std::lock_guard<std::mutex> lock(mu_);
  if (cache_.size() >= max_entries_) {
    for (auto it = cache_.begin(); it != cache_.end();) it = it->second.expires <= now ? cache_.erase(it) : std::next(it);
    if (cache_.size() >= max_entries_) cache_.clear();  // bounded: every answer is asked again
  }
  cache_[key] = Entry{yes, now + ttl_};
  return yes;
}

size_t AccessReview::cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

k8s::Result<QueueScope> QueueScopeFor(const AccessReview& reviews, const std::string& token, const std::string& asked_ns,
                                      const std::set<std::string>& present) {
  auto failed = [](const k8s::Status& s) -> k8s::Status {
    if (s.code() == 401) {
      return k8s::Status::Error(
          "the queue shows the runs your bearer token may list: send it as Authorization: Bearer or X-Berth-Token"
          " (the API server did not accept it, or none was sent)",
          401, "Unauthorized");
    }
    return k8s::Status::Error("cannot ask the API server what the caller may list: " + s.message(), 502, "BadGateway");
  };
  QueueScope scope;
  auto all = reviews.Allowed(token, ListRuns(""));
  if (!all.ok()) return failed(all.status());
  if (*all) {
    scope.all = true;
    return scope;
  }
  if (!asked_ns.empty()) {
    auto one = reviews.Allowed(token, ListRuns(asked_ns));
    if (!one.ok()) return failed(one.status());
    if (!*one) {
      return k8s::Status::Error("your bearer token may not list runs.berth.dev in namespace " + asked_ns, 403, "Forbidden");
    }
    scope.namespaces.insert(asked_ns);
    return scope;
  }
  for (const std::string& ns : present) {
    auto one = reviews.Allowed(token, ListRuns(ns));
    if (!one.ok()) return failed(one.status());
    if (*one) scope.namespaces.insert(ns);
  }
  return scope;
}

}  // namespace berth::controller
