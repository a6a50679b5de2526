// The client side of the `baton` command line (PRODUCT.md §2): submit, jobs, show, logs,
// cancel, hold, release, wait, nodes. Exit codes: 0 success, 1 failure reported by the
// server or the job, 2 usage error.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace baton::cli {

// Adds the client subcommands to `app`. The chosen command's exit code lands in *exit_code.
// `command_tail` holds the words after the first `--` of the command line when the caller cut
// them off before parsing (see ReadCommandLine): CLI11 hands a `--` that precedes every
// positional word back to the parent app, so `submit` takes its command from here.
// With `only` naming a client command (the command line's), only it and the commands defined
// beside it are added, and true is returned: building every command's flags is a good part of
// a short command's start. Otherwise (`help`, no command, an unknown one) all are added.
// `words`: the command line's (before `--`); with `only` "submit", its spec flags that these
// name and no others (FlagFilter).
bool AddClientCommands(CLI::App& app, int* exit_code,
                       std::optional<std::vector<std::string>> command_tail = std::nullopt,
                       std::string_view only = {}, const std::vector<std::string>& words = {});

// The client commands AddClientCommands adds, in its order.
std::vector<std::string> ClientCommandNames();
// True for a client command's name (not `help`, which lists every command).
bool IsClientCommand(const std::string& word);
// True for the long-running commands and the simulator (up, server, agent, sim), which only
// batond holds.
bool IsServerCommand(std::string_view word);

// deploy/baton.example.yaml, compiled in: what `baton config sample` prints.
const char* ConfigSample();

}  // namespace baton::cli
