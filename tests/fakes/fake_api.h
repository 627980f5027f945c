#pragma once
// An in-memory stand-in for the Kubernetes API, behind berth's own k8s::Transport, so the engine
// (or anything else built on k8s::Client and k8s::Informer) runs in-process in tests: no
// kube-apiserver, no etcd, no network, a whole scenario in milliseconds. It is NOT an API server
// and not a conformance-level fake: it serves the requests berth's client makes for the resources
// berth uses, with the API server's semantics where berth depends on them, and nothing else.
// Anything about the real API server is tested by tests/integration (real kube-apiserver).
//
// Resources (group/version/plural): v1 pods (+ /status, /binding), nodes (+ /status),
// services (+ /status), events, namespaces (+ /status); coordination.k8s.io/v1 leases;
// berth.dev/v1alpha1 runs and fleets (+ /status). Any other path answers 404.
//
// What it implements:
//   - One global resourceVersion counter (like etcd's revision): every create, update, patch,
//     binding and delete takes the next number; a write that changes nothing takes none and sends
//     no watch event (as the API server's GuaranteedUpdate does for identical bytes).
//   - GET of an object; LIST of a collection (cluster-wide or one namespace), items in key order,
//     metadata.resourceVersion = the current counter; labelSelector (equality-based: k, !k, k=v,
//     k==v, k!=v; set-based `in`/`notin` answer 400); fieldSelector (f=v, f==v, f!=v, where f is
//     any dotted path to a string field, e.g. status.phase or spec.nodeName — more than the API
//     server, which allows a few per kind); limit/continue over a snapshot taken at the first
//     page (as etcd serves it); an unknown continue token, or one dropped by Compact(), answers
//     410 Expired.
//   - WATCH through Transport::Stream (?watch=true): one JSON event per line; from
//     resourceVersion "" or "0" every current object as ADDED first, from a number every change
//     after it (410 as an ERROR event when Compact() dropped that history); then live events
//     until the Cancellation fires or CloseWatches() is called. With a selector, an object that
//     starts matching is ADDED and one that stops matching is DELETED (its previous content at
//     the new resourceVersion), as the API server's watch cache does. No BOOKMARK events are
//     sent (the informer does not need them) and timeoutSeconds is not enforced.
//   - POST (create): 409 AlreadyExists; metadata.generateName; uid, resourceVersion,
//     creationTimestamp (whole seconds, from the injected clock), generation 1 are set. Status on
//     create: dropped for runs, fleets and services, {phase: Pending} for pods, kept for nodes
//     (nodes may set status on create). POST pods/NAME/binding sets spec.nodeName once
//     (409 "already assigned" after that, 409 for a Pod being deleted, uid precondition).
//   - PUT and PATCH (application/merge-patch+json, RFC 7386; application/json-patch+json with
//     add, remove, replace and test, RFC 6902). A metadata.resourceVersion in the body (or left
//     there by a patch) must equal the stored one, else 409 Conflict worded as the API server
//     words it; an empty one writes unconditionally. Status subresource separation: a write to
//     /status changes only .status; a write to the object leaves .status as it was (for the
//     resources that have /status). uid, name, namespace, creationTimestamp, deletionTimestamp
//     and generation cannot be changed; metadata.generation goes up by one when anything outside
//     metadata and status changed. Other patch types (strategic merge, apply) answer 415.
//   - DELETE with DeleteOptions preconditions (uid, resourceVersion -> 409 Conflict "Precondition
//     failed: ..."). An object with finalizers gets deletionTimestamp (and stays) until a write
//     empties its finalizers, which removes it. A Pod bound to a node, not Succeeded or Failed,
//     deleted with a grace period above 0 (gracePeriodSeconds, else its
//     spec.terminationGracePeriodSeconds, default 30) gets deletionTimestamp and
//     deletionGracePeriodSeconds and stays until deleted again with gracePeriodSeconds 0 (what
//     the kubelet does): the fake has no kubelet and no garbage collector.
//   - Errors are Kubernetes Status objects (kind Status, code, reason, message).
//
// What it does not do (among much else): validation or defaulting from schemas (CRD defaults,
// Pod defaults), immutable fields beyond the metadata above (a Pod's spec can be changed),
// namespace existence checks, authentication and authorization, admission webhooks,
// owner-reference garbage collection, pod GC of deleted nodes, strategic merge patch,
// server-side apply, managedFields, resourceVersionMatch, watch bookmarks and timeouts, and
// anything that moves by itself (nodes, kubelets, controllers). A PUT without a resourceVersion
// is accepted for every kind (the API server refuses it for custom resources). A watch from
// resourceVersion "" or "0" opened while watches are held (HoldWatches) lists the held changes
// as part of the current objects.
//
// Fault hooks for tests: fail the next N matching requests with a code (0 = no answer, not
// applied); apply the next N matching writes and drop their reply (an ambiguous write: the
// client sees no answer, and its retry meets its own result); hold watch events back while GET
// and LIST already show the change (a lagging watch cache), in order; close every watch;
// compact the history (410 for older watches and continue tokens).
//
// Thread-safe: every method may be called from any thread.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/time.h"
#include "k8s/json.h"
#include "k8s/transport.h"

namespace berth::testing {

class FakeApi final : public k8s::Transport {
 public:
  // `clock` stamps creationTimestamp and deletionTimestamp; it must outlive the fake.
  explicit FakeApi(const base::Clock& clock);
  ~FakeApi() override;

  k8s::Result<k8s::HttpResponse> Send(const k8s::HttpRequest& req) override;
  k8s::Result<k8s::HttpResponse> Stream(const k8s::HttpRequest& req,
                                        const std::function<bool(std::string& line)>& on_line,
                                        k8s::Cancellation* cancel, int idle_timeout_seconds) override;

  // ---- Fault hooks ----
  // Which requests a fault applies to: method ("" = any), path without the query ("" = any),
  // and a predicate on the whole request (may be empty).
  struct Match {
    std::string method;
    std::string path;
    std::function<bool(const k8s::HttpRequest&)> when;
  };
  // The next `times` requests that match are answered with `code` (a Status with the reason the
  // API server gives that code) and not applied; code 0 = no answer at all (a Status error from
  // the transport, as for a cut connection).
  void FailNext(Match match, int times, int code);
  // The next `times` matching requests are carried out, then their reply is lost (the transport
  // returns "no answer"): the write happened, the caller cannot know.
  void DropReplyAfterApply(Match match, int times);
  // How many requests the faults above have hit so far.
  int FaultsFired() const;
  // A watch cache that lags: changes from now on are applied and served by GET and LIST, but
  // watch streams (open or opened meanwhile) get them only at ReleaseWatches, in order.
  void HoldWatches();
  void ReleaseWatches();

  // A slow API server: matching requests wait (before they are carried out) until
  // ReleaseRequests, which also ends the hold. A test that holds must release before its engine
  // stops (its writers would wait for ever).
  void HoldRequests(Match match);
  void ReleaseRequests();
  // Requests waiting at the hold now.
  int RequestsHeld() const;

  // Blocks until at least `watches` watch streams are open and each has handed every event it
  // has to its reader, whose callback returned (an informer applied it and ran its handlers): the
  // watchers' caches show every change made so far that is not held (HoldWatches). Waits on
  // events only, never on time; a test that steps an engine calls it before each pass.
  void WaitWatchesIdle(size_t watches) const;

  // ---- Other test hooks ----
  // Ends every open watch stream normally (the informers resume from their last resourceVersion).
  void CloseWatches();
  // Forgets the change history and the list snapshots up to now: a watch from an older
  // resourceVersion or a continue token gets 410 Gone.
  void Compact();

  // Every change since the start (or the last Compact), oldest first: what a watch on
  // everything would have seen.
  struct Change {
    uint64_t resource_version = 0;
    std::string type;    // ADDED, MODIFIED, DELETED
    std::string path;    // the object's path, e.g. /api/v1/namespaces/ns/pods/p
    std::string object;  // JSON as stored after the change (before it, for DELETED)
  };
  std::vector<Change> History() const;
  // Requests served, as "METHOD path" (no query), oldest first; watches as "WATCH path".
  std::vector<std::string> Requests() const;
  uint64_t ResourceVersion() const;

  // Internal (defined in fake_api.cc).
  struct ResourceInfo;

 private:
  struct Target;
  struct Stored {
    std::string json;
    const ResourceInfo* info = nullptr;
  };
  struct Event {
    uint64_t rv = 0;
    std::string type;
    std::string key;       // storage key
    std::string object;    // after (before, for DELETED)
    std::string previous;  // before (empty on ADDED)
    const ResourceInfo* info = nullptr;
  };
  struct Watcher;
  struct Fault {
    Match match;
    int remaining = 0;
    int code = 0;
    bool drop_reply = false;
  };
  struct Snapshot {
    std::vector<std::string> items;
    uint64_t rv = 0;
  };

  k8s::HttpResponse Handle(const k8s::HttpRequest& req);
  k8s::HttpResponse Get(const Target& t);
  k8s::HttpResponse List(const Target& t);
  k8s::HttpResponse Create(const Target& t, const std::string& body);
  k8s::HttpResponse Bind(const Target& t, const std::string& body);
  k8s::HttpResponse Write(const Target& t, const k8s::HttpRequest& req);
  k8s::HttpResponse Delete(const Target& t, const std::string& body);
  // Stores `next` (a full object) over `old` at `key` for a write to `sub` ("" or "status").
  k8s::HttpResponse Commit(const Target& t, const std::string& key, k8s::json::Document& next,
                           const k8s::json::Document& old);
  void Record(const std::string& type, const std::string& key, const ResourceInfo* info, std::string object,
              std::string previous);
  std::string NowText() const;
  std::optional<Fault> TakeFault(const k8s::HttpRequest& req);

  const base::Clock& clock_;
  mutable std::mutex mu_;
  uint64_t rv_ = 0;
  uint64_t uids_ = 0;
  uint64_t names_ = 0;
  uint64_t continues_ = 0;
  uint64_t compacted_ = 0;  // history before this resourceVersion is gone
  uint64_t held_from_ = 0;  // watch events from this resourceVersion on wait for ReleaseWatches (0: none)
  int faults_fired_ = 0;
  std::map<std::string, Stored> objects_;  // by storage key: resource/ns/name
  std::vector<Event> history_;
  std::map<std::string, Snapshot> snapshots_;  // continue token -> the rest of the list
  std::vector<std::shared_ptr<Watcher>> watchers_;
  std::vector<Fault> faults_;
  std::optional<Match> hold_;  // HoldRequests
  int held_requests_ = 0;
  std::condition_variable released_;
  std::vector<std::string> requests_;
  // WaitWatchesIdle: moves (under idle_mu_) whenever a watch opens, closes or is done with a line.
  mutable std::mutex idle_mu_;
  mutable std::condition_variable idle_cv_;
  uint64_t idle_gen_ = 0;
  void WatchesMoved();
};

}  // namespace berth::testing
