#include "reconcilers/state/write_cache.h"

namespace berth::reconcilers {

std::string_view StateName(WriteState s) {
  switch (s) {
    case WriteState::kAssumed:
      return "Assumed";
    case WriteState::kWritten:
      return "Written";
    case WriteState::kUnknown:
      return "Unknown";
    case WriteState::kConfirmed:
      return "Confirmed";
  }
  return "?";
}

}  // namespace berth::reconcilers
