#pragma once
// List+watch into a local cache (client-go's reflector + indexer, level-based):
// list, then watch from the list's resourceVersion with bookmarks and a randomized timeout;
// resume after a normal close; relist on 410 Gone; back off exponentially (800 ms .. 30 s) on
// errors. Objects are decoded into compact typed values (T) once, when they arrive, so the cache
// holds no JSON. Handlers get the key and the old and new values; they must be quick (enqueue a key).
//
// This header has its own include root (src/k8s_informer), exposed only by the CMake target
// berth_informer: a library that does not link it cannot include it (the engine's decisions read
// a PassSnapshot of k8s::Stores, never an informer: docs/development.md).

#include <algorithm>
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
#include <utility>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <spdlog/spdlog.h>

#include "k8s/client.h"
#include "k8s/store.h"

namespace berth::k8s {

template <typename T>
class Informer final : public Source<T> {
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
  void AddIndex(const std::string& name, IndexFn fn) { cache_.AddIndex(name, std::move(fn)); }
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

  Ptr Get(const std::string& key) const override {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return cache_.Get(key);
  }
  std::vector<Ptr> List() const override {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return cache_.List();
  }
  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const override {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return cache_.ByIndex(index, value);
  }
  size_t Size() const override {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return cache_.Size();
  }
  // Moves with every change to the cache (an added, changed or deleted object, a relist). Read
  // before a List(): an equal Version() later means that List() is still the cache's content.
  uint64_t Version() const override { return version_.load(); }
  const std::string& name() const { return name_; }

 private:
  struct MirrorState {
    bool all = true;                       // everything (a first update, after a relist)
    std::unordered_set<std::string> changed;  // else: the keys changed since the last update
  };

 public:
  // A consumer's incremental copy of the cache: Update(store) brings `store` to the cache's
  // content now, applying (under the informer's lock) only the keys added, changed or deleted
  // since this mirror's last update (everything on the first one and after a relist). One store
  // per mirror; a mirror must not outlive its informer. Mirrors are independent of each other.
  class Mirror {
   public:
    Mirror(Mirror&& o) noexcept : informer_(std::exchange(o.informer_, nullptr)), state_(std::move(o.state_)) {}
    Mirror& operator=(Mirror&&) = delete;
    Mirror(const Mirror&) = delete;
    ~Mirror() {
      if (informer_ != nullptr) informer_->Unmirror(state_);
    }
    void Update(Store<T>& store) { informer_->UpdateMirror(*state_, store); }

   private:
    friend class Informer;
    Mirror(Informer* informer, std::shared_ptr<MirrorState> state) : informer_(informer), state_(std::move(state)) {}
    Informer* informer_;
    std::shared_ptr<MirrorState> state_;
  };
  Mirror NewMirror() {
    auto state = std::make_shared<MirrorState>();
    std::unique_lock<std::shared_mutex> lock(mu_);
    mirrors_.push_back(state);
    return Mirror(this, std::move(state));
  }

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
    if (listed.ok()) {
      Replace(std::move(fresh), std::move(aside));
      absent_empty_ = false;
    }
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
    // Once empty, it stays as it is: asking again and hearing 404 again changes nothing, so the
    // version does not move (the engine would remake its cluster view and decide again each time).
    if (!absent_empty_) Replace({}, {});
    absent_empty_ = true;
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
      version_.fetch_add(1);
      old = cache_.Put(key, ev.type == "DELETED" ? nullptr : obj);
      Touch(key);
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
      old = cache_.Put(key, nullptr);
      Touch(key);
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
      version_.fetch_add(1);
      std::unordered_map<std::string, Ptr> before = cache_.Replace(std::move(fresh));
      for (auto& [k, v] : before) {
        if (!cache_.Get(k)) deleted.emplace_back(k, v);
      }
      for (const auto& [k, v] : cache_.items()) {
        auto it = before.find(k);
        changed.emplace_back(k, it == before.end() ? nullptr : it->second, v);
      }
      set_aside_.swap(aside);
      aside_changed = !set_aside_.empty() || !aside.empty();
      for (auto& m : mirrors_) {  // a relist: each mirror takes everything anew
        m->all = true;
        m->changed.clear();
      }
    }
    if (set_aside_handler_ && aside_changed) set_aside_handler_();
    for (auto& [k, v] : deleted) Notify(k, v, nullptr);
    for (auto& [k, o, n] : changed) Notify(k, o, n);
  }

  // Under mu_ (unique): a key changed, for each mirror (NewMirror).
  void Touch(const std::string& key) {
    for (auto& m : mirrors_) {
      if (!m->all) m->changed.insert(key);
    }
  }
  void UpdateMirror(MirrorState& m, Store<T>& store) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (m.all) {
      store.items_.CopyFrom(cache_);
      store.last_applied_ = cache_.Size();
      m.all = false;
    } else {
      for (const std::string& key : m.changed) store.items_.Put(key, cache_.Get(key));
      store.last_applied_ = m.changed.size();
    }
    m.changed.clear();
    store.version_ = version_.load();
  }
  void Unmirror(const std::shared_ptr<MirrorState>& m) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    mirrors_.erase(std::remove(mirrors_.begin(), mirrors_.end(), m), mirrors_.end());
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
  std::vector<Handler> handlers_;

  mutable std::shared_mutex mu_;
  IndexedItems<T> cache_;  // the objects and their indexes (k8s/store.h)
  std::vector<std::shared_ptr<MirrorState>> mirrors_;  // NewMirror
  std::map<std::string, SetAsideObject> set_aside_;  // see SetAsideObject
  std::function<void()> set_aside_handler_;
  std::function<void()> synced_handler_;

  std::atomic<bool> synced_{false};
  bool absent_is_empty_ = false;  // SetAbsentIsEmpty
  bool absent_empty_ = false;     // the cache was emptied for a 404 and nothing was listed since (Run's thread)
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
