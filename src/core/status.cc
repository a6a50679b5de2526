#include "core/status.h"

namespace baton {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      return "invalid_argument";
    case Code::kNotFound:
      return "not_found";
    case Code::kConflict:
      return "conflict";
    case Code::kUnauthenticated:
      return "unauthenticated";
    case Code::kPermissionDenied:
      return "permission_denied";
    case Code::kTooLarge:
      return "too_large";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kInternal:
      return "internal";
  }
  return "internal";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(CodeName(code_)) + ": " + message_;
}

}  // namespace baton
