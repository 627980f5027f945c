#pragma once
// A value derived from the cluster state, kept with the inputs it was made from (issue 30 item 4):
// the engine's caches of derived values (a placed run's record, the instances' states) say what
// they depend on as comparable inputs, instead of each keeping a version field and its own
// invalidation rule.
//
// Checked reads: where memo checks are on, every read of a kept value makes the value anew from
// the same inputs and aborts, naming the memo, if the two differ. A memo whose inputs miss
// something its value depends on is stale, and the tests find it. Checks are on in every build
// without NDEBUG (the sanitizer stage's unit tests) and wherever a test turns them on
// (SetMemoChecks: the in-process engine tests do, in every build).
//
// A memo's inputs must cover everything its value reads, also what other threads move (the
// informers' caches): the check reads them again at once, so in a threaded engine a cache that
// moved between the pass' start and the read, before its watch event reached the pass' inputs,
// would show as a difference. The checked engine tests step the engine (no such gap).
//
// Pure (the scheduling core may use it): no I/O, except the message before the abort. Not
// thread-safe: one owner thread, like the caches it replaces.

#include <functional>
#include <optional>
#include <utility>

namespace berth::base {

// Whether reads of kept values are checked now (see above). Thread: any.
bool MemoChecksOn();
// Turns the checks on or off where NDEBUG is defined (without NDEBUG they are always on). Tests.
void SetMemoChecks(bool on);
// Prints "stale memo: <what>: ..." and aborts.
[[noreturn]] void StaleMemo(const char* what);

// `Same` compares two values (default ==; DerefEqual for shared pointers).
template <typename Inputs, typename Value, typename Same = std::equal_to<>>
class Memo {
 public:
  // `what` names the memo in the abort message (a string literal).
  explicit Memo(const char* what) : what_(what) {}

  // Whether it keeps a value made from `inputs`.
  bool Holds(const Inputs& inputs) const { return value_.has_value() && inputs_ == inputs; }

  // The value for `inputs`: the kept one when it was made from equal inputs (checked, above),
  // else `make()`, kept from now on.
  template <typename Make>
  const Value& Get(const Inputs& inputs, Make&& make) {
    if (Holds(inputs)) {
      if (MemoChecksOn() && !Same{}(*value_, make())) StaleMemo(what_);
      return *value_;
    }
    return Set(inputs, make());
  }

  // Keeps `value`, made from `inputs`.
  const Value& Set(const Inputs& inputs, Value value) {
    inputs_ = inputs;
    value_.emplace(std::move(value));
    return *value_;
  }

  // Forgets the kept value (the next Get makes it).
  void Reset() { value_.reset(); }
  // The kept value, unchecked (nullptr when none): for a caller that only passes it on.
  const Value* Peek() const { return value_ ? &*value_ : nullptr; }

 private:
  const char* what_;
  Inputs inputs_{};
  std::optional<Value> value_;
};

// Compares what two pointers point to (both null: equal).
struct DerefEqual {
  template <typename P>
  bool operator()(const P& a, const P& b) const {
    return a == b || (a && b && *a == *b);
  }
};

}  // namespace berth::base
