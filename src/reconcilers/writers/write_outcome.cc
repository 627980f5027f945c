#include "reconcilers/writers/write_outcome.h"

namespace berth::reconcilers {

WriteOutcome OutcomeOf(const k8s::Status& s) {
  if (s.ok()) return WriteOutcome::kWritten;
  if (s.IsAlreadyExists()) return WriteOutcome::kExists;
  if (s.IsConflict()) return WriteOutcome::kConflict;
  if (s.IsNotFound()) return WriteOutcome::kGone;
  if (s.code() == 400 || s.IsInvalid()) return WriteOutcome::kRefused;
  return WriteOutcome::kFailed;
}

std::string_view OutcomeName(WriteOutcome o) {
  switch (o) {
    case WriteOutcome::kWritten:
      return "written";
    case WriteOutcome::kConflict:
      return "conflict";
    case WriteOutcome::kExists:
      return "exists";
    case WriteOutcome::kGone:
      return "gone";
    case WriteOutcome::kRefused:
      return "refused";
    case WriteOutcome::kFailed:
      return "failed";
  }
  return "failed";
}

}  // namespace berth::reconcilers
