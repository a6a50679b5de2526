#include "core/protocol.h"

namespace baton {

std::string_view StopReasonName(StopReason r) {
  switch (r) {
    case StopReason::kCancel:
      return "cancel";
    case StopReason::kPreempt:
      return "preempt";
    case StopReason::kTimeLimit:
      return "time_limit";
    case StopReason::kNodeFailure:
      return "node_failure";
  }
  return "cancel";
}

}  // namespace baton
