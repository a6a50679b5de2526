// `baton token create`, `list` and `revoke`: API tokens, each secret shown once at its
// creation, and revoked for good.
#pragma once

#include <memory>
#include <string>

#include "cli/client.h"

namespace CLI {
class App;
}

namespace baton::cli {

// `baton token create [--user U] [--role R] [--name N]` (and `baton node join-token`'s, as
// "join"): a new token, its secret printed this once; the exit status.
int TokenCreate(const Connection& conn, const std::string& user, const std::string& role,
                const std::string& name, bool json);

void AddTokenCommands(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code);

}  // namespace baton::cli
