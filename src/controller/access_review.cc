#include "controller/access_review.h"

#include <openssl/evp.h>

#include <algorithm>

#include "k8s/core_types.h"
#include "k8s/json.h"

namespace berth::controller {

namespace json = k8s::json;

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

constexpr const char* kReviews = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

AccessQuestion ListRuns(const std::string& ns) { return AccessQuestion{"berth.dev", "runs", "list", ns}; }

// The user as one unambiguous string (every part length-prefixed), for the cache key.
std::string UserKey(const UserInfo& u) {
  std::string out;
  auto add = [&out](const std::string& s) { out += std::to_string(s.size()) + ":" + s; };
  add(u.name);
  add(u.uid);
  out += "g" + std::to_string(u.groups.size());
  for (const auto& g : u.groups) add(g);
  out += "e" + std::to_string(u.extra.size());
  for (const auto& [k, vs] : u.extra) {
    add(k);
    out += "v" + std::to_string(vs.size());
    for (const auto& v : vs) add(v);
  }
  return out;
}

std::string StringArray(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + json::Quote(v[i]);
  return out + "]";
}

}  // namespace

std::string SubjectAccessReviewBody(const UserInfo& user, const AccessQuestion& q) {
  std::string attrs = R"({"group":)" + json::Quote(q.group) + R"(,"resource":)" + json::Quote(q.resource) +
                      R"(,"verb":)" + json::Quote(q.verb);
  if (!q.ns.empty()) attrs += R"(,"namespace":)" + json::Quote(q.ns);
  attrs += "}";
  std::string spec = R"({"user":)" + json::Quote(user.name);
  if (!user.uid.empty()) spec += R"(,"uid":)" + json::Quote(user.uid);
  spec += R"(,"groups":)" + StringArray(user.groups);
  if (!user.extra.empty()) {
    spec += R"(,"extra":{)";
    bool first = true;
    for (const auto& [k, vs] : user.extra) {
      spec += (first ? "" : ",") + json::Quote(k) + ":" + StringArray(vs);
      first = false;
    }
    spec += "}";
  }
  spec += R"(,"resourceAttributes":)" + attrs + "}";
  return R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":)" + spec + "}";
}

AccessReview::AccessReview(k8s::ClientPtr reviewer, const base::Clock& clock, std::chrono::milliseconds ttl,
                           size_t max_entries)
    : client_(std::move(reviewer)), clock_(clock), ttl_(ttl), max_entries_(std::max<size_t>(1, max_entries)) {}

k8s::Result<bool> AccessReview::Allowed(const UserInfo& user, const AccessQuestion& q) const {
  if (user.name.empty()) return k8s::Status::Error("no user", 401, "Unauthorized");
  const std::string key = Sha256Hex(UserKey(user)) + "\n" + q.group + "\n" + q.resource + "\n" + q.verb + "\n" + q.ns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end() && it->second.expires > clock_.Monotonic()) {
      lru_.splice(lru_.begin(), lru_, it->second.use);  // most recently used
      return it->second.allowed;
    }
  }
  auto r = client_->Create(kReviews, SubjectAccessReviewBody(user, q));
  if (!r.ok()) {
    const k8s::Status& s = r.status();
    return k8s::Status::Error("cannot ask the API server what " + user.name + " may do (SubjectAccessReview): " +
                                  s.message() +
                                  (s.IsForbidden() ? " (berth's ServiceAccount needs create on subjectaccessreviews)" : ""),
                              502, "BadGateway");
  }
  const bool yes = k8s::AccessReviewAllowed(*r);
  const base::MonoTime now = clock_.Monotonic();
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = cache_.find(key); it != cache_.end()) {
    it->second.allowed = yes;
    it->second.expires = now + ttl_;
    lru_.splice(lru_.begin(), lru_, it->second.use);
    return yes;
  }
  while (cache_.size() >= max_entries_ && !lru_.empty()) {
    cache_.erase(lru_.back());  // the least recently used answer makes room
    lru_.pop_back();
  }
  lru_.push_front(key);
  cache_.emplace(key, Entry{yes, now + ttl_, lru_.begin()});
  return yes;
}

size_t AccessReview::cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

k8s::Result<QueueScope> QueueScopeFor(const AccessReview& reviews, const UserInfo& user, const std::string& asked_ns,
                                      const std::set<std::string>& present) {
  QueueScope scope;
  auto all = reviews.Allowed(user, ListRuns(""));
  if (!all.ok()) return all.status();
  if (*all) {
    scope.all = true;
    return scope;
  }
  if (!asked_ns.empty()) {
    auto one = reviews.Allowed(user, ListRuns(asked_ns));
    if (!one.ok()) return one.status();
    if (!*one) {
      return k8s::Status::Error(user.name + " may not list runs.berth.dev in namespace " + asked_ns, 403, "Forbidden");
    }
    scope.namespaces.insert(asked_ns);
    return scope;
  }
  if (present.size() > kMaxReviewedNamespaces) {
    return k8s::Status::Error("the queue holds runs of " + std::to_string(present.size()) + " namespaces and " +
                                  user.name + " may not list runs.berth.dev in all of them; berth checks at most " +
                                  std::to_string(kMaxReviewedNamespaces) +
                                  " namespaces one by one for a request: ask for one namespace (kubectl berth queue -n NS, "
                                  "or .../namespaces/NS/queue)",
                              403, "Forbidden");
  }
  for (const std::string& ns : present) {
    auto one = reviews.Allowed(user, ListRuns(ns));
    if (!one.ok()) return one.status();
    if (*one) scope.namespaces.insert(ns);
  }
  return scope;
}

}  // namespace berth::controller
