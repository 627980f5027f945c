#pragma once
// What the engine's steps read of a cache, without the informer: Source<T> (Get, List, ByIndex,
// Size, Version: what an Informer<T> and a Store<T> both answer), and Store<T>, a copy of an
// informer's content that an Informer<T>::Mirror keeps up to date (k8s/informer.h).
//
// A Store holds the informer's own pointers (one immutable object per version of the object:
// copy-on-write, never a deep copy) and the same indexes (the informer's IndexFns). Updating it
// costs what changed since its last update (Mirror::Update), not what it holds. Between two
// updates it does not move: what a reader of a Store sees is one moment of the informer.
//
// A Store can also be filled from objects given by hand (Fill: a test's snapshot, without an
// informer), keyed and indexed as an informer would.
//
// Threads: none of its own; a Store is read and updated by one thread (or read by many while
// nobody updates it). This header must not include k8s/informer.h: the engine's decisions read
// Stores and never an informer (docs/development.md, "The engine's components").

#include <cstdint>
#include <string>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace berth::k8s {

// The key of an object in a cache: "namespace/name", or "name" for cluster-scoped objects.
inline std::string ObjectKey(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

// Reads of a cache of T: an informer (live) or a Store (one moment of it).
template <typename T>
class Source {
 public:
  using Ptr = std::shared_ptr<const T>;
  virtual ~Source() = default;
  virtual Ptr Get(const std::string& key) const = 0;
  virtual std::vector<Ptr> List() const = 0;
  virtual std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const = 0;
  virtual size_t Size() const = 0;
  // Moves with every change to the content (see Informer::Version).
  virtual uint64_t Version() const = 0;
};

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
class Informer;

// Objects by key with indexes (the values IndexFns give each object): what an informer holds and
// what a Store copies. Not locked: its owner locks.
template <typename T>
class IndexedItems {
 public:
  using Ptr = std::shared_ptr<const T>;
  using IndexFn = std::function<std::vector<std::string>(const T&)>;

  void AddIndex(const std::string& name, IndexFn fn) { index_fns_[name] = std::move(fn); }
  const std::map<std::string, IndexFn>& index_fns() const { return index_fns_; }
  const std::unordered_map<std::string, Ptr>& items() const { return items_; }

  Ptr Get(const std::string& key) const {
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }
  std::vector<Ptr> List() const {
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [k, v] : items_) out.push_back(v);
    return out;
  }
  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const {
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
  size_t Size() const { return items_.size(); }

  // Puts `obj` under `key` (null: erases the key); returns what the key held (null: nothing). The
  // same pointer as held changes nothing.
  Ptr Put(const std::string& key, const Ptr& obj) {
    auto it = items_.find(key);
    if (it == items_.end()) {
      if (obj) Index(items_.emplace(key, obj).first->first, *obj);
      return nullptr;
    }
    Ptr old = it->second;
    if (old == obj) return old;
    Unindex(key, *old);
    if (!obj) {
      items_.erase(it);
      return old;
    }
    it->second = obj;
    Index(key, *obj);
    return old;
  }
  // Everything anew (a relist): `items` and the indexes made again; returns what was held.
  std::unordered_map<std::string, Ptr> Replace(std::unordered_map<std::string, Ptr> items) {
    items_.swap(items);
    indexes_.clear();
    for (const auto& [k, v] : items_) Index(k, *v);
    return items;
  }
  // A copy of `other` (its pointers, its index functions, its indexes).
  void CopyFrom(const IndexedItems& other) {
    index_fns_ = other.index_fns_;
    items_ = other.items_;
    indexes_ = other.indexes_;
  }

 private:
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

  std::unordered_map<std::string, Ptr> items_;
  std::map<std::string, IndexFn> index_fns_;
  std::map<std::string, std::unordered_map<std::string, std::set<std::string>>> indexes_;
};

// One moment of an informer's cache, kept up to date by an Informer<T>::Mirror.
template <typename T>
class Store final : public Source<T> {
 public:
  using Ptr = std::shared_ptr<const T>;

  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  Ptr Get(const std::string& key) const override { return items_.Get(key); }
  std::vector<Ptr> List() const override { return items_.List(); }
  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const override {
    return items_.ByIndex(index, value);
  }
  size_t Size() const override { return items_.Size(); }
  // The informer's Version() when this store was last updated from it.
  uint64_t Version() const override { return version_; }
  // How many keys the last update looked at (changed, added or deleted since the update before):
  // 0 when nothing had changed; the store's size after a first update or a relist.
  size_t LastApplied() const { return last_applied_; }

  // Filled from `objects` instead of an informer (a snapshot made by hand): each under key(object)
  // (a later object of the same key wins), indexed by `indexes` (name, function: an informer's
  // IndexFns), at `version`. What the store held goes. Not for a store a Mirror keeps.
  using KeyFn = std::function<std::string(const T&)>;
  using NamedIndexFns = std::vector<std::pair<std::string, typename IndexedItems<T>::IndexFn>>;
  void Fill(const std::vector<Ptr>& objects, const KeyFn& key, const NamedIndexFns& indexes, uint64_t version) {
    items_ = IndexedItems<T>();
    for (const auto& [name, fn] : indexes) items_.AddIndex(name, fn);
    std::unordered_map<std::string, Ptr> by_key;
    for (const Ptr& o : objects) by_key[key(*o)] = o;
    items_.Replace(std::move(by_key));
    version_ = version;
    last_applied_ = items_.Size();
  }

 private:
  friend class Informer<T>;
  IndexedItems<T> items_;
  uint64_t version_ = 0;
  size_t last_applied_ = 0;
};

}  // namespace berth::k8s
