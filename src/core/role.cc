#include "core/role.h"

#include <array>

#include "core/names.h"

namespace baton {
namespace {
constexpr std::array<std::string_view, 4> kRoleNames = {"user", "admin", "agent", "join"};
}  // namespace

std::string_view RoleName(Role role) { return EnumName(kRoleNames, role); }

Result<Role> ParseRole(std::string_view text) { return ParseEnum<Role>(kRoleNames, "role", text); }

}  // namespace baton
