#include "cli/client.h"

#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "codec/json_codec.h"
#include "core/text.h"

namespace baton::cli {
namespace {

// A small file of the data directory (server.url, admin.token), its trailing blanks cut; empty
// when it cannot be read. Read with read(2), not through an ifstream and a stringstream, whose
// set-up was 2 % of a `baton submit`'s instructions. At most 64 KiB (both are a line).
std::string ReadTrimmed(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  constexpr size_t kMost = 64 * 1024;
  std::string s;
  char buf[4096];
  while (s.size() < kMost) {
    const ssize_t n = ::read(fd, buf, std::min(sizeof buf, kMost - s.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    s.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

Status FromHttp(const net::HttpResponse& r) {
  std::string msg = codec::ErrorMessage(r.body);
  switch (r.status) {
    case 400:
      return InvalidArgument(msg);
    case 401:
      return Unauthenticated(msg);
    case 403:
      return PermissionDenied(msg);
    case 404:
      return NotFound(msg);
    case 409:
      return Conflict(msg);
    case 413:
      return TooLarge(msg);
    case 503:
      return Unavailable(msg);
    default:
      return Internal("HTTP " + std::to_string(r.status) + ": " + msg);
  }
}

}  // namespace

std::string QueryEscape(std::string_view text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string DefaultDataDir() {
  if (const char* home = std::getenv("BATON_HOME"); home != nullptr && *home != '\0') return home;
  const char* user_home = std::getenv("HOME");
  return std::string(user_home != nullptr ? user_home : ".") + "/.baton";
}

int Fail(const Status& st) {
  std::cerr << "baton: " << st.message() << "\n";
  return 1;
}

int Usage(const Status& st) {
  std::cerr << "baton: " << st.message() << "\n";
  return 2;
}

Result<std::unique_ptr<ApiClient>> ApiClient::Connect(const Connection& c) {
  std::string dir = DefaultDataDir();
  std::string server = c.server;
  if (server.empty()) {
    if (const char* s = std::getenv("BATON_SERVER"); s != nullptr) server = s;
  }
  // The local controller (server.url) is talked to on its Unix socket where it serves one.
  std::string local_url;
  if (server.empty()) local_url = server = ReadTrimmed(dir + "/server.url");
  if (server.empty()) {
    return Err(Unavailable(
        "no server: pass --server URL, set BATON_SERVER, or start one with `baton up` (" + dir +
        "/server.url not found)"));
  }
  std::string token = c.token;
  if (token.empty()) {
    if (const char* t = std::getenv("BATON_TOKEN"); t != nullptr) token = t;
  }
  if (token.empty()) token = ReadTrimmed(dir + "/admin.token");
  // https://: what the server's certificate is checked against (--tls-ca, BATON_TLS_CA), else
  // the system's CAs and the local `baton up`'s own CA (DATA/tls/ca.crt).
  net::TlsClientOptions tls{.ca_file = c.tls_ca, .local_ca = dir + "/tls/ca.crt"};
  if (const char* ca = std::getenv("BATON_TLS_CA"); tls.ca_file.empty() && ca != nullptr)
    tls.ca_file = ca;
  ASSIGN_OR_RETURN(auto servers, net::ServerList::Parse(server));
  std::unique_ptr<ApiClient> client(new ApiClient(std::move(servers), token, std::move(tls)));
  if (!local_url.empty()) {
    client->local_url_ = std::move(local_url);
    client->local_socket_ = net::LocalApiSocket(dir);
  }
  client->FindLeader();
  ASSIGN_OR_RETURN(net::HttpUrl url, client->Target());
  client->http_ = net::HttpClient::Create(url, token, client->tls_);
  return client;
}

// Given several addresses, asks them all at once which one leads (net::ServerList::
// ProbeLeader), so that a controller that takes connections and answers nothing (stalled, cut
// off) costs a command nothing once another leads.
void ApiClient::FindLeader() {
  servers_->ProbeLeader(token_, tls_, std::chrono::seconds(2), [this](const std::string& u) {
    auto url = net::ParseHttpUrl(u);
    if (url && u == local_url_) url->unix_socket = local_socket_;
    return url;
  });
}

Result<net::HttpUrl> ApiClient::Target() const {
  std::string current = servers_->Current();
  ASSIGN_OR_RETURN(net::HttpUrl url, net::ParseHttpUrl(current));
  if (current == local_url_) url.unix_socket = local_socket_;
  return url;
}

Result<ApiClient::Tunnel> ApiClient::OpenTunnel(const std::string& target) {
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(net::HttpUrl url, Target());
    auto http = net::HttpClient::Create(url, token_, tls_);
    auto up = http->Upgrade(target, "baton-tunnel");
    if (!up) {
      if (MoveOn(Err(up.error()), true, attempt)) continue;
      return Err(up.error());
    }
    if (up->fd < 0) {
      if (MoveOn(up->refused, true, attempt)) continue;
      return Err(FromHttp(up->refused));
    }
    return Tunnel{.fd = up->fd, .early = std::move(up->early)};
  }
}

// A failover takes from a fraction of a second (a leader that died) to the lease's time to
// live (one cut off; docs/operations.md): a request is tried again for up to 30 s, pausing
// 200 ms after each round of every address.
constexpr auto kFollowFor = std::chrono::seconds(30);
constexpr auto kRoundPause = std::chrono::milliseconds(200);
constexpr auto kStalledServer = std::chrono::seconds(10);

bool ApiClient::MoveOn(const Result<net::HttpResponse>& r, bool idempotent, int attempt) {
  if (attempt == 0) follow_until_ = std::chrono::steady_clock::now() + kFollowFor;
  if (std::chrono::steady_clock::now() >= follow_until_) return false;
  std::string url = servers_->Current();
  if (r && r->standby) {
    if (!r->leader.empty() && r->leader != url) {
      servers_->Leader(r->leader);
    } else if (servers_->Failed(url)) {
      std::this_thread::sleep_for(kRoundPause);  // an election under way
    }
    return true;
  }
  if (r || servers_->size() < 2) return false;
  // Not reached: safe to send again if it never left, or if sending twice does no harm.
  bool never_sent = r.error().message().starts_with("cannot ");
  if (!idempotent && !never_sent) return false;
  if (servers_->Failed(url)) std::this_thread::sleep_for(kRoundPause);
  return true;
}

void ApiClient::FollowServers() {
  if (uint64_t g = servers_->generation(); g != generation_) {
    generation_ = g;
    if (auto url = Target()) http_->Retarget(*url);
  }
}

Result<net::HttpResponse> ApiClient::Raw(std::string_view method, std::string_view target,
                                         std::string_view body, const net::Headers& headers) {
  bool idempotent = method == "GET" || std::any_of(headers.begin(), headers.end(), [](auto& h) {
                      return h.first == "Idempotency-Key";
                    });
  for (int attempt = 0;; ++attempt) {
    FollowServers();
    // With several servers, one that takes connections but never answers (a leader frozen or
    // cut off) must not hold a request long: 10 s, then the next.
    auto r = http_->Request(method, target, body, headers,
                            servers_->size() > 1 ? kStalledServer : std::chrono::seconds(30));
    if (!MoveOn(r, idempotent, attempt)) return r;
  }
}

Result<std::string> ApiClient::Call(std::string_view method, std::string_view target,
                                    std::string_view body, const net::Headers& headers) {
  ASSIGN_OR_RETURN(net::HttpResponse r, Raw(method, target, body, headers));
  if (r.status < 200 || r.status >= 300) return Err(FromHttp(r));
  return std::move(r.body);
}

Status ApiClient::Stream(std::string_view target,
                         const std::function<void(std::string_view)>& on_data,
                         const net::Headers& headers) {
  // A followed log of a job still waiting, or a quiet cluster's events, may send nothing for
  // hours: the stream is left open as long as the server keeps it.
  Result<net::HttpResponse> r;
  for (int attempt = 0;; ++attempt) {
    FollowServers();
    r = http_->Stream(target, on_data, headers, std::chrono::hours(24 * 365));
    if (!MoveOn(r, /*idempotent=*/false, attempt)) break;
  }
  if (!r) return r.error();
  if (r->status < 200 || r->status >= 300) return FromHttp(*r);
  return Status::Ok();
}

// States as users type them: any case, and Slurm's codes (PD, R, CD, F, CA, TO).
static std::string StateNames(std::string_view list) {
  std::string out;
  for (std::string_view word : SplitTrimmed(list, ',')) {
    std::string s(word);
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (s == "pd") s = "pending";
    if (s == "r") s = "running";
    if (s == "cd") s = "succeeded";
    if (s == "f") s = "failed";
    if (s == "ca") s = "cancelled";
    if (s == "to") s = "timed_out";
    out += (out.empty() ? "" : ",") + s;
  }
  return out;
}

Result<std::vector<Job>> ApiClient::ListJobs(const JobQuery& q) {
  std::vector<Job> jobs;
  int64_t after = q.last > 0 ? std::max<int64_t>(q.first - 1, 0) : 0;  // the listing is by id
  for (;;) {
    std::string target = "/v1/jobs?limit=1000&after=" + std::to_string(after);
    if (!q.states.empty()) target += "&state=" + QueryEscape(StateNames(q.states));
    if (!q.user.empty()) target += "&user=" + QueryEscape(q.user);
    if (!q.project.empty()) target += "&project=" + QueryEscape(q.project);
    if (q.array != 0) target += "&array=" + std::to_string(q.array);
    ASSIGN_OR_RETURN(std::string body, Call("GET", target));
    std::optional<int64_t> next;
    ASSIGN_OR_RETURN(std::vector<Job> page, codec::DecodeJobList(body, &next));
    for (Job& j : page) {
      if (q.last > 0 && j.id.value > q.last) return jobs;
      jobs.push_back(std::move(j));
    }
    if (!next) return jobs;
    after = *next;
  }
}

Result<std::string> ApiClient::WhoAmI() {
  ASSIGN_OR_RETURN(std::string body, Call("GET", "/v1/whoami"));
  return codec::DecodeWhoAmI(body);
}

Result<Job> ApiClient::GetJob(JobId id) { return GetJob(id.ToString()); }

Result<Job> ApiClient::GetJob(const std::string& ref) {
  ASSIGN_OR_RETURN(std::string body, Call("GET", "/v1/jobs/" + ref));
  return codec::DecodeJob(body);
}

void AddConnectionFlags(CLI::App* sub, Connection& conn) {
  sub->add_option("--server", conn.server,
                  "controller URL (default: $BATON_SERVER, then the local server.url)");
  sub->add_option("--token", conn.token,
                  "API token (default: $BATON_TOKEN, then the local admin.token)");
  sub->add_option("--tls-ca", conn.tls_ca,
                  "CA certificates (PEM) an https:// server is checked against (default: "
                  "$BATON_TLS_CA, else the system's CAs and the local DATA/tls/ca.crt)");
}

int ExitCodeOf(const Job& job) {
  switch (job.state) {
    case JobState::kSucceeded:
      return 0;
    case JobState::kCancelled:
      return 130;
    case JobState::kTimedOut:
      return 124;
    default:
      break;
  }
  if (job.exit_signal) return 128 + *job.exit_signal;
  if (job.exit_code && *job.exit_code != 0) return *job.exit_code;
  return 1;
}

}  // namespace baton::cli
