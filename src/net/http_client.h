// A small blocking HTTP/1.1 client with keep-alive and timeouts, for the CLI and the agent's
// link to the controller. One connection per client object; not thread-safe (use one per
// thread). Beast stays inside http_client.cc.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "net/tls.h"

namespace baton::net {

struct HttpResponse {
  int status = 0;
  std::string body;
  // From a standby controller (X-Baton-Role: standby): it serves nothing, and names the
  // leader (X-Baton-Leader) when one holds the lease.
  bool standby = false;
  std::string leader;
};

using Headers = std::vector<std::pair<std::string, std::string>>;

// The parts of an http(s)://HOST[:PORT][/PATH[?QUERY]] URL.
struct HttpUrl {
  bool tls = false;          // https://
  std::string host;          // without an IPv6 address's brackets
  std::string port;          // "80" (http) or "443" (https) when the URL has none
  std::string target = "/";  // the path and query: what a request names
  // When not empty: plain HTTP on this Unix socket (the local controller's, LocalApiSocket)
  // instead of HOST:PORT; HOST:PORT is used where the socket cannot be reached.
  std::string unix_socket;
};
Result<HttpUrl> ParseHttpUrl(std::string_view url);

// The Unix socket a controller serves its API on beside its port, for commands on the same
// machine (no TCP, no TLS): DATA/api.sock.
std::string ApiSocketPath(const std::string& data_dir);
// The same where that path fits a socket's address, else "" (a client then uses the URL).
std::string LocalApiSocket(const std::string& data_dir);

class HttpClient {
 public:
  // `base_url` is http(s)://HOST:PORT (a path after it is ignored); `token` goes in the
  // Authorization header when not empty; an https:// server's certificate is checked against
  // what `tls` trusts and must name HOST.
  static Result<std::unique_ptr<HttpClient>> Create(std::string_view base_url, std::string token,
                                                    const TlsClientOptions& tls = {});
  // The same for a URL parsed already (its target is ignored).
  static std::unique_ptr<HttpClient> Create(const HttpUrl& url, std::string token,
                                            const TlsClientOptions& tls = {});
  ~HttpClient();

  // Sends one request and reads the whole response. A dropped keep-alive connection is
  // reopened once. Network failures are Unavailable; HTTP errors are responses.
  Result<HttpResponse> Request(std::string_view method, std::string_view target,
                               std::string_view body = {}, const Headers& headers = {},
                               Duration timeout = std::chrono::seconds(30));

  // Sends a GET whose answer is streamed (chunked: a followed log, Server-Sent Events) and
  // hands each piece of the body to `on_data` as it arrives; returns once the body ends. The
  // body of an answer that is not chunked (an error) is returned whole instead. `idle` bounds
  // the wait for each piece. Always on a connection of its own, closed after.
  Result<HttpResponse> Stream(std::string_view target,
                              const std::function<void(std::string_view)>& on_data,
                              const Headers& headers = {},
                              Duration idle = std::chrono::seconds(60));

  // An upgraded connection: a GET of `target` with Upgrade: `protocol`. When the server
  // switches (101), `fd` is the connected socket (blocking; the caller owns it) and `early`
  // what the server sent after its answer; else `fd` is -1 and `refused` is the answer. Over
  // https://, `fd` is one end of a socketpair whose bytes a thread of its own carries over TLS
  // (net/tls_stream.h's bridge) until either side closes.
  struct Upgraded {
    int fd = -1;
    std::string early;
    HttpResponse refused;
  };
  Result<Upgraded> Upgrade(std::string_view target, std::string_view protocol,
                           Duration timeout = std::chrono::seconds(30));

  // The token of the next requests on.
  void SetToken(std::string token);
  // Talks to another server from the next request on (the connection is closed).
  void Retarget(const HttpUrl& url);
  // http(s)://HOST:PORT of the server talked to.
  std::string base_url() const;

  // Thread-safe: makes a Request in progress on another thread fail at once, and every later
  // one too (for shutdown).
  void Cancel();

 private:
  struct Impl;
  explicit HttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Splits http(s)://HOST:PORT[/...] into host and port.
Result<std::pair<std::string, std::string>> ParseBaseUrl(std::string_view url);

}  // namespace baton::net
