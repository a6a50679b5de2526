// What an XID means for scheduling, after NVIDIA's XID catalog for Ampere and newer
// (docs.nvidia.com/deploy/xid-errors, its "Resolution Bucket (Immediate Action)" column):
//
//   application  RESTART_APP, IGNORE: the job's own error (a bad memory access); the GPU is fine
//   reset        RESET_GPU, WORKFLOW_XID_48, NVLink workflows: out of service until reset
//   drain        RESTART_BM, CONTACT_SUPPORT: a hardware fault; out until an admin returns it
//
// The same three-way split NVIDIA's NVSentinel makes of that column. Where NVIDIA and other
// classifiers disagree (NVIDIA's Kubernetes device plugin ignores 109, Azure's health checks
// fail nodes on 68 and 69), the catalog wins. XIDs the table does not know (newer drivers add
// them) count as `reset`: out of service until the GPU passes its check, never silently kept.
// docs/gpus.md lists the table and where each entry comes from.
#pragma once

#include <string_view>

namespace baton::agent {

enum class XidAction { kApplication, kReset, kDrain };

struct XidInfo {
  XidAction action = XidAction::kReset;
  std::string_view name;  // "GPU has fallen off the bus"
};

XidInfo ClassifyXid(int xid);
std::string_view XidActionName(XidAction action);  // application | reset | drain

}  // namespace baton::agent
