// `baton up` and `baton server`: the controller served (with `up`, a local agent beside it), from
// the options and the configuration file, until SIGINT or SIGTERM; SIGHUP reloads the file.
#pragma once

#include <string>

#include "server/options.h"

namespace baton::server {

// Serves with `o`, after reading `config` (if given) into it; the exit code (2: a bad file or
// --store, said on the log).
int ServeWithConfig(ServeOptions& o, const std::string& config);

}  // namespace baton::server
