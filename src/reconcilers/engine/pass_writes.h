#pragma once
// The writes a pass decided, as data (issue 46): what a test compares (the dispatch key, the kind,
// the target object, the body sent) and the closure that carries it out.
//
// A pass decides on its snapshot into one PassWrites and then carries the list out in order
// (RunController: KeyedWriter::Dispatch, one write after the other; the order of the list is the
// order the writes were decided in, so a run's status write comes before its Pods' writes as it
// always did). PassWrites::Add answers what KeyedWriter::Dispatch would answer for the same key at
// the pass' start, so that no decision changes because its write is data now:
//   - refused once the engine is stopping;
//   - refused when the key had a write queued or in flight, or was backing off, when the pass began
//     (the Gate, taken by the edge from the KeyedWriter at the pass' start), unless that write is a
//     background write still waiting and this one is a decision: the decision replaces it;
//   - refused when this pass already has a write for the key, with the same one exception: a
//     decision replaces a background write of this pass (the background write leaves the list; the
//     decision takes its place at the end of it, as the KeyedWriter queues it).
// A decision that replaced a background write the KeyedWriter has handed to a worker in the
// meantime is refused when carried out: its `refused` undoes what the component did on taking it,
// and the next pass decides again, as after any refusal.
//
// The closures are called only when carried out (never in the pass' unit tests): they read nothing
// the pass read, a closure that needs a fresh read does it itself (on a writer thread).
//
// Not thread-safe: the loop thread (or a test) only. The components of a pass hand their writes to
// a DispatchWrite; during a pass it appends to the pass' PassWrites (Collecting), outside one
// (writer threads, the edge's own syncs) the edge dispatches at once.

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace berth::reconcilers {

enum class WriteKind : uint8_t {
  kRunStatus,    // a run's status patch (lifecycle, waiting status, ending)
  kAdmission,    // a run's admission (status patch with its placement; Admissions)
  kVerify,       // a read that answers an admission whose outcome is unknown
  kPodCreate,    // a run's Pods (and Service) created, bound to their nodes
  kPodDelete,    // Pods stopped
  kRunDelete,    // a run deleted (its TTL after finishing)
  kTicket,       // a workload's ticket held or released
  kPositions,    // a sequence of queuePosition writes (PositionWriter)
  kFleetStatus,  // a Fleet's status
  kTeamStatus,   // a Team's status
  kSetAside,     // a run berth cannot read, reported (SetAsideReporter)
};
const char* WriteKindName(WriteKind kind);

struct PassWrite {
  std::string key{};    // the KeyedWriter key ("ns/name", "fleet:NAME", "team:NAME", ...)
  WriteKind kind = WriteKind::kRunStatus;
  std::string target{}; // the object written: "ns/name" of a run, a Fleet's or Team's name
  // The body sent, made on request (a test; never by the pass itself: no work per write that
  // nobody reads). Empty function: no body (a delete, a read).
  std::function<std::string()> body{};
  std::function<bool()> write{};  // carries it out; false: failed, the key backs off
  bool background = false;      // a refresh that yields to decisions
  // Called when the KeyedWriter refuses the write when it is carried out although the pass took
  // it (a decision replacing a refresh a worker took meanwhile): what the component did when
  // Dispatch refused (an admission answered Refused, a verification Unknown, a report forgotten).
  // Empty: nothing to undo (the next pass decides again).
  std::function<void()> refused{};
};

// Hands one write on; answers whether it was taken (see PassWrites::Add).
using DispatchWrite = std::function<bool(PassWrite)>;

class PassWrites {
 public:
  // What the KeyedWriter had when the pass began.
  struct Gate {
    std::unordered_set<std::string> busy;         // a write queued or in flight
    std::unordered_set<std::string> backing_off;  // failed, waiting for its backoff
    std::unordered_set<std::string> replaceable;  // a background write still waiting (⊂ busy)
    size_t background_queued = 0;                 // background writes waiting for a worker
    bool stopping = false;
  };
  PassWrites() = default;
  explicit PassWrites(Gate gate) : gate_(std::move(gate)) {}

  // Takes `w` into the list, or refuses it (the header's rules); KeyedWriter::Dispatch's answer.
  bool Add(PassWrite w);
  // Whether a write for `key` is queued or in flight: at the pass' start, or added by this pass
  // (KeyedWriter::Busy as the pass sees it).
  bool Busy(const std::string& key) const;
  // Whether this pass has a write for `key`.
  bool Has(const std::string& key) const { return index_.contains(key); }
  // Background writes waiting for a worker: at the pass' start and this pass' (KeyedWriter::BackgroundQueued).
  size_t BackgroundQueued() const { return gate_.background_queued + background_added_; }

  // The list in the order to carry it out (replaced background writes left out).
  std::vector<const PassWrite*> List() const;
  // The list, moved out (the pass' writes to carry out); leaves this empty.
  std::vector<PassWrite> Take();
  // The keys of the writes taken (dispatched_ of old: the pass' own writes).
  const std::unordered_map<std::string, size_t>& keys() const { return index_; }

  // While one lives, Current() on this thread is `writes` (the pass' list the components' writes
  // go to); on other threads nothing.
  class Collecting {
   public:
    explicit Collecting(PassWrites& writes);
    ~Collecting();
    Collecting(const Collecting&) = delete;
    Collecting& operator=(const Collecting&) = delete;

   private:
    PassWrites* outer_;
  };
  // The pass' list this thread collects into, or null.
  static PassWrites* Current();

 private:
  Gate gate_;
  std::vector<PassWrite> list_;
  std::vector<bool> dropped_;                     // replaced by a later decision
  std::unordered_map<std::string, size_t> index_;  // key -> its write in list_
  size_t background_added_ = 0;                   // this pass' background writes still in the list
};

}  // namespace berth::reconcilers
