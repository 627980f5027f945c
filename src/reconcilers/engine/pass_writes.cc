#include "reconcilers/engine/pass_writes.h"

namespace berth::reconcilers {

namespace {
thread_local PassWrites* collecting = nullptr;
}  // namespace

const char* WriteKindName(WriteKind kind) {
  switch (kind) {
    case WriteKind::kRunStatus: return "RunStatus";
    case WriteKind::kAdmission: return "Admission";
    case WriteKind::kVerify: return "Verify";
    case WriteKind::kPodCreate: return "PodCreate";
    case WriteKind::kPodDelete: return "PodDelete";
    case WriteKind::kRunDelete: return "RunDelete";
    case WriteKind::kTicket: return "Ticket";
    case WriteKind::kPositions: return "Positions";
    case WriteKind::kFleetStatus: return "FleetStatus";
    case WriteKind::kTeamStatus: return "TeamStatus";
    case WriteKind::kSetAside: return "SetAside";
  }
  return "?";
}

bool PassWrites::Add(PassWrite w) {
  if (gate_.stopping) return false;
  if (auto it = index_.find(w.key); it != index_.end()) {
    // This pass' own write for the key: only a decision replacing a background write.
    PassWrite& old = list_[it->second];
    if (w.background || !old.background) return false;
    dropped_[it->second] = true;
    --background_added_;
    it->second = list_.size();
  } else {
    if (gate_.backing_off.contains(w.key)) return false;
    if (gate_.busy.contains(w.key) && (w.background || !gate_.replaceable.contains(w.key))) return false;
    if (gate_.replaceable.contains(w.key)) --gate_.background_queued;  // the decision replaces it
    index_.emplace(w.key, list_.size());
  }
  if (w.background) ++background_added_;
  list_.push_back(std::move(w));
  dropped_.push_back(false);
  return true;
}

bool PassWrites::Busy(const std::string& key) const { return gate_.busy.contains(key) || index_.contains(key); }

std::vector<const PassWrite*> PassWrites::List() const {
  std::vector<const PassWrite*> out;
  out.reserve(list_.size());
  for (size_t i = 0; i < list_.size(); ++i) {
    if (!dropped_[i]) out.push_back(&list_[i]);
  }
  return out;
}

std::vector<PassWrite> PassWrites::Take() {
  std::vector<PassWrite> out;
  out.reserve(list_.size());
  for (size_t i = 0; i < list_.size(); ++i) {
    if (!dropped_[i]) out.push_back(std::move(list_[i]));
  }
  list_.clear();
  dropped_.clear();
  return out;
}

PassWrites::Collecting::Collecting(PassWrites& writes) : outer_(collecting) { collecting = &writes; }
PassWrites::Collecting::~Collecting() { collecting = outer_; }
PassWrites* PassWrites::Current() { return collecting; }

}  // namespace berth::reconcilers
