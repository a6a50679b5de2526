// The client side of the `baton` command line (PRODUCT.md §2): submit, jobs, show, logs,
// cancel, hold, release, wait, nodes. Exit codes: 0 success, 1 failure reported by the
// server or the job, 2 usage error.
#pragma once

namespace CLI {
class App;
}

namespace baton::cli {

// Adds the client subcommands to `app`. The chosen command's exit code lands in *exit_code.
void AddClientCommands(CLI::App& app, int* exit_code);

}  // namespace baton::cli
