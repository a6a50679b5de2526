// The cluster views of the command line: `baton queue`, `baton gpus`, `baton usage`, `baton
// events [-f]` and the live `baton top` (views.cc), and the commands that run them. Each
// prints a table, or the server's JSON with --json.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/client.h"
#include "core/time.h"

namespace CLI {
class App;
}

namespace baton::cli {

// `queue`, `gpus`, `usage`, `events` and `top`; the chosen one's exit code lands in *exit_code.
void AddViewCommands(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code);

// `baton queue`: pending jobs in the order they would start, with why they wait (cut to fit a
// terminal unless `whole`).
int Queue(const Connection& conn, int limit, bool json, bool whole);

// "42s", "3m", "5h", "2d": how long ago `t` was.
std::string Age(TimePoint t);
// Why a pending or held job waits: "resources: no 8 free H100 ..." ("" when it does not).
std::string WhyWaiting(const Job& j);
// The command's words as shown in a line or a table: a batch script's text (the word after its
// interpreter's -c) as "<script: N lines>"; `baton show ID --json` has it whole.
std::vector<std::string> ShownCommand(const JobSpec& spec);

int Gpus(const Connection& conn, bool json);
struct UsageOptions {
  std::string since, until;  // the window, as ParseTimeArg (history.h) reads them; "" = open
  bool json = false;
};
int ShowUsage(const Connection& conn, const UsageOptions& o);
// With `follow`, the event stream (Server-Sent Events) until interrupted.
int Events(const Connection& conn, bool follow, bool json);

struct TopOptions {
  double interval_s = 2;  // between frames
  bool once = false;      // one frame, then exit (for scripts; also when stdout is not a terminal)
};
// A live view: the GPU grid (utilisation, memory, temperature, the job and its user), the
// queue with its reasons, and the running jobs. q or Ctrl-C quits.
int Top(const Connection& conn, const TopOptions& options);

}  // namespace baton::cli
