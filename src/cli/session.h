// Interactive sessions (`baton run`, `attach`, `sessions`, `forward`): a job started attached,
// its terminal or stdin carried over a tunnel through the controller and the job's agent to its
// shim (api/relay.h, core/session_frame.h), and a local port relayed to a port of a job.
#pragma once

#include <functional>
#include <string>

#include "cli/client.h"
#include "cli/signals.h"
#include "core/job.h"

namespace baton::cli {

// Parses "[LOCAL:]REMOTE" (each a TCP port 1-65535; LOCAL 0 picks a free one).
struct PortPair {
  int local = 0;
  int remote = 0;
};
Result<PortPair> ParsePortPair(const std::string& text);

// `baton run`: submits `spec` (interactive "stdin" or "tty"), prints why it waits until it runs,
// then attaches: with a terminal, the job's terminal is this one (raw; Ctrl-P Ctrl-Q detaches);
// else the job's output is printed as it comes and stdin is the job's (Ctrl-C cancels the job,
// a second Ctrl-C detaches). Returns the job's exit code (128 + N for signal N).
int RunAttached(const Connection& conn, const JobSpec& spec);
// Waits until job `id` runs (or has ended), saying why it waits once, and again only when its
// state or reason changes (not for each new estimate or count of free GPUs). Ctrl-C (read from
// `signals`) cancels it; a second one leaves (nullopt: exit 130).
Result<std::optional<Job>> WaitUntilRunning(ApiClient& api, const std::string& id,
                                            const Signals& signals, bool* cancelled);

// `baton attach ID`: back to a running session.
int Attach(const Connection& conn, const std::string& ref);
// `baton sessions [--all]`: the running and waiting sessions (yours; --all: everyone's, an
// admin's token).
int Sessions(const Connection& conn, bool all, bool json);
// `baton forward ID [LOCAL:]REMOTE`: relays 127.0.0.1:LOCAL to port REMOTE of the job's first
// node until Ctrl-C or the job ends.
int Forward(const Connection& conn, const std::string& ref, const std::string& ports);

// Relays 127.0.0.1:pair.local (0: a free port) to pair.remote of job `ref`'s first node until
// Ctrl-C (130) or the job ends (0); `ready` gets the local port once it listens.
int ForwardUntilEnd(ApiClient& api, const std::string& ref, PortPair pair,
                    const std::function<void(int local)>& ready);
// Waits until something answers HTTP at `port` of job `ref` (0), or the job ends (its exit
// code), or 150 s pass (1).
int WaitForHttp(ApiClient& api, const std::string& ref, int port);

// `baton run --jupyter`: a session running `jupyter lab` (else `jupyter notebook`) on the
// node's loopback with a token of its own; once it answers, its URL on this machine (a
// forwarded port), until Ctrl-C, which ends the session.
int RunJupyter(const Connection& conn, JobSpec spec, int local_port);

// The exit code `baton run` ends with for a job that has ended: its own, 128 + its signal,
// 130 when cancelled, 124 when timed out (as timeout(1)), else 1.
int ExitCodeOf(const Job& job);

}  // namespace baton::cli
