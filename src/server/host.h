// What the `baton` executable reads of the host it runs on and of its data directory: the
// host's name, user and topology, the listen address and a port free to bind, the token and
// port files of the data directory, and the signals that stop a server. Used by server/ and
// main.cc.
#pragma once

#include <signal.h>

#include <cstdint>
#include <string>
#include <utility>

#include "agent/host_topology.h"
#include "core/status.h"

namespace baton::server {

// This host's topology, for binding jobs to their GPUs' NUMA nodes; empty (jobs unbound) when
// hwloc cannot load it.
agent::HostTopology HostTopologyOrNone();
// The first line of `path` ("" when it cannot be read).
std::string ReadTrimmed(const std::string& path);
// Reads the token in `path`, creating a new one (mode 0600) when there is none.
Result<std::string> EnsureToken(const std::string& path);
// "HOST:PORT" (an IPv6 host in brackets) as host and port.
Result<std::pair<std::string, uint16_t>> ParseListen(const std::string& listen);
// The short host name when it is a valid node name, else "localhost".
std::string HostName();
std::string LocalUser();
// Whether a TCP port can be bound on `host` now.
bool PortFree(const std::string& host, uint16_t port);
// With --listen HOST:0, a restart keeps the port of the previous start (DATA/server.port):
// agents and clients given that address find the controller again (issue 16). A port taken
// meanwhile gives a new one, and the log says so. An explicit port is always used as given.
void KeepPreviousPort(const std::string& dir, std::pair<std::string, uint16_t>& listen);
// Blocks SIGINT, SIGTERM and SIGHUP in every thread started after this; WaitForShutdown waits
// for one of them.
sigset_t BlockShutdownSignals();
int WaitForShutdown(const sigset_t& set);
// Takes DIR/lock (made, with DIR, if missing), held until the process ends: one baton at a
// time uses a data directory. Conflict "another baton already DOING DIR (DIR/lock is held)".
Status LockDir(const std::string& dir, const std::string& doing);
// Says in the log that `dir`'s disk has less free than `reserve` (--disk-reserve), if so.
void WarnWithinReserve(const std::string& dir, int64_t reserve);

// Raises this process's soft descriptor limit to its hard limit (a server's connections, logs
// and jobs' files need many; the HTTP server caps its connections below it). Returns the limit.
uint64_t RaiseDescriptorLimit();

}  // namespace baton::server
