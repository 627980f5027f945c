#pragma once
// An Event about a run, typed (api::EventType, api::ReasonCode) from where it is decided until
// it is posted: only the recorder (k8s/events.h, the I/O edge) takes the API's spelling.

#include <string>

#include "k8s/events.h"
#include "reconcilers/objects/run_types.h"

namespace berth::reconcilers {

struct RunEvent {
  api::EventType type = api::EventType::kNormal;
  ReasonCode reason;
  std::string message;
};

inline void RecordEvent(k8s::EventRecorder& events, const k8s::ObjectReference& ref, const RunEvent& e) {
  events.Record(ref, api::ToApi(e.type), e.reason.api(), e.message);
}

}  // namespace berth::reconcilers
