// The wire between `srun` on a batch script's first node and the step servers of its other
// nodes (agent/slurm/slurm_main.cc), and the task start both use; and between `baton run --in`
// and an allocation's host, where the agent's end of the tunnel sends the request's head (the
// magic and the key, which only the controller and the job's nodes know) and the client the rest.
//
// A connection carries one request, client to server: the magic "BSTEP1\n", then strings, each
// a 4-byte big-endian length and its bytes: the job's step key, the verb ("run", "srun" or
// "exit"), and for "run" and "srun" the working directory, the argument count and arguments,
// the variable count and variables ("K=V"). "run" starts one task; "srun" (an allocation's host
// only) runs srun with those arguments in the job's environment. The server answers with frames,
// a type byte, a 4-byte length and the bytes: 'o' standard output, 'e' standard error, 'x' the
// end ("E<code>" or "S<signal>"). Closing the connection early ends the task.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace baton::slurm {

inline constexpr char kMagic[] = "BSTEP1\n";
inline constexpr size_t kMaxString = 1 << 20;  // one argument or variable
inline constexpr size_t kMaxStrings = 20000;   // arguments, or variables, of one request

struct StepRequest {
  std::string key;
  std::string verb;  // "run", "srun" or "exit"
  std::string cwd;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "K=V"
};

bool SendRequest(int fd, const StepRequest& r);
// A request's bytes in two parts: the magic and the key, then the verb and the rest.
std::string RequestHead(const std::string& key);
std::string RequestTail(const StepRequest& r);
// Reads a request; an error names what was wrong (bad magic, too long...). With `key`, a
// request that does not show it is refused as soon as its key is read, before the rest (a
// caller without the key makes the server hold nothing). At most kMaxRequest bytes in all.
inline constexpr size_t kMaxRequest = 64 << 20;
Result<StepRequest> ReadRequest(int fd, const std::string* key = nullptr);

bool SendFrame(int fd, char type, const std::string& data);
// One frame; nullopt at the connection's end or on an error.
std::optional<std::pair<char, std::string>> ReadFrame(int fd);

// Whether two secrets are equal, in time that does not depend on where they differ.
bool SameKey(const std::string& a, const std::string& b);

// A TCP connection to HOST:PORT, tried again for up to `patience_s` while refused (the server
// may not listen yet). -1 and `error` set on failure.
int ConnectTo(const std::string& host, int port, int patience_s, std::string* error);

// A task started: its pid (the leader of a process group of its own) and the read ends of its
// standard output and error.
struct Task {
  pid_t pid = -1;
  int out = -1;
  int err = -1;
};
// Starts `argv` in `cwd` (else where we are, with a warning on its stderr, as slurmstepd does)
// with exactly `env`; the program is looked up on env's PATH. An error when it cannot fork.
Result<Task> StartTask(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       const std::string& cwd);

// "E<code>" or "S<signal>" of a wait status.
std::string StatusText(int wait_status);

// The environment of this process, "K=V" each.
std::vector<std::string> OwnEnvironment();
// `env` with K set to V (replaced, or added).
void SetVar(std::vector<std::string>* env, const std::string& k, const std::string& v);
std::string GetVar(const std::vector<std::string>& env, const std::string& k);

}  // namespace baton::slurm
