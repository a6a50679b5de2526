#include "agent/reclaim_watch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "codec/json_codec.h"

namespace baton::agent {

namespace {

constexpr Duration kMetadataTimeout = std::chrono::seconds(2);

Result<std::string> MetadataUrl(std::string_view rest, std::string_view fallback,
                                std::string_view spec) {
  std::string url(rest.empty() ? fallback : rest);
  auto parsed = net::ParseHttpUrl(url);
  if (!parsed || parsed->tls) {
    return Err(InvalidArgument("--reclaim-notice " + std::string(spec.substr(0, 200)) +
                               ": the metadata server is an http://HOST[:PORT] URL (not https)"));
  }
  return url;
}

// An answer's text without the whitespace around it (a newline included).
std::string_view Stripped(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

}  // namespace

std::string_view ReclaimSourceName(ReclaimSource::Kind kind) {
  switch (kind) {
    case ReclaimSource::Kind::kAws:
      return "aws";
    case ReclaimSource::Kind::kGcp:
      return "gcp";
    case ReclaimSource::Kind::kFile:
      return "file";
  }
  return "file";
}

Result<ReclaimSource> ParseReclaimSource(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const std::string_view rest = colon == std::string_view::npos ? "" : spec.substr(colon + 1);
  if (kind == "aws") {
    ASSIGN_OR_RETURN(std::string url, MetadataUrl(rest, "http://169.254.169.254", spec));
    return ReclaimSource{.kind = ReclaimSource::Kind::kAws, .where = std::move(url)};
  }
  if (kind == "gcp") {
    ASSIGN_OR_RETURN(std::string url, MetadataUrl(rest, "http://metadata.google.internal", spec));
    return ReclaimSource{.kind = ReclaimSource::Kind::kGcp, .where = std::move(url)};
  }
  if (kind == "file") {
    if (!rest.starts_with('/') || rest.size() > 4096) {
      return Err(InvalidArgument("--reclaim-notice " + std::string(spec.substr(0, 200)) +
                                 ": file:PATH takes an absolute path of at most 4096 bytes"));
    }
    return ReclaimSource{.kind = ReclaimSource::Kind::kFile, .where = std::string(rest)};
  }
  return Err(InvalidArgument("--reclaim-notice " + std::string(spec.substr(0, 200)) +
                             ": must be aws[:URL], gcp[:URL] or file:PATH"));
}

Result<std::optional<TimePoint>> AwsAnswer(int status, std::string_view body, TimePoint now) {
  (void)now;
  if (status == 404) return std::optional<TimePoint>();
  if (status != 200) {
    return Err(Unavailable("spot/instance-action answered " + std::to_string(status)));
  }
  auto time = codec::DecodeInstanceAction(body);
  if (!time) return Err(InvalidArgument("spot/instance-action: " + time.error().message()));
  return std::optional<TimePoint>(*time);
}

Result<std::optional<TimePoint>> GcpAnswer(int status, std::string_view body, TimePoint now) {
  if (status != 200)
    return Err(Unavailable("instance/preempted answered " + std::to_string(status)));
  std::string_view said = Stripped(body);
  if (said == "FALSE") return std::optional<TimePoint>();
  if (said == "TRUE") return std::optional<TimePoint>(now + kGcpNotice);
  return Err(InvalidArgument("instance/preempted: neither TRUE nor FALSE"));
}

Result<std::optional<TimePoint>> FileAnswer(std::string_view contents, TimePoint now) {
  std::string_view said = Stripped(contents);
  if (said.empty()) return std::optional<TimePoint>(now + kFileNotice);
  if (said.starts_with('{')) {
    auto time = codec::DecodeInstanceAction(said);
    if (!time) return Err(InvalidArgument(time.error().message()));
    return std::optional<TimePoint>(*time);
  }
  auto time = ParseRfc3339(said);
  if (!time) {
    return Err(InvalidArgument("neither empty, an RFC 3339 time nor AWS's instance-action JSON"));
  }
  return std::optional<TimePoint>(*time);
}

ReclaimWatch::ReclaimWatch(ReclaimSource source) : source_(std::move(source)) {
  if (source_.kind != ReclaimSource::Kind::kFile) {
    auto url = net::ParseHttpUrl(source_.where);
    if (url) client_ = net::HttpClient::Create(*url, "");
  }
}

ReclaimWatch::~ReclaimWatch() = default;

void ReclaimWatch::Cancel() {
  if (client_) client_->Cancel();
}

Result<net::HttpResponse> ReclaimWatch::Get(const std::string& target,
                                            const net::Headers& headers) {
  return client_->Request("GET", target, {}, headers, kMetadataTimeout);
}

Result<std::optional<ReclaimNotice>> ReclaimWatch::Look(TimePoint now) {
  std::optional<TimePoint> deadline;
  switch (source_.kind) {
    case ReclaimSource::Kind::kFile: {
      // Read as the file is (at most 4 KiB); its absence is no notice.
      const int fd = ::open(source_.where.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0 && errno == ENOENT) return std::optional<ReclaimNotice>();
      if (fd < 0) return Err(Unavailable(source_.where + ": " + std::strerror(errno)));
      char buf[4096];
      const ssize_t n = ::read(fd, buf, sizeof buf);
      const int read_errno = errno;
      ::close(fd);
      if (n < 0) return Err(Unavailable(source_.where + ": " + std::strerror(read_errno)));
      auto said = FileAnswer(std::string_view(buf, static_cast<size_t>(n)), now);
      if (!said) return Err(InvalidArgument(source_.where + ": " + said.error().message()));
      deadline = *said;
      break;
    }
    case ReclaimSource::Kind::kGcp: {
      ASSIGN_OR_RETURN(net::HttpResponse res, Get("/computeMetadata/v1/instance/preempted",
                                                  {{"Metadata-Flavor", "Google"}}));
      ASSIGN_OR_RETURN(deadline, GcpAnswer(res.status, res.body, now));
      break;
    }
    case ReclaimSource::Kind::kAws: {
      // IMDSv2: a session token first (6 hours), asked again when refused; a server that has
      // no token route (IMDSv1 only) is asked without one.
      if (imds_token_.empty()) {
        auto token =
            client_->Request("PUT", "/latest/api/token", {},
                             {{"X-aws-ec2-metadata-token-ttl-seconds", "21600"}}, kMetadataTimeout);
        if (!token) return Err(token.error());
        if (token->status == 200) imds_token_ = std::string(Stripped(token->body)).substr(0, 512);
      }
      net::Headers headers;
      if (!imds_token_.empty()) headers.emplace_back("X-aws-ec2-metadata-token", imds_token_);
      ASSIGN_OR_RETURN(net::HttpResponse res,
                       Get("/latest/meta-data/spot/instance-action", headers));
      if (res.status == 401) imds_token_.clear();  // expired: a new one next time
      ASSIGN_OR_RETURN(deadline, AwsAnswer(res.status, res.body, now));
      break;
    }
  }
  if (!deadline) return std::optional<ReclaimNotice>();
  return std::optional<ReclaimNotice>(ReclaimNotice{
      .source = std::string(ReclaimSourceName(source_.kind)), .seen = now, .deadline = *deadline});
}

}  // namespace baton::agent
