#pragma once
// List+watch into a local cache (client-go's reflector + indexer, level-based):
// list, then watch from the list's resourceVersion with bookmarks and a randomized timeout;
// resume after a normal close; relist on 410 Gone; back off exponentially (800 ms .. 30 s) on
// errors. Objects are decoded into compact typed values (T) once, when they arrive, so the cache
// holds no JSON. Handlers get the key and the old and new values; they must be quick (enqueue a key).

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <spdlog/spdlog.h>

#include "k8s/client.h"

namespace berth::k8s {

// "namespace/name", or "name" for cluster-scoped objects.
inline std::string ObjectKey(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

// An object the informer lists or watches but cannot decode (nested deeper than json::kMaxDepth):
// set aside, out of the cache, so that it stops nothing else (issue 29).
struct SetAsideObject {
  std::string ns, name, uid, resource_version;
  int64_t generation = 0;
  std::string why;
  // The object's status as JSON, when it has one that nests at most json::kMaxDepth levels (a Run
  // made unreadable by its spec still shows whether it was placed: issue 44); else empty.
  std::string status_json;
  bool deleting = false;                // metadata.deletionTimestamp is set
  std::vector<std::string> finalizers;  // metadata.finalizers
};

template <typename T>
class Informer {
 public:
  using Ptr = std::shared_ptr<const T>;
  // Decodes one object; returns null to skip it (not ours, malformed).
  using Decoder = std::function<Ptr(const json::Value&)>;
  // Returns the key of a decoded object.
  using KeyFn = std::function<std::string(const T&)>;
  // Values an object is indexed under (e.g. the node a pod is bound to).
  using IndexFn = std::function<std::vector<std::string>(const T&)>;
  // old is null on add, cur is null on delete.
  using Handler = std::function<void(const std::string& key, const Ptr& old, const Ptr& cur)>;

  Informer(ClientPtr client, std::string path, Decoder decode, KeyFn key, std::string name)
      : client_(std::move(client)), path_(std::move(path)), decode_(std::move(decode)), key_(std::move(key)),
        name_(std::move(name)), rng_(std::random_device{}()) {}
  ~Informer() { Stop(); }

  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void SetLabelSelector(std::string s) { label_selector_ = std::move(s); }
  void SetFieldSelector(std::string s) { field_selector_ = std::move(s); }
  void AddIndex(const std::string& name, IndexFn fn) { index_fns_[name] = std::move(fn); }
  void AddHandler(Handler h) { handlers_.push_back(std::move(h)); }
  // Called (from the informer's thread) when the set-aside objects change.
  void SetSetAsideHandler(std::function<void()> h) { set_aside_handler_ = std::move(h); }
  // Called (from the informer's thread) after each complete list (the first one: HasSynced).
  void SetSyncedHandler(std::function<void()> h) { synced_handler_ = std::move(h); }
  // An optional resource (a CRD a cluster may not have yet, e.g. Teams after an upgrade that did
  // not apply the new CRDs): a list answered 404 (the type is not served) counts as an empty
  // list, so the cache is synced and empty; the list is tried again (backoff up to 30 s) until
  // the type is served. Set before Start().
  void SetAbsentIsEmpty(bool on) { absent_is_empty_ = on; }
  // The objects set aside now (see SetAsideObject), by key.
  std::map<std::string, SetAsideObject> SetAside() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return set_aside_;
  }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(wait_mu_);
      stopped_ = true;
    }
    wait_cv_.notify_all();
    cancel_.Cancel();
    if (thread_.joinable()) thread_.join();
  }
  // True after the first complete list.
  bool HasSynced() const { return synced_.load(); }

  Ptr Get(const std::string& key) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }
  std::vector<Ptr> List() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [k, v] : items_) out.push_back(v);
    return out;
  }
  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    std::vector<Ptr> out;
    auto idx = indexes_.find(index);
    if (idx == indexes_.end()) return out;
    auto it = idx->second.find(value);
    if (it == idx->second.end()) return out;
    for (const std::string& key : it->second) {
      auto obj = items_.find(key);
      if (obj != items_.end()) out.push_back(obj->second);
    }
    return out;
  }
  size_t Size() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return items_.size();
  }
  // Moves with every change to the cache (an added, changed or deleted object, a relist). Read
  // before a List(): an equal Version() later means that List() is still the cache's content.
  uint64_t Version() const { return version_.load(); }
  const std::string& name() const { return name_; }

 private:
  // One complete list into the cache; `rv` is the list's resourceVersion.
  Status ListIntoCache(std::string& rv) {
    ListOptions lo;
    lo.label_selector = label_selector_;
    lo.field_selector = field_selector_;
    std::unordered_map<std::string, Ptr> fresh;
    std::map<std::string, SetAsideObject> aside;
    Status listed = client_->ListEach(path_, lo, [&](const json::Value& item) {
      if (Ptr obj = decode_(item)) fresh[key_(*obj)] = std::move(obj);
    }, &rv, [&](const json::Value& item) {
      SetAsideObject o = Aside(item);
      aside[ObjectKey(o.ns, o.name)] = std::move(o);
    });
    if (listed.ok()) Replace(std::move(fresh), std::move(aside));
    return listed;
  }

  // SetAbsentIsEmpty: a 404 for the type is an empty, synced cache (logged once).
  bool TakeAbsentAsEmpty(const Status& listed) {
    if (!absent_is_empty_ || listed.code() != 404) return false;
    if (!absent_logged_) {
      spdlog::warn("{}: the API server does not serve this resource ({}): taken as none until it does "
                   "(is its CRD applied?); asking again every 30 s at most", name_, listed.ToString());
      absent_logged_ = true;
    }
    Replace({}, {});
    return true;
  }

  void Run() {
    std::chrono::milliseconds backoff(800);
    while (!IsStopped()) {
      std::string rv;
      Status listed = ListIntoCache(rv);
      if (!listed.ok() && TakeAbsentAsEmpty(listed)) {
        synced_ = true;
        if (synced_handler_) synced_handler_();
        if (!SleepFor(Jitter(backoff))) return;
        backoff = std::min(backoff * 2, std::chrono::milliseconds(30000));
        continue;
      }
      if (!listed.ok()) {
        spdlog::warn("{}: list failed: {}; retrying in {} ms", name_, listed.ToString(), backoff.count());
        if (!SleepFor(Jitter(backoff))) return;
        backoff = std::min(backoff * 2, std::chrono::milliseconds(30000));
        continue;
      }
      synced_ = true;
      if (synced_handler_) synced_handler_();
      // Watch until the stream must be re-established from a fresh list.
      while (!IsStopped()) {
        WatchOptions wo;
        wo.resource_version = rv;
        wo.label_selector = label_selector_;
        wo.field_selector = field_selector_;
        wo.timeout_seconds = std::uniform_int_distribution<int>(300, 600)(rng_);
        bool got_events = false;
        Status s = client_->Watch(
            path_, wo,
            [&](const WatchEvent& ev) {
              got_events = true;
              Apply(ev, rv);
              return true;
            },
            &cancel_);
        if (IsStopped()) return;
        if (got_events) backoff = std::chrono::milliseconds(800);
        if (s.ok()) {
          continue;  // normal close (timeout): resume from the last resourceVersion
        }
        if (s.IsGone()) {
          spdlog::info("{}: watch resourceVersion {} is too old (410 Gone); relisting", name_, rv);
          break;
        }
        // An API error (e.g. 429 while a restarted API server's watch cache initializes): start
        // over with a list. No answer (API server down): the same watch again.
        spdlog::warn("{}: watch failed: {}; {} in {} ms", name_, s.ToString(), s.code() != 0 ? "relisting" : "retrying",
                     backoff.count());
        if (!SleepFor(Jitter(backoff))) return;
        backoff = std::min(backoff * 2, std::chrono::milliseconds(30000));
        if (s.code() != 0) break;
        // No answer (API server down): try the watch again from the same resourceVersion.
      }
    }
  }

  void Apply(const WatchEvent& ev, std::string& rv) {
    const json::Value* meta_rv = json::Find(*ev.object, {"metadata", "resourceVersion"});
    if (meta_rv != nullptr && meta_rv->IsString()) rv.assign(meta_rv->GetString(), meta_rv->GetStringLength());
    if (ev.type == "BOOKMARK") return;
    if (ev.too_deep) {
      SetAside(ev);
      return;
    }
    Ptr obj = decode_(*ev.object);
    if (!obj) return;
    std::string key = key_(*obj);
    Ptr old;
    bool was_aside = false;
    {
      std::unique_lock<std::shared_mutex> lock(mu_);
      was_aside = set_aside_.erase(key) > 0;  // readable again (or deleted)
      auto it = items_.find(key);
      if (it != items_.end()) old = it->second;
      version_.fetch_add(1);
      if (ev.type == "DELETED") {
        if (it != items_.end()) {
          Unindex(key, *it->second);
          items_.erase(it);
        }
      } else {
        if (old) Unindex(key, *old);
        items_[key] = obj;
        Index(key, *obj);
      }
    }
    Notify(key, old, ev.type == "DELETED" ? nullptr : obj);
    if (was_aside && set_aside_handler_) set_aside_handler_();
  }

  static SetAsideObject Aside(const json::Value& item) {
    SetAsideObject o;
    if (const json::Value* meta = json::Find(item, {"metadata"}); meta != nullptr && meta->IsObject()) {
      o.ns = json::GetString(*meta, "namespace");
      o.name = json::GetString(*meta, "name");
      o.uid = json::GetString(*meta, "uid");
      o.resource_version = json::GetString(*meta, "resourceVersion");
      o.generation = json::GetInt(*meta, "generation");
      o.deleting = json::Find(*meta, {"deletionTimestamp"}) != nullptr;
      if (const json::Value* f = json::Find(*meta, {"finalizers"}); f != nullptr && f->IsArray()) {
        for (auto it = f->Begin(); it != f->End(); ++it) {
          if (it->IsString()) o.finalizers.emplace_back(it->GetString(), it->GetStringLength());
        }
      }
    }
    o.why = "its JSON nests deeper than " + std::to_string(json::kMaxDepth) + " levels";
    if (const json::Value* st = json::Find(item, {"status"}); st != nullptr && st->IsObject() && !json::DeeperThan(*st)) {
      o.status_json = json::Serialize(*st);
    }
    return o;
  }

  // A watch event of an object berth cannot read: out of the cache (its handlers see it deleted),
  // into the set-aside objects until it is deleted or readable again.
  void SetAside(const WatchEvent& ev) {
    SetAsideObject o = Aside(*ev.object);
    const std::string key = ObjectKey(o.ns, o.name);
    Ptr old;
    {
      std::unique_lock<std::shared_mutex> lock(mu_);
      version_.fetch_add(1);
      if (ev.type == "DELETED") {
        set_aside_.erase(key);
      } else {
        set_aside_[key] = std::move(o);
      }
      auto it = items_.find(key);
      if (it != items_.end()) {
        old = it->second;
        Unindex(key, *old);
        items_.erase(it);
      }
    }
    if (old) Notify(key, old, nullptr);
    if (set_aside_handler_) set_aside_handler_();
  }

  void Replace(std::unordered_map<std::string, Ptr> fresh, std::map<std::string, SetAsideObject> aside = {}) {
    std::vector<std::pair<std::string, Ptr>> deleted;
    std::vector<std::tuple<std::string, Ptr, Ptr>> changed;
    bool aside_changed = false;
    {
      std::unique_lock<std::shared_mutex> lock(mu_);
      for (auto& [k, v] : items_) {
        if (!fresh.count(k)) deleted.emplace_back(k, v);
      }
      for (auto& [k, v] : fresh) {
        auto it = items_.find(k);
        changed.emplace_back(k, it == items_.end() ? nullptr : it->second, v);
      }
      version_.fetch_add(1);
      items_.swap(fresh);
      set_aside_.swap(aside);
      aside_changed = !set_aside_.empty() || !aside.empty();
      indexes_.clear();
      for (auto& [k, v] : items_) Index(k, *v);
    }
    if (set_aside_handler_ && aside_changed) set_aside_handler_();
    for (auto& [k, v] : deleted) Notify(k, v, nullptr);
    for (auto& [k, o, n] : changed) Notify(k, o, n);
  }

  void Index(const std::string& key, const T& obj) {
    for (auto& [name, fn] : index_fns_) {
      for (const std::string& value : fn(obj)) indexes_[name][value].insert(key);
    }
  }
  void Unindex(const std::string& key, const T& obj) {
    for (auto& [name, fn] : index_fns_) {
      auto& idx = indexes_[name];
      for (const std::string& value : fn(obj)) {
        auto it = idx.find(value);
        if (it == idx.end()) continue;
        it->second.erase(key);
        if (it->second.empty()) idx.erase(it);
      }
    }
  }

  void Notify(const std::string& key, const Ptr& old, const Ptr& cur) {
    for (auto& h : handlers_) h(key, old, cur);
  }

  bool IsStopped() {
    std::lock_guard<std::mutex> lock(wait_mu_);
    return stopped_;
  }
  // Sleeps `d` on the client's clock unless stopped first; returns false when stopped.
  bool SleepFor(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(wait_mu_);
    return !client_->clock().WaitFor(lock, wait_cv_, d, [this] { return stopped_; });
  }
  std::chrono::milliseconds Jitter(std::chrono::milliseconds d) {
    return d + std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(0, d.count() / 2)(rng_));
  }

  ClientPtr client_;
  std::string path_;
  Decoder decode_;
  KeyFn key_;
  std::string name_;
  std::string label_selector_, field_selector_;
  std::map<std::string, IndexFn> index_fns_;
  std::vector<Handler> handlers_;

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Ptr> items_;
  std::map<std::string, SetAsideObject> set_aside_;  // see SetAsideObject
  std::function<void()> set_aside_handler_;
  std::function<void()> synced_handler_;
  std::map<std::string, std::unordered_map<std::string, std::set<std::string>>> indexes_;

  std::atomic<bool> synced_{false};
  bool absent_is_empty_ = false;  // SetAbsentIsEmpty
  bool absent_logged_ = false;    // the informer's thread only
  std::atomic<uint64_t> version_{0};  // see Version()
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  bool stopped_ = false;
  Cancellation cancel_;
  std::thread thread_;
  std::mt19937_64 rng_;
};

}  // namespace berth::k8s
