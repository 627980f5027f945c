#pragma once
// A value kept out of line, for a rarely set part of a struct that is held a hundred thousand
// times (scheduling::WaitReason's budget: set only for the runs a spent budget holds; a Run's
// spelling, which only the CLI keeps, and its span's held resources, set only once it held
// blocks): 8 bytes where it is not set, instead of the value's size. A value type: copies copy the value, and ==
// compares the values (two empty boxes are equal), so a defaulted == of the holder stays right.

#include <memory>
#include <utility>

namespace berth::base {

template <typename T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(const Boxed& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  Boxed& operator=(T value) {
    p_ = std::make_unique<T>(std::move(value));
    return *this;
  }
  ~Boxed() = default;

  explicit operator bool() const { return p_ != nullptr; }
  bool has_value() const { return p_ != nullptr; }
  const T* get() const { return p_.get(); }
  const T& operator*() const { return *p_; }
  const T* operator->() const { return p_.get(); }
  // The value, or `fallback` where the box is empty (std::optional's value_or).
  T value_or(T fallback) const { return p_ ? *p_ : std::move(fallback); }

  friend bool operator==(const Boxed& a, const Boxed& b) {
    return a.p_ == b.p_ || (a.p_ != nullptr && b.p_ != nullptr && *a.p_ == *b.p_);
  }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace berth::base
