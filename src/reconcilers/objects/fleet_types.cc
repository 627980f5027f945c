#include "reconcilers/objects/fleet_types.h"

namespace berth::reconcilers {

std::shared_ptr<const Fleet> DecodeFleet(const k8s::json::Value& obj) {
  auto f = api::DecodeFleet(obj);
  if (!f.ok()) return nullptr;
  return std::make_shared<const Fleet>(std::move(f.value()));
}

}  // namespace berth::reconcilers
