// How the CLI finds its server and token (PRODUCT.md §2), and a thin API client on top of
// net::HttpClient that turns HTTP errors into messages.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/status.h"
#include "net/http_client.h"
#include "net/server_list.h"

namespace CLI {
class App;
}

namespace baton::cli {

struct Connection {
  std::string server;  // --server
  std::string token;   // --token
  std::string tls_ca;  // --tls-ca
};

// The flags every command that talks to the server takes; `conn` must outlive the parse.
void AddConnectionFlags(CLI::App* sub, Connection& conn);

// The exit code `baton run`, `attach` and `forward` end with for a job that has ended: its own,
// 128 + its signal, 130 when cancelled, 124 when timed out (as timeout(1)), else 1.
int ExitCodeOf(const Job& job);

// Every command: a failure prints "baton: message" on stderr and exits 1.
int Fail(const Status& st);
// Bad input caught before asking the server (a flag value, a job file): "baton: message", 2.
int Usage(const Status& st);

// `text` for a URL's query: letters, digits and -._~ as they are, every other byte %XX.
std::string QueryEscape(std::string_view text);

// $BATON_HOME, else ~/.baton.
std::string DefaultDataDir();

class ApiClient {
 public:
  // Resolves server and token: flags, then $BATON_SERVER / $BATON_TOKEN, then the files
  // server.url and admin.token of the local data directory. The local server is reached on
  // its Unix socket (DATA/api.sock: plain HTTP, no TLS) where it serves one, else on
  // server.url.
  static Result<std::unique_ptr<ApiClient>> Connect(const Connection& c);

  // Returns the body of a 2xx answer; other answers become errors carrying the server's message.
  Result<std::string> Call(std::string_view method, std::string_view target,
                           std::string_view body = {}, const net::Headers& headers = {});
  // The raw answer, for callers that look at the status themselves.
  Result<net::HttpResponse> Raw(std::string_view method, std::string_view target,
                                std::string_view body = {}, const net::Headers& headers = {});

  // A streamed GET (a followed log, events): `on_data` gets the body as it comes; an answer
  // that is not 2xx becomes an error carrying the server's message.
  Status Stream(std::string_view target, const std::function<void(std::string_view)>& on_data,
                const net::Headers& headers = {});

  // An upgraded connection to a tunnel route (GET /v1/jobs/{id}/attach or /forward), on a
  // connection of its own: the socket (the caller owns it) and the bytes that came with the
  // answer; a refusal becomes an error carrying the server's message.
  struct Tunnel {
    int fd = -1;
    std::string early;
  };
  Result<Tunnel> OpenTunnel(const std::string& target);

  Result<Job> GetJob(JobId id);
  // A job by what the job routes take: "12", or "12_7" for task 7 of array 12.
  Result<Job> GetJob(const std::string& ref);

  // GET /v1/jobs, every page, with the server's filters: comma-separated `states`, a `user`
  // and a `project` ("" = any).
  struct JobQuery {
    std::string states, user, project;
    int64_t array = 0;            // the tasks of this job array
    int64_t first = 0, last = 0;  // last > 0: only jobs with ids in [first, last]
  };
  Result<std::vector<Job>> ListJobs(const JobQuery& q);

  // GET /v1/whoami: the user the token acts as.
  Result<std::string> WhoAmI();
  // The server's URL, as resolved (the leader's, of several).
  std::string server() const { return servers_->Current(); }

 private:
  ApiClient(std::shared_ptr<net::ServerList> servers, std::string token, net::TlsClientOptions tls)
      : servers_(std::move(servers)), token_(std::move(token)), tls_(std::move(tls)) {}
  // With several servers: asks them all at once which leads, and uses it.
  void FindLeader();
  // The server in use, over the local controller's Unix socket when it is that one.
  Result<net::HttpUrl> Target() const;
  // Whether to ask again elsewhere after answer `r` to a request: a standby's answer, or (with
  // several servers) a failure to reach one, when the request may be sent twice (`idempotent`)
  // or never left. Moves to the leader or the next server.
  bool MoveOn(const Result<net::HttpResponse>& r, bool idempotent, int attempt);
  // Points the connection at the server in use, if it changed.
  void FollowServers();
  std::unique_ptr<net::HttpClient> http_;
  std::shared_ptr<net::ServerList> servers_;
  uint64_t generation_ = 0;
  std::chrono::steady_clock::time_point follow_until_{};  // MoveOn's deadline for a request
  std::string token_;
  net::TlsClientOptions tls_;
  // The local controller: its URL (from DATA/server.url, no --server or $BATON_SERVER given)
  // and the Unix socket it serves beside it (DATA/api.sock).
  std::string local_url_, local_socket_;
};

}  // namespace baton::cli
