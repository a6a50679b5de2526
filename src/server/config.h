// The server's configuration file (`--config FILE`, docs/operations.md): read into the options
// at start, and again on SIGHUP, when its policy goes to the running controller through the
// loop. Both go through ApplyConfigFile, so that what the file sets and what a reload can change
// are said once.
#pragma once

#include <string>

#include "codec/json_codec.h"
#include "control/controller_loop.h"
#include "core/status.h"
#include "server/options.h"

namespace baton::server {

// What `cfg` gives `o`; the flags typed (o->typed) win over it.
void ApplyConfigFile(codec::ServerConfig cfg, ServeOptions* o);

// The file at `path`, read and checked (a clear error naming the file, its line and the key).
Result<codec::ServerConfig> ReadConfigFile(const std::string& path);

// Reads `--config FILE` into `o`.
Status LoadConfig(const std::string& path, ServeOptions* o);

// SIGHUP: reads the file again and hands its policy (scheduling, projects, users, pools) to the
// controller through the loop, so that nothing in flight is dropped. A file that does not read
// or check keeps the running configuration, and says why; what only a start takes (listen,
// data, the shared directory, the store, alerts, TLS) is said to wait for the next one.
void Reload(const std::string& path, const ServeOptions& running, control::ControllerLoop& loop);

}  // namespace baton::server
