// Interactive sessions (`baton run`, `attach`, `sessions`, `run --jupyter`): a job started
// attached, its terminal or stdin carried over a tunnel through the controller and the job's
// agent to its shim (api/relay.h, core/session_frame.h). A notebook's port reaches this machine
// through cli/forward.h.
#pragma once

#include <string>

#include "cli/client.h"
#include "cli/signals.h"
#include "core/job.h"

namespace baton::cli {

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
// `baton run --jupyter`: a session running `jupyter lab` (else `jupyter notebook`) on the
// node's loopback with a token of its own; once it answers, its URL on this machine (a
// forwarded port), until Ctrl-C, which ends the session.
int RunJupyter(const Connection& conn, JobSpec spec, int local_port);

}  // namespace baton::cli
