// `baton forward` and what `baton run --jupyter` uses of it: a local port relayed to a port of
// a job's first node, each connection a tunnel through the controller and the job's agent
// (api/relay.h).
#pragma once

#include <functional>
#include <string>

#include "cli/client.h"
#include "core/status.h"

namespace baton::cli {

// Parses "[LOCAL:]REMOTE" (each a TCP port 1-65535; LOCAL 0 picks a free one).
struct PortPair {
  int local = 0;
  int remote = 0;
};
Result<PortPair> ParsePortPair(const std::string& text);

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

}  // namespace baton::cli
