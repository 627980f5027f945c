#pragma once
// berth's engine: watches Runs, Fleets, Nodes and berth's Pods; one scheduling loop owns the
// queue and every decision; a bounded pool of writers carries the decisions to the API.
//
// Level-based and restart-safe: every decision is recomputed from the caches (the API) on each
// pass. The only memory kept between passes is (a) admissions whose status write is in flight
// ("assumed", so a block is never given twice while the watch catches up; rolled back only when
// the write provably was not applied, see "Ambiguous writes" below), (b) when each waiting run's
// message was last written (throttling) and (c) which runs a queue-position write sequence in
// flight is about to touch (reconcilers/queue_positions.h).
//
// Admission of a run, in an order that survives a crash at any point:
//   1. finalizer on the Run (so its Pods are cleaned up on delete),
//   2. Run status: phase Scheduled + fleet + placement + scheduledAt (the commit, guarded by
//      resourceVersion),
//   3. Fleet status counts the run on its instances (runsStarted, countedRuns: idempotent),
//   4. Pods created already bound (spec.nodeName set at creation, so no pods/binding write;
//      deterministic names; AlreadyExists is success when the Run owns what exists, else the run
//      fails InvalidSpec and the object is left alone; a Pod an older berth left unbound, once the
//      cache shows it, is bound through pods/binding, "already bound" is success), plus a
//      headless Service for multi-node runs (the same rule for AlreadyExists).
// Step 4 waits until step 3 is visible, so a run never runs uncounted.
//
// Ambiguous writes: a status write that got no answer, a 5xx, or a 409 (which may answer the
// client's own retry of a write that was applied) may have been applied. Such an admission stays
// assumed, its blocks held, until the informer cache shows the run admitted (applied) or a later
// resourceVersion of the run still pending (not applied), or a GET of the run says which. Only a
// 404 or a 422 (the server checked the resourceVersion and refused) releases the blocks at once.
//
// Incremental passes: a pass visits the runs that can need something (every run not finished,
// every run with a write or an assumption of ours outstanding, every finished run that is being
// deleted, still has Pods to stop or whose TTL came due) and the runs that changed since the last
// pass (the run's own watch events and its Pods'). A finished run that needs nothing leaves the
// working set until it changes again or its ttlSecondsAfterFinished comes due, so a pass costs
// O(changed + pending + running), not O(every run ever). A Scheduled or Running run that the last
// visit found needing nothing is not reconciled again (its blocks still count) until it, its Pods,
// one of its nodes or a Fleet's spec changes, or its next deadline (at most status_refresh away).
// Likewise a pending run found queueable keeps its queue entry without being decided again until
// it, its Pods or a Namespace (its priority cap) changes; the core still sees it every pass. A
// placed run's record for the cluster view (PlacedRun: its blocks, priority, whether its Pods are
// all in the cache) is kept from pass to pass while the run, its Pods and the Namespaces are
// unchanged (Memo::placed). Each run is looked up once per pass (KeyedRun: its key, object and
// memo), and its object is read from the informer's cache again only after a watch event touched
// it (Memo::run); what the steps ask of it first is read into the memo once per version
// (Memo::Read), and this pass' facts of the run (touched, busy, its entry in the core's result)
// are flags on the memo, so no step looks a run up by key. The list of runs is the last pass'
// while no run entered or left the working set (keyed_). The first pass after the caches sync
// visits every run (the informers report every object as added).
// The scheduling core itself runs only when its input (the queue, the cluster snapshot) changed
// since its last cycle or the time may change its answer (CoreResultStands); otherwise the pass
// carries on with the last result. The cluster view (PassView) and the instances' states
// (described_) are kept likewise while what they are made of is unchanged. The periodic looks at
// quiet placed runs and current waiting runs (status_refresh) are spread: at most
// refreshes_per_pass of each a pass, the rest in the next passes (never a due deadline).
// Waiting runs' status writes are information: at most waiting_writes_queued wait for a writer at
// once, and the next passes write the rest in queue order.
//
// Priority changes (issue 16): a pass costs O(pending), and a priority patch used to show in the
// queue view only after the pass under way and the next. The view (/queue, the dashboard) now
// shows a queued run in its new place within milliseconds (ShowPriorityNews, called at points
// through the pass); the queue itself, positions and statuses still change only in the next pass
// that visits the run, so every decision and status write is made as before.
//
// Ending a run: its terminal status (Failed: max duration, pod failure, interruption without
// retry) is written before its Pods are deleted, so a crash in between leaves a Failed run whose
// leftover Pods the next pass deletes, never a Running run without Pods (which would read as an
// interruption and be resubmitted). A resubmission deletes the Pods first and then puts the run
// back in the queue: its blocks must not be offered again while its Pods still run.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "k8s/client.h"
#include "k8s/clock.h"
#include "k8s/events.h"
#include "k8s/informer.h"
#include "k8s/objects.h"
#include "reconcilers/cluster_view.h"
#include "reconcilers/fleet_types.h"
#include "reconcilers/keyed_writer.h"
#include "reconcilers/lifecycle.h"
#include "reconcilers/namespace_policy.h"
#include "reconcilers/pod_builder.h"
#include "reconcilers/queue_positions.h"
#include "reconcilers/run_types.h"
#include "reconcilers/workqueue.h"
#include "scheduling/cycle_result.h"
#include "scheduling/instance_state.h"
#include "scheduling/run_queue.h"

namespace berth::reconcilers {

struct EngineOptions {
  std::chrono::milliseconds aging_interval{scheduling::kDefaultAgingInterval};
  int writers = 16;  // API writes in flight at most
  std::chrono::milliseconds status_refresh{5000};  // waiting runs' message, at most this often
  size_t position_limit = 100;                     // queuePosition kept for the first N places
  // Waiting runs' status writes (information, never a decision) queued for a writer at most; the
  // rest wait for a later pass (100,000 runs submitted at once are shown their status in queue
  // order as the API takes it, and the engine does not hold 100,000 writes and their keys).
  size_t waiting_writes_queued = 1000;
  // A resubmitted run queues again after this delay, doubled for each attempt in a row that ran
  // less than kBackoffResetAfter, up to max_retry_backoff. 0 = at once.
  std::chrono::milliseconds retry_backoff{10 * 1000};
  std::chrono::milliseconds max_retry_backoff{10 * 60 * 1000};
  // A run whose Pods have not all started this long after placement fails with StartTimeout (or
  // is resubmitted under retry on error); spec.startTimeout overrides it. 0 = off.
  std::chrono::milliseconds start_timeout{10 * 60 * 1000};
  // queuePosition writes per second at most (and at once): see reconcilers/queue_positions.h.
  // 20: what the former per-run refresh (100 places, each at most every 5 s) could write.
  double position_writes_per_second = 20;
  // A finished run without spec.ttlSecondsAfterFinished is deleted this long after finishedAt.
  // nullopt = kept.
  std::optional<std::chrono::milliseconds> finished_run_ttl;
  // Runs a pass looks at only because their periodic look (status_refresh) came due, at most, of
  // each kind (quiet placed runs, waiting runs with a current status); the rest wait for the next
  // passes, which come at once. A deadline or a change is never put off.
  size_t refreshes_per_pass = 4096;
  // For tests: each pass that keeps the last cluster view (PassView) also builds it anew and
  // aborts the process if the two differ (the core's snapshot, the instances' records, the
  // conflicts and invalid fleets).
  bool verify_kept_view = false;
};

// An attempt that ran at least this long resets the retry backoff.
inline constexpr std::chrono::minutes kBackoffResetAfter{10};

// One pending run as the queue endpoint, CLI and dashboard show it.
struct QueueEntry {
  int64_t position = 0;
  std::string ns, name;
  int32_t priority = 0, effective_priority = 0;
  int64_t nodes = 1;
  std::vector<std::string> fleets;
  k8s::TimePoint submitted_at{};
  std::string reason, message;
};

// What the engine reports to whoever watches it (the controller's Prometheus metrics).
// Called from the loop and writer threads; implementations must be thread-safe and quick.
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  struct FleetCounts {
    std::map<std::string, int64_t> instances_by_state;  // "Idle", "Busy", ...
    int64_t busy_blocks = 0, idle_blocks = 0, unavailable_blocks = 0;
  };
  struct PassSummary {
    std::chrono::microseconds duration{0};
    bool decided = false;  // the scheduling core ran (otherwise its last result stood: CoreResultStands)
    // Pending runs by (fleet or "none", reason).
    std::map<std::pair<std::string, std::string>, int64_t> pending;
    std::map<std::string, FleetCounts> fleets;
    size_t writes_queued = 0;  // writes waiting or in flight
    // How long the run that has waited longest in the queue (Pending, not suspended, not backing
    // off, not placed by this pass) has waited: since its submission, or since it went back to the
    // queue after a resubmission (as OnAdmitted counts); 0 when the queue is empty.
    std::chrono::milliseconds oldest_pending_wait{0};
    uint64_t events_posted = 0, events_dropped = 0;  // totals since start
    // Runs set aside because berth cannot read them (nested deeper than json::kMaxDepth): out of
    // the queue, each with a Warning Event and a status that says why (issue 29).
    int64_t unreadable_runs = 0;
  };
  virtual void OnPass(const PassSummary& summary) = 0;
  // A run was admitted after waiting `wait` since its submission (or last resubmission).
  virtual void OnAdmitted(std::chrono::milliseconds wait) = 0;
  // A run reached Succeeded or Failed with `reason`.
  virtual void OnFinished(const std::string& phase, const std::string& reason) = 0;
  // A running run was evicted for a higher-priority run on `fleet` (issue 17).
  virtual void OnPreempted(const std::string& fleet) { (void)fleet; }
  // A write to the API failed and will be retried with backoff.
  virtual void OnWriteFailed(const std::string& what) = 0;
};

class RunController {
 public:
  RunController(k8s::ClientPtr client, const k8s::Clock& clock, EngineOptions options);
  ~RunController();

  // Starts the watches (a standby keeps its caches warm) ...
  void StartInformers();
  // ... and the scheduling loop and writers (only the leader calls this).
  void StartLoop();
  void Start() {
    StartInformers();
    StartLoop();
  }
  // Stops the loop, waits for writes in flight, stops the watches.
  void Stop();
  bool HasSynced() const;

  // The queue as of the last pass, in order. Made on request (see "The queue view" in
  // development.md): when a pass changed it since it was last made, the loop thread makes it
  // between two steps and this waits for it (up to kViewWait; then the last one made).
  std::vector<QueueEntry> Queue() const;
  static constexpr std::chrono::seconds kViewWait{5};
  // The priority cap of a namespace as cached (label berth.dev/max-priority); nullopt: none.
  std::optional<PriorityCap> CapOf(const std::string& ns) const;
  // The same for the admission webhook: false when the Namespace cache has not synced or does
  // not hold `ns` (yet), so the caller asks the API server instead.
  bool CachedCapOf(const std::string& ns, std::optional<PriorityCap>& cap) const;
  // The Fleets as cached (with the status berth last wrote).
  std::vector<std::shared_ptr<const Fleet>> Fleets() const { return fleets_->List(); }

  // Hook for metrics: called after every pass with the cycle duration and the result.
  // Must be set before Start; not owned.
  void SetObserver(EngineObserver* observer) { observer_ = observer; }

  // Asks for a pass now. The loop passes on every change it watches, at the deadlines its passes
  // note and otherwise once per status_refresh, reading the clock at least once a second of real
  // time; a test that moves a FakeClock calls this so the time it added is seen at once.
  void Wake();

 private:
  struct Memo {
    std::optional<PlacedRun> assumed;  // admission written or in flight, not yet in the cache
    std::string assumed_rv;            // the run's resourceVersion when assumed
    // Non-zero while the outcome of the admission's status write is unknown (see "Ambiguous
    // writes"): the resourceVersion that write was guarded by.
    uint64_t unconfirmed_rv = 0;
    k8s::TimePoint last_wait_write{};
    // Our last status write's resourceVersion: the run is left alone until the cache has it.
    uint64_t awaiting_rv = 0;
    // Pods of this uid/attempt/scheduledAt were handed to a writer at this time (not again until
    // it is stale).
    std::string pods_ensured_for;
    // The spec (all but the priority) as first seen admitted, to tell the user when a later
    // change is ignored.
    std::string admitted_spec;
    // The victims of the last preemption this run's Preempting Event announced.
    std::string preemption_announced;
    base::MonoTime pods_ensured_at{};
    // A placed run found needing nothing (DecidePlaced: kNothing) at this resourceVersion: later
    // passes leave it alone until it, its Pods, one of its nodes or a Fleet's spec changes, or
    // `quiet_until` (its next deadline, at most status_refresh later). See "Incremental passes".
    std::string quiet_rv;
    k8s::TimePoint quiet_until{};
    std::optional<k8s::TimePoint> quiet_deadline;  // its next deadline (quiet_until without the refresh)
    // A pending run found queueable (DecidePending: kQueue, not busy) at this resourceVersion:
    // later passes keep its queue entry as it is, without deciding again, until it or its Pods
    // change, or a Namespace does (its priority cap). See "Incremental passes".
    std::string queued_rv;
    // The last pass (pass_no_) whose working set held the run, and that put it in the queue.
    uint64_t seen_pass = 0, queued_pass = 0;
    // A placed run as BlockHolders last made it, at this resourceVersion: the same while the run,
    // its Pods (quota_pending) and the Namespaces (its priority's cap) are unchanged.
    std::shared_ptr<const PlacedRun> placed;
    std::string placed_rv;
    // The run as WorkingSet last read it from the cache; dropped when a watch event touches it.
    std::shared_ptr<const Run> run;
    // The pass (pass_no_) in which the run was touched (its object or Pods changed: TakeWriterNews)
    // and had a write queued or in flight (busy), and its entry in that pass' CycleResult::waiting
    // (valid while waiting_pass is the pass under way): so that the per-run steps ask the memo
    // they hold instead of looking the key up in a set or map.
    uint64_t touched_pass = 0, busy_pass = 0, waiting_pass = 0;
    uint64_t positioned_pass = 0;  // the pass whose position writes (WritePositions) include the run
    const scheduling::WaitingRun* waiting = nullptr;
    // What the per-run steps ask of `run` first, read once per version of it (Read, by
    // WorkingSet): its resourceVersion, whether it has a preemption record, the queue position it
    // shows (none while it is being deleted: its place is not held for it). A step that needs more
    // reads the run itself; these spare the 100,000 runs that need nothing a visit to their object.
    std::string run_rv;
    bool has_preemption = false;
    std::optional<int64_t> shown_position;
    // For the waiting step (CarryOutWaiting), read likewise: since when the run waits (its
    // creation, or its return to the queue after a retry: Report's oldest wait), when it gives up
    // waiting for capacity (a deadline), and from when EndsWaiting holds for it (nullopt: never;
    // a run waiting for quota or preempting never ends waiting).
    k8s::TimePoint wait_since{};
    std::optional<k8s::TimePoint> gives_up_at, ends_waiting_at;
    uint64_t version = 0;  // how many times Read ran: one per object read
    // ApplyWaiting found the status of this version current for this reason code and effective
    // priority: until its refresh is due, a later pass with the same two need not look again.
    uint64_t current_version = 0;
    scheduling::WaitCode current_code{};
    int32_t current_effective = 0;
    void Read();  // from `run`, once per object WorkingSet reads
  };
  // This pass' flags of a memo (see Memo::touched_pass).
  bool Touched(const Memo& m) const { return m.touched_pass == pass_no_; }
  bool Busy(const Memo& m) const { return m.busy_pass == pass_no_; }
  const scheduling::WaitingRun* WaitingOf(const Memo& m) const { return m.waiting_pass == pass_no_ ? m.waiting : nullptr; }
  // The memo a queued run's entry carries (PendingRun::owner: ReconcileAll queues each run with
  // its memo, and a run whose memo is erased leaves the queue in the same pass). Valid from the end
  // of ReconcileAll to the end of the pass.
  static Memo* OwnerOf(const void* owner) { return const_cast<Memo*>(static_cast<const Memo*>(owner)); }

  // A run of this pass' working set, by key (sorted): the key is a reference into active_ (which
  // keeps it while the pass lasts: only WorkingSet, before the list is made, and Settle, after a
  // run's last use, erase from it), the cached object (the memo's Memo::run, not a copy), and its memo (memo_ keeps its elements'
  // addresses; WorkingSet makes the memo, Settle erases it last). One lookup of each per pass.
  struct KeyedRun {
    const std::string& key;
    const std::shared_ptr<const Run>& run;  // the memo's (Memo::run: set by WorkingSet, kept for the pass)
    Memo* memo;
  };
  using Keyed = std::vector<KeyedRun>;

  // berth's Pods (by run, node, and those the kubelet still counts) and everyone else's.
  void MakePodInformers();
  void Loop();
  // Blocks until the next pass is due (see the definition); false when the engine stops.
  bool WaitForWork();
  // The next pass is due by `at` at the latest (loop thread only; reset by each pass).
  void NoteDeadline(k8s::TimePoint at);
  static constexpr std::chrono::milliseconds kCoalesce{5};         // between two passes at least
  static constexpr std::chrono::milliseconds kMaxGap{25};           // and as long as the last took, up to this
  static constexpr std::chrono::milliseconds kMinDeadlineDelay{50};  // after a pass, for deadlines
  static constexpr std::chrono::milliseconds kMaxSleep{1000};       // real time, per wait slice
  // One scheduling pass: the steps below, in this order.
  void Pass();
  // When a pass comes at the latest after `from` with nothing changing and no deadline: one
  // status_refresh (WaitForWork's resync; also how long a core result stands, CoreResultStands).
  k8s::TimePoint ResyncAt(k8s::TimePoint from) const;
  // Where a pass spends its time: Mark(step) after each step; the total for the metric.
  struct PassPhases {
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now(), mark = started;
    std::string text;  // " workingset=1.2ms view=3.4ms ..."
    void Mark(const char* step);
    std::chrono::microseconds Total() const {
      return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    }
  };
  // The pass' view of the cluster: placed runs (into `placed`), holds, the core's snapshot. Kept
  // from the last pass (view_) while what it is made of is unchanged: the Fleet, Node and Pod
  // caches (Informer::Version), the placed runs' records (the same objects: Memo::placed) and no
  // instance paused for a refusal; otherwise made anew. view_gen_ moves whenever it changes.
  ClusterView& PassView(const Keyed& keyed, std::vector<std::shared_ptr<const PlacedRun>>& placed, k8s::TimePoint now);
  struct ViewInputs {
    uint64_t fleets = 0, nodes = 0, pods = 0, others = 0;
    friend bool operator==(const ViewInputs&, const ViewInputs&) = default;
  };
  std::unique_ptr<ClusterView> view_;                        // loop thread only
  ViewInputs view_inputs_;                                   // the caches' versions it was made from
  std::vector<std::shared_ptr<const PlacedRun>> view_placed_;  // and the placed runs
  bool view_paused_ = false;                                 // PauseRefusedInstances changed it
  uint64_t view_gen_ = 0;
  // The pass' nominations into the view (view_gen_ moves when they differ; PassView does the
  // same for the namespaces' quotas).
  void SetNominations(ClusterView& view, std::vector<scheduling::Nomination> nominations);
  // Queue positions, then every waiting run's status (ApplyWaiting) but the busy and moved ones.
  // Returns since when the longest-waiting run (one not held by its namespace's quota) waits.
  std::optional<k8s::TimePoint> CarryOutWaiting(const Keyed& keyed, const scheduling::CycleResult& result, std::unordered_set<std::string> frozen,
                       k8s::TimePoint now, PassPhases& phases);
  // Takes what the writers reported since the last pass (failed, unconfirmed and confirmed
  // admissions, written resourceVersions, failed Fleet writes, touched runs) into the memos and
  // the working set; returns the keys with a write queued or in flight.
  std::unordered_set<std::string> TakeWriterNews();
  // The runs this pass visits (see "Incremental passes").
  // The list lives in keyed_ until the next pass makes it (Settle erases runs after their last use).
  const Keyed& WorkingSet(k8s::TimePoint now);
  // Puts a run into the working set (active_); the next WorkingSet makes its list anew.
  void Activate(const std::string& key);
  // Priority patches of queued runs shown in the queue view (/queue) at once, before the pass
  // that re-places them in the queue: called at points through the pass (loop thread only; the
  // view only, never queue_ or a status). See "Priority changes" in development.md.
  void ShowPriorityNews();
  static constexpr size_t kNewsEvery = 256;  // runs between two ShowPriorityNews in a per-run loop
  // Moves the run `key` in `view` to the place its new priorities give it; false when absent.
  static bool MoveInView(std::vector<QueueEntry>& view, const std::string& key, int32_t priority, int32_t effective);
  // An admitted run's record for the cluster view (Memo::placed).
  std::shared_ptr<const PlacedRun> PlacedRecord(const std::string& key, const Run& run) const;
  // Runs holding blocks: admitted in the cache (their record stays in Memo::placed for the pass:
  // PassView's Holds reads those runs), or assumed while our write catches up.
  std::vector<std::shared_ptr<const PlacedRun>> BlockHolders(const Keyed& keyed);
  // Instances whose kubelet refused one of our Pods take no new runs until their situation
  // changes (or kRefusalMaxPause); also notes why one unavailable instance per fleet is.
  void PauseRefusedInstances(ClusterView& view, const std::vector<std::shared_ptr<const k8s::Node>>& nodes,
                             const std::vector<NodeHold>& holds, k8s::TimePoint now);
  // The lifecycle of every visited run; pending ones go into the queue, the rest leave it.
  // Returns the runs whose queuePosition must not be written now.
  // (Busy: a run with a write queued or in flight when the pass began.)
  std::unordered_set<std::string> ReconcileAll(const Keyed& keyed, const ClusterView& view, k8s::TimePoint now);
  // The queue as the /queue endpoint, the CLI and the dashboard show it, from queue_ and the
  // pass' result (PublishQueue); made only when Queue() asked for it since the last pass
  // (MakeViewIfWanted). Loop thread only.
  void PublishQueue(const scheduling::CycleResult& result);
  void MakeViewIfWanted(const scheduling::CycleResult& result);
  scheduling::CycleResult last_result_;  // the last pass' result, for a view asked for between passes
  // Whether the last core cycle's result (last_result_) is this pass' too, so the core need not
  // run: its input is the same (the queue's version, the view's view_gen_), it placed and
  // preempted nothing, and the time is before core_until_ (the first deadline that pass noted, at
  // most status_refresh after it: when a pass would come anyway on an unchanged cluster, which is
  // when the core reads the time again). A pass whose only news is berth's own status echoes, or
  // a change to a run that leaves its queue entry as it was, decides nothing new. See the engine's
  // table in development.md.
  bool CoreResultStands(k8s::TimePoint now) const;
  uint64_t core_view_gen_ = 0;                      // view_gen_ of the last core cycle's input
  uint64_t core_queue_version_ = 0;                 // queue_.version() after it
  std::optional<k8s::TimePoint> core_until_;        // nullopt: no cycle yet
  // Tells the observer (metrics) how the pass went.
  // Runs the informer set aside (k8s::SetAsideObject): each new one (uid and generation) gets a
  // status (reason InvalidSpec, condition Ready=False with why) and a Warning Event, once.
  void ReportSetAside(k8s::TimePoint now);
  void Report(std::chrono::microseconds took, const scheduling::CycleResult& result, bool decided, k8s::TimePoint now,
              std::optional<k8s::TimePoint> oldest_waiting, const std::vector<scheduling::InstanceStatus>& described);
  // Puts a run into the next pass' working set and wakes the loop (informer threads).
  void Touch(const std::string& run_key);
  // writer_.Dispatch (reconcilers/keyed_writer.h: one write per key, backoff after a failed one,
  // `background` writes yield to decisions), refused once the engine is stopping.
  bool Dispatch(const std::string& key, std::function<bool()> fn, bool background = false);

  // Lifecycle of one run from the caches; may dispatch writes. Returns true when it is pending
  // (belongs in the queue).
  bool Reconcile(const Run& run, const ClusterView& view, k8s::TimePoint now, bool busy);
  // A waiting run: carries out reconcilers/lifecycle.h's DecidePending (stop, invalid spec,
  // suspend, leftover Pods, resume, retry backoff). Returns whether it belongs in the queue.
  bool ReconcilePending(const Run& run, k8s::TimePoint now, bool busy);
  // A Scheduled or Running run: carries out reconcilers/lifecycle.h's decision, then notes spec
  // changes that do not apply any more and keeps observedGeneration current.
  void ReconcilePlaced(const Run& run, const ClusterView& view, k8s::TimePoint now);
  // Carries out the lifecycle's decision for a placed run; false when there was nothing to do
  // (or the Pods it would create were just asked for).
  bool CarryOutPlaced(const Run& run, const PlacedDecision& d,
                      const std::map<std::string, std::shared_ptr<const k8s::Pod>>& pods, const ClusterView& view,
                      k8s::TimePoint now);
  void HandleDeletion(const Run& run);
  void EnsurePods(const Run& run, const std::string& gpu_resource, const ClusterView& view);
  // EnsurePods once per admission (again after 10 s without the Pods in the cache), once the
  // fleet's durable count has the run; true when it acted or waits for the count.
  bool CreatePodsOnce(const Run& run, const ClusterView& view);
  // Writer thread: admission step 4, the headless Service (multi-node) and each rank's Pod
  // created bound; a Pod the API server refuses fails the run (FailInvalidSpec).
  bool CreatePods(const Run& r, const std::vector<RankAssignment>& ranks, const std::string& gpu_resource,
                  const std::map<std::string, std::string>& bound);
  // Writer thread: the run fails with InvalidSpec and `why`.
  bool FailInvalidSpec(const Run& r, const std::string& why);
  // Writes the MaxDurationExceeded status, then stops the attempt's Pods.
  void EndAfterMaxDuration(const Run& run, const std::map<std::string, std::shared_ptr<const k8s::Pod>>& pods,
                           const std::string& message, k8s::TimePoint now);
  // Remembers the resourceVersion a successful write returned (writer threads).
  // A write based on `run` met a newer version (409): leave the run alone until the cache has a
  // newer one. Returns true (a conflict is no reason to back off).
  bool NoteStale(const Run& run);
  // Writer threads: writes `next` as the run's status, guarded by the resourceVersion of `run`.
  // nullopt when written (NoteWritten has seen the answer); otherwise what the writer task returns:
  // true after a conflict (NoteStale), false to retry with backoff (logged, except a 404).
  [[nodiscard]] std::optional<bool> PatchStatus(const Run& run, const RunStatus& next);
  // Also tells the observer when `next` finished the run.
  void NoteWritten(const Run& run, const k8s::json::Document& answer, const RunStatus* next = nullptr);
  // Ends the attempt: back to the queue when the run retries on this event (and may), else
  // Failed. `reason` overrides the reason (default Interrupted or PodFailed). `stopped`: the user
  // stopped it (spec.stop): Failed, never a retry, a Normal Event. `preempted`: evicted for a
  // higher-priority run (an interruption without retry backoff; counted in the metrics).
  void FailOrRetry(const Run& run, bool interruption, const std::string& why, k8s::TimePoint now,
                   const std::string& reason = {}, bool stopped = false, bool preempted = false);
  // The status of a run sent back to the queue (FailOrRetry): Pending with `reason`, retry backoff
  // (none when `preempted`), resubmissions + 1, placement cleared.
  RunStatus RetryStatus(const Run& run, const std::string& reason, const std::string& why, k8s::TimePoint now,
                        bool preempted) const;
  // Preemption (issue 17): the runs that preempt (pending, status.preemption) as the core's
  // nominations. Evicts their victims that still hold their placement (once the cache shows the
  // preemptor's record, so the record always comes first); a record whose victim may no longer be
  // preempted is dropped (the core plans again).
  std::vector<scheduling::Nomination> Nominations(const Keyed& keyed, const std::vector<std::shared_ptr<const PlacedRun>>& placed,
                                                  const std::unordered_set<std::string>& frozen, k8s::TimePoint now);
  // Which preemption record each preempting run's waiting status carries this pass (preempting_).
  void NotePreempting(const std::vector<scheduling::Nomination>& nominations, const scheduling::CycleResult& result);
  // One victim of `preemptor`'s record: back in the queue or Failed, with reason Preempted.
  void Evict(const Run& victim, const Run& preemptor, const std::string& fleet, k8s::TimePoint now);
  // An ended run whose spec changed: its status and an Event say that it does not run again.
  void NoteSpecChangeAfterEnd(const Run& run);
  // spec.suspend: Pending with reason Suspended (`message` unless it already shows Suspended), no
  // queue position, no placement; its Pods stopped with their grace period (status first).
  void Suspend(const Run& run, const std::string& message, k8s::TimePoint now);
  void WriteStatus(const Run& run, const RunStatus& next, const std::string& event_type = {},
                   const std::string& event_reason = {}, const std::string& event_message = {},
                   bool background = false);
  // Assumes the placement (its blocks are held from now on) and hands the admission to a writer.
  void Admit(const Run& run, const scheduling::Placement& placement, k8s::TimePoint now);
  // The status that admits the run: phase Scheduled, fleet, placement, scheduledAt.
  RunStatus AdmittedStatus(const Run& run, const scheduling::Placement& placement, const PlacedRun& pr,
                           k8s::TimePoint now) const;
  // Writer thread: admission steps 1 and 2 (finalizer, then the status commit guarded by the
  // resourceVersion); notes a failed (rolled back), unconfirmed or applied admission.
  bool WriteAdmission(const Run& r, const RunStatus& next);
  // Tells the observer how long an admitted run waited.
  void NoteAdmitted(const Run& r);
  // GETs a run whose admission write is unconfirmed and settles it: admitted (keep the blocks
  // until the cache shows it) or not (release them). A failed GET is asked again with backoff.
  void VerifyAdmission(const Run& run, uint64_t base_rv);
  // Keeps the position the run shows (positions are WritePositions' alone).
  std::string Explain(const scheduling::CycleResult& result, const scheduling::WaitingRun& w) const;
  void ApplyWaiting(const Run& run, Memo& memo, const scheduling::CycleResult& result, const scheduling::WaitingRun& w,
                    k8s::TimePoint now);
  // Plans the queuePosition writes that take every waiting run towards its place in queue_
  // without two runs ever showing one place, and hands them to one writer as a sequence; a run's
  // last move carries its whole waiting status. Returns the runs in the sequence (their status is
  // its alone this pass). `runs`: every run in the cache, sorted by key; `frozen`: runs with a
  // write of their own in flight or not yet in the cache; `top`: TopOfQueue (places_ by run).
  std::unordered_set<std::string> WritePositions(
      const Keyed& runs, std::unordered_set<std::string> frozen, const std::vector<std::string>& top,
      const scheduling::CycleResult& result, k8s::TimePoint now);
  // Whether the last sequence of position writes is done and visible in the cache (then the next
  // may be planned).
  bool LastPositionsVisible();
  // The first position_limit waiting runs in queue order that stay in the queue: places 1, 2, ...
  std::vector<std::string> TopOfQueue(k8s::TimePoint now) const;
  // What the plan starts from: the positions runs show, the first position_limit waiting runs in
  // queue order (`top`), the runs whose position must be cleared.
  PositionPlanInput PositionInput(const Keyed& runs, std::unordered_set<std::string> frozen,
                                  const std::vector<std::string>& top) const;
  struct PositionWrite {
    std::shared_ptr<const Run> run;
    std::optional<int64_t> to;
    std::optional<RunStatus> full;  // the whole status to write, or just the position
  };
  // Writer thread: the sequence, one write after the other.
  bool WritePositionSequence(const std::vector<PositionWrite>& writes);
  // A run the cycle left waiting for `w` fails now instead (no retry on no-capacity, or its
  // retry.duration passed: Memo::ends_waiting_at); never for QuotaExceeded or Preempting.
  static bool EndsWaiting(const Memo& memo, const scheduling::WaitingRun& w, k8s::TimePoint now);
  // The status of a run waiting with `reason`, showing `position`.
  RunStatus WaitingStatus(const Run& run, const std::string& reason, int32_t effective, std::optional<int64_t> position,
                          const std::string& message, k8s::TimePoint now) const;
  // Each Fleet's status from the view and its instances' states, written when it differs from
  // what was last written or queued. False when a write could not be queued (try again).
  bool WriteFleetStatuses(const ClusterView& view, const std::vector<scheduling::InstanceStatus>& described,
                          k8s::TimePoint now);
  // The instances' states (DescribeInstances) as the last pass made them: kept while the view
  // (view_gen_) is, before described_until_ (the next instance's end of life) and while every
  // Fleet's status is written or queued (fleets_settled_; a failed Fleet write clears it).
  std::vector<scheduling::InstanceStatus> described_;
  uint64_t described_gen_ = 0;
  k8s::TimePoint described_until_{};
  bool fleets_settled_ = false;
  std::vector<std::shared_ptr<const k8s::Pod>> PodsOf(const Run& run) const;
  // A finished run that needs nothing more leaves the working set (see "Incremental passes");
  // one whose TTL is due is deleted.
  void Settle(const Keyed& visited,
              const std::unordered_set<std::string>& busy, k8s::TimePoint now);
  // When a finished run is to be deleted (spec.ttlSecondsAfterFinished, else --finished-run-ttl).
  std::optional<k8s::TimePoint> ExpiryOf(const Run& run) const;
  struct PodRef {
    std::string name, uid;
    bool started = true;  // some container is running or has run
  };
  static PodRef RefOf(const k8s::Pod& p) { return PodRef{p.meta.name, p.meta.uid, p.started}; }
  // The run's Pods that neither finished nor are being deleted (what ending it has to stop).
  std::vector<PodRef> PodsToStop(const Run& run) const;
  // Deletes these Pods, each only if it is still the Pod seen (uid precondition: a late delete
  // never hits a new attempt's Pod of the same name). A Pod none of whose containers ever
  // started (an image that cannot be pulled) has nothing to shut down: it is deleted with a 1 s
  // grace period instead of its own, because the kubelet otherwise keeps it (and its blocks)
  // for the whole period. Returns false when one could not be deleted for another reason than
  // being gone already.
  bool DeletePods(const std::string& ns, const std::vector<PodRef>& pods);
  // Pods on nodes that no current placement accounts for (see NodeHold).
  std::vector<NodeHold> Holds(const std::unordered_map<std::string_view, const Run*>& runs) const;
  k8s::ObjectReference Ref(const Run& run) const;
  // Issue 17 (namespace_policy.h): marks placed runs whose Pods are not all in the cache (their
  // quota usage is not in the ResourceQuota's status yet), and the queue's priority for a run.
  bool QuotaPending(std::string_view ns, const std::vector<PlacementEntry>& placement) const;
  int32_t QueuePriority(const Run& run) const;

  // The preemption record each preempting run's waiting status carries this pass (loop thread).
  std::unordered_map<std::string, RunStatus::Preemption> preempting_;
  k8s::ClientPtr client_;
  const k8s::Clock& clock_;
  EngineOptions options_;
  std::unique_ptr<k8s::EventRecorder> events_;
  // Set-aside runs reported: key -> "uid/generation" (ReportSetAside; writer threads clear a
  // failed one so that the next pass tries again).
  std::mutex aside_mu_;
  std::map<std::string, std::string> reported_aside_;
  std::atomic<int64_t> unreadable_runs_{0};
  std::unique_ptr<k8s::Informer<Run>> runs_;
  std::unique_ptr<k8s::Informer<Fleet>> fleets_;
  std::unique_ptr<k8s::Informer<k8s::Node>> nodes_;
  std::unique_ptr<k8s::Informer<k8s::Pod>> pods_;
  // Everyone else's Pods that may hold resources (not berth's, not finished): their requests come
  // off the nodes they run on.
  std::unique_ptr<k8s::Informer<k8s::Pod>> others_;
  std::unique_ptr<k8s::Informer<NamespaceInfo>> namespaces_;        // their berth.dev/max-priority
  std::unique_ptr<k8s::Informer<ResourceQuotaInfo>> resource_quotas_;

  scheduling::RunQueue queue_;  // loop thread only
  // The working set of the passes (see "Incremental passes"), in key order, with each run's memo
  // (made by WorkingSet; an entry and its memo are erased together); loop thread only.
  std::map<std::string, Memo*> active_;
  // The last pass' list of it (WorkingSet), valid until a run enters or leaves active_
  // (keyed_stale_: Activate, Settle, WorkingSet).
  Keyed keyed_;
  bool keyed_stale_ = true;
  // Finished runs out of the working set, by when their TTL comes due (loop thread only).
  std::set<std::pair<k8s::TimePoint, std::string>> expiries_;
  std::unordered_map<std::string, Memo> memo_;  // loop thread only
  std::optional<k8s::TimePoint> next_deadline_;  // loop thread only: see NoteDeadline
  uint64_t pass_no_ = 0;                          // loop thread only: passes so far
  std::unordered_set<std::string> dispatched_;    // loop thread only: keys this pass handed to the writer
  std::unordered_map<std::string, int64_t> places_;  // loop thread only: this pass' TopOfQueue, by run
  // Loop thread: what changed since the last pass (TakeWriterNews), for quiet placed runs.
  std::unordered_set<std::string> pass_changed_nodes_;
  bool pass_fleets_changed_ = true;
  bool pass_namespaces_changed_ = true;
  // A placed run the last pass found needing nothing, unchanged since (see Memo::quiet_rv):
  // kQuiet before quiet_until; kRefreshDue when only its periodic look (status_refresh) is due,
  // which a pass may put off (refreshes_per_pass); kChanged when it must be reconciled now.
  enum class Stillness { kChanged, kQuiet, kRefreshDue };
  Stillness Quiet(const Run& run, const Memo& memo, k8s::TimePoint now) const;
  bool refresh_left_ = false;  // this pass put periodic looks off (loop thread only)
  bool QueuedQuietly(const Memo& memo) const;
  std::map<std::string, std::string> fleet_written_;  // fleet -> last status body written
  struct Refusal {
    k8s::TimePoint until;   // at the latest
    std::string why;
    std::string situation;  // Situation() as at the refusal ("" until the next pass)
  };
  // What the node's kubelet admission depends on that berth sees, as one comparable string.
  static std::string Situation(const std::string& node, const std::vector<std::shared_ptr<const k8s::Node>>& nodes,
                               const std::vector<NodeHold>& holds);
  std::map<std::string, Refusal> refused_;
  std::map<std::string, std::string> unavailable_detail_;  // fleet -> "node: why" (loop thread only)  // node -> its kubelet refused a Pod (loop thread only)
  PositionBudget position_budget_;
  std::unordered_set<std::string> position_batch_;  // runs the position writes in flight touch

  mutable std::mutex mu_;  // guards the fields below
  mutable std::condition_variable loop_cv_;  // mutable: Queue() wakes the loop for a view
  bool dirty_ = true;
  bool stopping_ = false;
  std::unordered_set<std::string> touched_;  // runs whose object or Pods changed since the last pass
  std::unordered_set<std::string> changed_nodes_;  // Nodes changed since the last pass
  bool namespaces_changed_ = true;                  // a Namespace added, deleted or changed since the last pass
  bool fleets_changed_ = true;                      // a Fleet added, deleted or its spec changed since
  std::unordered_set<std::string> failed_admissions_;  // roll back these assumptions
  // Admissions whose status write may or may not have been applied (key -> guarding rv), and
  // those a GET found applied.
  std::unordered_map<std::string, uint64_t> unconfirmed_admissions_;
  std::unordered_set<std::string> confirmed_admissions_;
  std::unordered_set<std::string> fleet_write_failed_;  // write these fleets' status again
  std::unordered_map<std::string, uint64_t> written_rv_;  // run key -> resourceVersion we wrote
  std::vector<QueueEntry> queue_view_;
  bool view_stale_ = false;                  // a pass changed the queue since queue_view_ was made
  bool loop_running_ = false;                // the loop passes (caches synced): it answers view requests
  mutable bool view_wanted_ = false;         // Queue() waits for a fresh view
  mutable std::condition_variable view_cv_;  // a fresh view was made (or the engine stops)
  std::unordered_set<std::string> priority_news_;  // queued runs whose spec.priority changed
  std::atomic<bool> has_priority_news_{false};      // priority_news_ is not empty (checked without mu_)
  // Loop thread: runs moved in the view ahead of the queue (key -> priority shown), re-applied by
  // PublishQueue until queue_ has that priority (or the run left the queue).
  std::unordered_map<std::string, int32_t> shown_early_;

  bool stopped_writer_ = false;
  std::thread loop_;
  // Carries out the loop's writes (one per key, backoff, decisions before refreshes).
  KeyedWriter writer_;
  EngineObserver* observer_ = nullptr;
};

}  // namespace berth::reconcilers
