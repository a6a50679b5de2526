// The log sink of the `baton` binary: spdlog to stderr, as text ("baton: MESSAGE", what a
// terminal or journald wants) or as one JSON object a line with the time, level and context
// (what a log pipeline wants). Main calls it once, before it starts any thread.
#pragma once

#include <string>

#include "core/status.h"

namespace baton::server {

// `level`: debug | info | warn | error; `format`: text | json.
Status SetUpLogging(const std::string& level, const std::string& format);

// Logs `st`'s message as an error; 1, the exit code of a command that failed so.
int Fail(const Status& st);

}  // namespace baton::server
