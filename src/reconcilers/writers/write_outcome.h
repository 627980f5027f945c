#pragma once
// What a write to the API came to (issue 30 item 5): the engine's writes (status patches, Pod and
// Service creates, binds) answer a WriteResult, and their callers switch on its outcome without a
// default, so a new outcome is a compile error (-Werror=switch) at every caller until handled.
// The API's answer travels with it for the logs.
//
// Pure: classifies a k8s::Status; no I/O.

#include <string_view>

#include "k8s/result.h"

namespace berth::reconcilers {

enum class WriteOutcome {
  kWritten,   // the API server took the write
  kConflict,  // 409 Conflict: the object changed since it was read (resourceVersion or uid
              // precondition), or a bind found the Pod bound already
  kExists,    // 409 AlreadyExists: a create found the name taken (by us before, or by someone else)
  kGone,      // 404: the object (or its namespace) is not there
  kRefused,   // 400 or 422: the API server refuses this body, and will again
  kFailed,    // anything else (no answer, 5xx, 429, 403, ...): try again later, with backoff
};

struct [[nodiscard]] WriteResult {
  WriteOutcome outcome = WriteOutcome::kWritten;
  k8s::Status status;  // the API's answer (ok when written)
};

// The outcome of a write the API answered with `s`.
WriteOutcome OutcomeOf(const k8s::Status& s);
inline WriteResult ResultOf(k8s::Status s) {
  const WriteOutcome o = OutcomeOf(s);
  return WriteResult{o, std::move(s)};
}
// "written", "conflict", "exists", "gone", "refused", "failed" (for logs).
std::string_view OutcomeName(WriteOutcome o);

}  // namespace berth::reconcilers
