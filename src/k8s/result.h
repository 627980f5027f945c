#pragma once
// Expected failures are values, not exceptions. `Status` says whether an operation worked and,
// when it did not, why (for API calls: HTTP code, Kubernetes reason and the server's message).
// `Result<T>` is a value or a Status. Both are [[nodiscard]]: a caller that means to ignore a
// failure (best-effort cleanup) says so with a cast to void.

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace berth::k8s {

class [[nodiscard]] Status {
 public:
  // Success.
  Status() = default;
  // A failure. `code` is the HTTP status for API errors (0 for local errors such as a parse
  // error or a connection failure); `reason` is Kubernetes' CamelCase reason when known.
  static Status Error(std::string message, int code = 0, std::string reason = {}) {
    Status s;
    s.ok_ = false;
    s.code_ = code;
    s.reason_ = std::move(reason);
    s.message_ = std::move(message);
    return s;
  }

  bool ok() const { return ok_; }
  int code() const { return code_; }
  const std::string& reason() const { return reason_; }
  const std::string& message() const { return message_; }

  bool IsNotFound() const { return code_ == 404; }
  bool IsConflict() const { return code_ == 409 && reason_ != "AlreadyExists"; }
  bool IsAlreadyExists() const { return code_ == 409 && reason_ == "AlreadyExists"; }
  bool IsGone() const { return code_ == 410; }
  bool IsInvalid() const { return code_ == 422; }
  bool IsForbidden() const { return code_ == 403; }
  bool IsUnauthorized() const { return code_ == 401; }
  // Worth retrying as is: throttled, server-side trouble or no answer at all.
  bool IsRetryable() const { return !ok_ && (code_ == 0 || code_ == 429 || code_ >= 500); }

  // "404 NotFound: runs.berth.dev "x" not found" — for logs and conditions.
  std::string ToString() const {
    if (ok_) return "OK";
    std::string out;
    if (code_ != 0) out += std::to_string(code_) + " ";
    if (!reason_.empty()) out += reason_ + ": ";
    out += message_;
    return out;
  }

 private:
  bool ok_ = true;
  int code_ = 0;
  std::string reason_;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {     // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status without a value");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  // The failure; an OK status when there is a value.
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace berth::k8s
