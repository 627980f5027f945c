#pragma once
// The engine's names for the Fleet API (api/v1alpha1/fleet.h).

#include <memory>

#include "api/v1alpha1/codec.h"
#include "reconcilers/objects/run_types.h"

namespace berth::reconcilers {

using api::Fleet;
using api::FleetSpec;
using api::FleetStatus;
using InstanceRecord = api::FleetInstance;

// The informer's decoder: the typed Fleet, nullptr when there is none (no name).
std::shared_ptr<const Fleet> DecodeFleet(const k8s::json::Value& obj);

}  // namespace berth::reconcilers
