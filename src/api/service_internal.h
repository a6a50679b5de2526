// Helpers shared by the files of api::Service (service.cc, service_jobs.cc, streams.cc); not
// for other modules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/auth.h"
#include "api/http.h"
#include "api/router.h"
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
// A query parameter's text; "" when absent.
std::string QueryText(const Request& req, const std::string& key);
// A comma-separated query parameter ("state=pending,held"); empty when absent.
std::vector<std::string> QueryList(const Request& req, const std::string& key);
// A query flag: "1", "true" or "yes".
bool QueryFlag(const Request& req, const std::string& key);
// A query flag read strictly: true, false, 1, 0 or absent (false); anything else is refused,
// for a flag whose mistyping must not go by unseen (dry_run).
Result<bool> QueryBool(const Request& req, const std::string& key);
// `text` as a positive integer; nullopt when it is not one.
std::optional<int64_t> PositiveInt(const std::string& text);
// The path's {id} as a job id.
// The {id} of a job route: a job id, or ARRAY_INDEX for a task of a job array ("12_7").
struct JobRef {
  JobId id;
  int array_index = -1;
};
Result<JobRef> JobIdParam(const Call& c);
control::Caller CallerOf(const Identity& who);
// A job as `who` may see it: another user's environment (tokens, keys) stays theirs.
void Redact(Job& job, const Identity& who);
// The OpenAPI 3 document of the API (src/api/openapi.json).
const char* OpenApiDocument();

}  // namespace baton::api::internal
