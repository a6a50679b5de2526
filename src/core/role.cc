#include "core/role.h"

namespace baton {

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kUser:
      return "user";
    case Role::kAdmin:
      return "admin";
    case Role::kAgent:
      return "agent";
  }
  return "user";
}

Result<Role> ParseRole(std::string_view text) {
  if (text == "user") return Role::kUser;
  if (text == "admin") return Role::kAdmin;
  if (text == "agent") return Role::kAgent;
  return Err(InvalidArgument("role: must be user, admin or agent"));
}

}  // namespace baton
