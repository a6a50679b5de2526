#include "agent/xid_catalog.h"

#include <algorithm>
#include <array>

namespace baton::agent {
namespace {

struct Entry {
  int xid;
  XidAction action;
  std::string_view name;
};

constexpr XidAction kApp = XidAction::kApplication;
constexpr XidAction kReset = XidAction::kReset;
constexpr XidAction kDrain = XidAction::kDrain;

// Sorted by XID. Sources per entry are in docs/gpus.md ("GPU health").
constexpr std::array kCatalog = {
    Entry{8, kApp, "GPU stopped processing (idle timeout)"},
    Entry{13, kApp, "graphics engine exception"},
    Entry{31, kApp, "GPU memory page fault"},
    Entry{32, kApp, "invalid or corrupted push buffer stream"},
    Entry{38, kApp, "driver firmware watchdog timeout"},
    Entry{43, kApp, "GPU stopped processing (channel reset)"},
    Entry{45, kApp, "preemptive cleanup after an earlier error"},
    Entry{48, kReset, "double-bit ECC error"},
    Entry{56, kDrain, "display engine error"},
    Entry{57, kDrain, "error programming video memory interface"},
    Entry{58, kDrain, "unstable video memory interface"},
    Entry{61, kReset, "internal micro-controller breakpoint"},
    Entry{62, kReset, "internal micro-controller halt"},
    Entry{63, kApp, "memory row remapping or page retirement recorded"},
    Entry{64, kDrain, "memory row remapping or page retirement failed"},
    Entry{68, kApp, "video decoder exception"},
    Entry{69, kApp, "graphics engine class error"},
    Entry{74, kReset, "NVLink error"},
    Entry{79, kDrain, "GPU has fallen off the bus"},
    Entry{92, kApp, "high single-bit ECC error rate"},
    Entry{94, kApp, "contained ECC error"},
    Entry{95, kReset, "uncontained ECC error"},
    Entry{109, kReset, "context switch timeout"},
    Entry{110, kReset, "security fault"},
    Entry{119, kReset, "GSP RPC timeout"},
    Entry{120, kReset, "GSP error"},
    Entry{121, kApp, "corrected C2C link errors"},
    Entry{122, kDrain, "SPI PMU RPC read failure"},
    Entry{123, kDrain, "SPI PMU RPC write failure"},
    Entry{140, kReset, "unrecoverable ECC error escape"},
    Entry{143, kReset, "GPU initialisation failure"},
    Entry{144, kReset, "NVLink SAW error"},
    Entry{145, kReset, "NVLink RLW error"},
    Entry{146, kReset, "NVLink TLW error"},
    Entry{147, kReset, "NVLink TREX error"},
    Entry{148, kReset, "NVLink NVLPW control error"},
    Entry{149, kReset, "NVLink NETIR error"},
    Entry{150, kReset, "NVLink MSE error"},
    Entry{154, kReset, "GPU recovery action changed"},
    Entry{155, kReset, "NVLink software-defined error"},
};

static_assert(std::is_sorted(kCatalog.begin(), kCatalog.end(),
                             [](const Entry& a, const Entry& b) { return a.xid < b.xid; }));

}  // namespace

XidInfo ClassifyXid(int xid) {
  auto it = std::lower_bound(kCatalog.begin(), kCatalog.end(), xid,
                             [](const Entry& e, int x) { return e.xid < x; });
  if (it == kCatalog.end() || it->xid != xid)
    return XidInfo{.action = kReset, .name = "not in Baton's XID catalog"};
  return XidInfo{.action = it->action, .name = it->name};
}

std::string_view XidActionName(XidAction action) {
  switch (action) {
    case XidAction::kApplication:
      return "application";
    case XidAction::kReset:
      return "reset";
    case XidAction::kDrain:
      return "drain";
  }
  return "reset";
}

}  // namespace baton::agent
