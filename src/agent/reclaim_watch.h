// A spot node's reclaim notice (`baton agent --reclaim-notice SOURCE`, PRODUCT.md "Spot nodes"):
// where it comes from, what an answer from there says, and one look there. The agent's watch
// thread looks every --reclaim-poll (5 s, as AWS advises for its two minutes' notice); the main
// loop acts on the first notice (agent.cc: its jobs stopped with the deadline as their grace,
// the controller told).
//
// Sources:
// - aws[:URL]: EC2 instance metadata (default http://169.254.169.254), IMDSv2 (a session token
//   from PUT /latest/api/token, else a plain GET as IMDSv1 allows). GET
//   /latest/meta-data/spot/instance-action is 404 until a notice, then
//   {"action": "terminate"|"stop"|"hibernate", "time": "2026-11-29T12:02:00Z"}.
// - gcp[:URL]: Compute Engine metadata (default http://metadata.google.internal), GET
//   /computeMetadata/v1/instance/preempted with Metadata-Flavor: Google: TRUE once preempted,
//   when the VM has 30 s left.
// - file:PATH: the notice is that the file exists (an operator's or another tool's way): empty,
//   the deadline is 2 minutes after it was seen; else an RFC 3339 time, or AWS's JSON.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/protocol.h"
#include "core/status.h"
#include "core/time.h"
#include "net/http_client.h"

namespace baton::agent {

struct ReclaimSource {
  enum class Kind { kAws, kGcp, kFile };
  Kind kind = Kind::kAws;
  std::string where;  // the metadata server's base URL, or the file's path
};

// `aws`, `aws:URL`, `gcp`, `gcp:URL` or `file:PATH` (an absolute path).
Result<ReclaimSource> ParseReclaimSource(std::string_view spec);
// "aws", "gcp", "file": ReclaimNotice::source.
std::string_view ReclaimSourceName(ReclaimSource::Kind kind);

// How long a notice gives where it does not say: GCP's 30 s; a file's 2 minutes (AWS's).
inline constexpr Duration kGcpNotice = std::chrono::seconds(30);
inline constexpr Duration kFileNotice = std::chrono::minutes(2);

// The deadline an answer says, seen at `now`: none while there is no notice; an error for an
// answer that is neither (the watch logs it and looks again).
Result<std::optional<TimePoint>> AwsAnswer(int status, std::string_view body, TimePoint now);
Result<std::optional<TimePoint>> GcpAnswer(int status, std::string_view body, TimePoint now);
Result<std::optional<TimePoint>> FileAnswer(std::string_view contents, TimePoint now);

class ReclaimWatch {
 public:
  explicit ReclaimWatch(ReclaimSource source);
  ~ReclaimWatch();
  // One look at the source (a metadata request waits at most 2 s): the notice, if there is one.
  Result<std::optional<ReclaimNotice>> Look(TimePoint now);
  // Makes a look in progress on another thread fail at once (for shutdown).
  void Cancel();

 private:
  Result<net::HttpResponse> Get(const std::string& target, const net::Headers& headers);

  ReclaimSource source_;
  std::unique_ptr<net::HttpClient> client_;
  std::string imds_token_;  // AWS IMDSv2's session token; "" before one is had, or without one
};

}  // namespace baton::agent
