// Token roles: what a bearer token may do. `user`: its own jobs; `admin`: everything;
// `agent`: the node protocol only, as the node named by its user (a node's credential);
// `join`: only to join as a new node, which gives that node its credential. Crosses modules as this
// enum; as text only in JSON and the store, through RoleName and ParseRole.
#pragma once

#include <string_view>

#include "core/status.h"

namespace baton {

enum class Role { kUser, kAdmin, kAgent, kJoin };
std::string_view RoleName(Role role);
Result<Role> ParseRole(std::string_view text);

}  // namespace baton
