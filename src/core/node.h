// Nodes and their GPUs as agents describe them, and the `--gpus SPEC` grammar for simulated
// GPUs: COUNTxTYPE[:topo=nvswitch|pairs|cubemesh|pcie], e.g. 8xH100-80GB, 4xA100-40GB:topo=pcie.
// nvswitch: one NVLink island (DGX H100); pairs: NVLink bridges between GPU pairs;
// cubemesh: two fully linked quads (DGX-1 V100 hybrid cube-mesh); pcie: no NVLink, GPUs
// behind two PCIe switches per NUMA node (8xL40S servers).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/names.h"
#include "core/status.h"
#include "core/time.h"

namespace baton {

// How a node's GPUs are linked: pcie (no NVLink), pairs (NVLink bridges between pairs),
// cubemesh (DGX-1's two linked quads), nvlink (NVLink islands NVML found), nvswitch (one
// island). kUnknown: a node known only from a drain kept, not registered yet.
enum class GpuTopology { kUnknown, kPcie, kPairs, kCubemesh, kNvlink, kNvswitch };
inline constexpr std::array<std::string_view, 6> kGpuTopologyNames = {
    "", "pcie", "pairs", "cubemesh", "nvlink", "nvswitch"};
inline std::string_view GpuTopologyName(GpuTopology t) { return EnumName(kGpuTopologyNames, t); }

// Where an agent's GPUs come from: simulated (SPEC) or NVIDIA's NVML. kUnknown: not registered.
enum class GpuBackendKind { kUnknown, kSimulated, kNvml };
inline constexpr std::array<std::string_view, 3> kGpuBackendNames = {"", "simulated", "nvml"};
inline std::string_view GpuBackendName(GpuBackendKind k) { return EnumName(kGpuBackendNames, k); }

struct Gpu {
  int index = 0;
  std::string uuid;
  std::string model;  // "H100-80GB"; the type a job's gpu_type matches
  int64_t memory_bytes = 0;
  int numa_node = 0;
  int island = 0;           // GPUs sharing an NVLink/NVSwitch island share this number
  int pcie_switch = 0;      // GPUs behind the same PCIe switch share this number
  int physical = -1;        // the physical GPU's ordinal (its CUDA index); -1 = same as index
  std::string mig_profile;  // a MIG instance ("1g.10gb") of GPU `physical`; "" = a whole GPU
  int mig_start = -1;       // a MIG instance's first memory slice (its placement); -1 unknown
  // A place for a MIG instance that GPU `physical` does not have now (MigParent): no job goes
  // there, and nothing shows it; its mig_start is where such an instance would start.
  bool vacant = false;
  bool operator==(const Gpu&) const = default;
};

// A physical GPU in MIG mode whose instances its agent re-plans when the controller orders it
// (`baton agent --mig-reconfigure`, issue 42). Its instances keep their device indices through
// a change: the GPU takes 8 indices, first + the instance's first memory slice (MigPlaces), the
// places where no instance starts being vacant GPUs.
struct MigParent {
  int physical = 0;          // its ordinal on the host (Gpu::physical of its instances)
  std::string model;         // the whole GPU's ("A100-80GB")
  int64_t memory_bytes = 0;  // the whole GPU's: which profiles it has (core/mig.h)
  bool operator==(const MigParent&) const = default;
};
inline constexpr int kMigPlaces = 8;

struct NodeInfo {
  std::string name;
  std::vector<Gpu> gpus;
  int cpus = 0;
  int64_t memory_bytes = 0;
  GpuBackendKind gpu_backend = GpuBackendKind::kUnknown;
  GpuTopology topology = GpuTopology::kUnknown;
  std::string pool = "default";  // the pool (partition) whose jobs it runs
  std::string address;           // where its jobs' processes are reached (MASTER_ADDR); "" = name
  // Its agent refuses root's jobs (it runs as root without --allow-root-jobs): the scheduler
  // places none there, and a root job no node of its pool runs is refused at submit.
  bool refuses_root_jobs = false;
  // A spot node (`baton agent --spot`): capacity its provider may reclaim at short notice. Only
  // preemptible jobs are placed there, and its GPUs are charged at the catalog's spot prices.
  bool spot = false;
  // Its agent runs an MPS daemon for each GPU that holds fractional jobs (`baton agent
  // --mps-control`, agent/mps.h), which serves one user's jobs at a time: the scheduler gives a
  // GPU's fractions to one user at a time.
  bool mps = false;
  // The container runtimes its agent found on its PATH ("podman", "apptainer", "singularity"),
  // which jobs with an image run through.
  std::vector<std::string> runtimes;
  // Its GPUs in MIG mode whose instances the controller may re-plan (MigParent).
  std::vector<MigParent> mig_gpus;
  bool operator==(const NodeInfo&) const = default;
};

// One reading of a GPU's gauges, as its agent last reported them.
struct GpuSample {
  int index = 0;
  int utilization_pct = 0;
  int64_t memory_used_bytes = 0;
  int temperature_c = 0;
  int power_w = 0;
  int64_t ecc_uncorrected = 0;  // volatile uncorrected ECC errors (since the driver loaded)
  bool lost = false;            // the GPU stopped answering ("fell off the bus")
  bool operator==(const GpuSample&) const = default;
};

// A GPU's health as its agent judges it (agent/health.h). ok; reset: out of service until it
// passes a health check (after a reset, once cooled down); drain: a hardware fault that keeps
// it out until an admin returns it (the controller turns it into a drain that outlives restarts).
enum class GpuHealthState { kOk, kReset, kDrain };
std::string_view GpuHealthStateName(GpuHealthState s);
Result<GpuHealthState> ParseGpuHealthState(std::string_view text);

struct GpuHealth {
  int index = 0;
  GpuHealthState state = GpuHealthState::kOk;
  std::string reason;  // "xid 79: GPU has fallen off the bus"
  TimePoint since{};   // when the latest fault was seen; a new fault changes it
  bool operator==(const GpuHealth&) const = default;
};

// A node as the controller shows it: what the agent said, and what Baton made of it.
// A node as users see it: awaiting is known (a drain kept) but not registered yet. An
// autoscaled node is also resuming (asked of its provider, not registered yet), suspending
// (being returned to it), suspended (returned: it costs nothing and runs nothing) or failed
// (not registered within the resume timeout, or its resume failed; being suspended).
enum class NodeState {
  kReady,
  kDrained,
  kLost,
  kAwaiting,
  kResuming,
  kSuspending,
  kSuspended,
  kFailed
};
inline constexpr std::array<std::string_view, 8> kNodeStateNames = {
    "ready", "drained", "lost", "awaiting", "resuming", "suspending", "suspended", "failed"};
inline std::string_view NodeStateName(NodeState s) { return EnumName(kNodeStateNames, s); }
inline Result<NodeState> ParseNodeState(std::string_view text, std::string_view field = "state") {
  return ParseEnum<NodeState>(kNodeStateNames, field, text);
}

struct NodeStatus {
  NodeInfo info;
  NodeState state = NodeState::kAwaiting;
  TimePoint last_seen{};
  std::vector<GpuSample> samples;
  std::vector<std::vector<int64_t>> gpu_jobs;  // per GPU: ids of the jobs on it
  std::string drain_reason;                    // non-empty: the node is drained
  std::vector<std::string> gpu_drain_reasons;  // per GPU: non-empty when that GPU is drained
  std::vector<GpuHealth> health;               // per GPU, as the agent last judged it
  // A spot node cooling off after another of its pool was reclaimed: no new jobs until then.
  std::optional<TimePoint> cooling_until;
  // A node autoscaling made (docs/operations.md "Elastic capacity"): its template, since when
  // it is in its state, since when it has run no job (ready), and why it is where it is.
  std::string template_name;  // "" = not autoscaled
  std::optional<TimePoint> state_since;
  std::optional<TimePoint> idle_since;
  std::string scaling_reason;
  // MIG GPUs (MigParent::physical) whose change of instances the controller ordered and whose
  // agent has not yet registered what they have now: their instances take no new job.
  std::vector<int> mig_reconfiguring;
};

struct GpuSpec {
  int count = 0;
  std::string model;                          // "H100-80GB"
  int64_t memory_bytes = 0;                   // from the model's suffix
  GpuTopology topology = GpuTopology::kPcie;  // nvswitch | pairs | cubemesh | pcie
  std::vector<std::string> mig;  // MIG instances on every GPU ("3g.40gb", "1g.10gb", ...)
  std::vector<int> mig_starts;   // ... each one's first memory slice (PlaceMig); empty: unknown
};

// Parses a simulated-GPU SPEC. The memory comes from the model suffix (-80GB = 80 GiB).
// Option `:mig=P+P*N...` splits every GPU into MIG instances of profiles "<C>g.<M>gb"
// (e.g. 8xA100-80GB:mig=3g.40gb+2g.20gb+1g.10gb*2): at most 7 compute slices and the GPU's
// memory per GPU, so a layout can never promise more than the hardware has; where the
// hardware's MIG geometry knows the profiles (core/mig.h), they must also fit its memory
// slices together, and each instance gets its place.
Result<GpuSpec> ParseGpuSpec(std::string_view text);

// The GPUs (or MIG instances) a node with simulated GPUs has: indices, stable UUIDs seeded
// by the node's name, NVLink islands, PCIe switches and NUMA nodes by topology (node.h top).
std::vector<Gpu> SimulatedGpus(const GpuSpec& spec, std::string_view node_name);

// The devices of an agent that re-plans MIG, from those it found (`found`: whole GPUs and MIG
// instances, each with its `physical`) and its GPUs in MIG mode (`parents`): in the order of
// their physical GPUs, a whole GPU takes one index and a MIG GPU kMigPlaces, its instances at
// first + mig_start (one whose start is unknown at the first place left) and vacant GPUs at the
// rest. `inner` (if given) gets, for each index, the index in `found` it came from, or -1.
std::vector<Gpu> MigPlaces(const std::vector<Gpu>& found, const std::vector<MigParent>& parents,
                           std::vector<int>* inner = nullptr);

// Node names: 1-64 of [A-Za-z0-9._-].
bool IsValidNodeName(std::string_view name);

// Whether a GPU of `model` satisfies a job's gpu_type constraint `wanted`: equal, or a prefix
// up to a '-' ("H100" matches "H100-80GB"), ignoring case. A MIG instance (`mig_profile` not
// "": model "A100-80GB-MIG-1g.10gb", profile "1g.10gb") matches only a request naming its
// profile or its whole model: a job asking for "a GPU" or "an A100" gets a whole GPU, never a
// slice. Inline for the common case: a scheduling pass asks this of every GPU it looks at.
bool GpuTypeMatchesNamed(std::string_view model, std::string_view mig_profile,
                         std::string_view wanted);
inline bool GpuTypeMatches(std::string_view model, std::string_view mig_profile,
                           std::string_view wanted) {
  return wanted.empty() ? mig_profile.empty() : GpuTypeMatchesNamed(model, mig_profile, wanted);
}
inline bool GpuTypeMatches(const Gpu& gpu, std::string_view wanted) {
  return GpuTypeMatches(gpu.model, gpu.mig_profile, wanted);
}

// The GPU models of some nodes: each one's largest memory, the most of it one node has, on how
// many nodes, and how many in all; only GPUs matching `gpu_type` when one is given.
struct GpuModelCount {
  int64_t memory = 0;
  int per_node = 0;
  int nodes = 0;
  int total = 0;
};
std::map<std::string, GpuModelCount> CountGpuModels(const std::vector<const NodeInfo*>& nodes,
                                                    std::string_view gpu_type = "");
// Whether two names are equal ignoring ASCII case (GPU models, profiles).
bool EqualNoCase(std::string_view a, std::string_view b);

// The model name of a MIG instance: "A100-80GB" + "1g.10gb" -> "A100-80GB-MIG-1g.10gb".
std::string MigModel(std::string_view gpu_model, std::string_view profile);

}  // namespace baton
