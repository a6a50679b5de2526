// The `baton` executable: the command line as users type it, built from cli/ alone (no
// controller, scheduler, store, agent or simulator) so that a command starts quickly
// (docs/performance.md, "The client executable"). The long-running commands (up, server, agent),
// the simulator, and the help that lists every command belong to `batond`, the full program
// installed beside this one: for them this process replaces itself with batond (same pid, same
// arguments), so `baton up` is what it always was. Where batond is not there (baton installed
// alone on a login node), the help and a mistyped command's "did you mean" come from the client
// commands.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/parser.h"

namespace {

// batond in the directory of this executable (where it is installed with it), else on PATH.
std::string BatondPath() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "batond";
  std::string path(self, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + "batond";
}

// Runs `argv` as batond's; returns only when that fails, with the error.
int HandToBatond(char** argv) {
  execvp(BatondPath().c_str(), argv);  // a path with a '/' is run as it is, a bare name from PATH
  return errno;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace baton;
  cli::CommandLine line = cli::ReadCommandLine(argc, argv);
  const bool is_client = cli::IsClientCommand(line.command);
  if (!is_client && line.command != "--version") {
    const int error = HandToBatond(argv);
    // The command asked for, or asked about (`baton help up`).
    const size_t at = cli::CommandIndex(line.head);
    const std::string& asked =
        line.command == "help" && at + 1 < line.head.size() ? line.head[at + 1] : line.command;
    if (cli::IsServerCommand(asked)) {
      std::cerr << "baton: `baton " << asked << "` needs " << BatondPath()
                << " (the server side of Baton, installed beside baton), which cannot be run: "
                << std::strerror(error) << "\n";
      return 1;
    }
    // Help, no command or a mistyped one, where baton is installed alone (a login node,
    // docs/install.md): answered from the client commands, which are all this machine runs.
  }
  // Built for this one command and left to the process's end: destroying the parser's 80-odd
  // options one by one was a tenth of a `baton submit`'s instructions (docs/performance.md).
  // Static, so that it stays reachable (the leak checker's "not lost").
  static CLI::App& app = *new CLI::App;
  cli::SetUpRoot(app);
  int exit_code = 0;
  if (line.command != "--version") {
    cli::AddClientCommands(app, &exit_code, line.tail, is_client ? line.command : "", line.head);
  }
  if (!is_client) {
    if (std::optional<int> unknown = cli::RejectUnknownCommand(app, line.head)) return *unknown;
  }
  if (std::optional<int> early = cli::ParseCommandLine(app, std::move(line.head))) return *early;
  return exit_code;
}
