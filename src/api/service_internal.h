// Helpers shared by the files of api::Service (service.cc, streams.cc); not for other modules.
#pragma once

#include <cstdint>
#include <string>

#include "api/auth.h"
#include "api/http.h"
#include "control/commands.h"
#include "core/job.h"
#include "core/status.h"

namespace baton::api::internal {

// The error as a JSON response with its HTTP status.
Response Error(const Status& st);
Response Json(int status, std::string body);
// `text` as an integer in [lo, hi]; the error names `name`.
Result<int64_t> BoundedInt(const std::string& name, const std::string& text, int64_t lo,
                           int64_t hi);
// An integer query parameter bounded to [lo, hi]; `fallback` when absent.
Result<int64_t> QueryInt(const Request& req, const std::string& key, int64_t lo, int64_t hi,
                         int64_t fallback);
// A query flag: "1", "true" or "yes".
bool QueryFlag(const Request& req, const std::string& key);
control::Caller CallerOf(const Identity& who);
// A job as `who` may see it: another user's environment (tokens, keys) stays theirs.
void Redact(Job& job, const Identity& who);
// The OpenAPI 3 document of the API (src/api/openapi.json).
const char* OpenApiDocument();

}  // namespace baton::api::internal
