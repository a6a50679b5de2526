// Asynchronous HTTP/1.1 keep-alive connections on a few shared threads, for baton_agents' long
// polls (bench/agent_fleet.h): ten thousand open connections cost ten thousand descriptors and
// two threads, where a blocking net::HttpClient costs a thread and four descriptors (its own
// io_context's epoll, eventfd and timerfd, and the socket) each. Beast stays in async_link.cc.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/time.h"
#include "net/http_client.h"

namespace baton::bench {

class LinkPool;
struct LinkState;  // async_link.cc's
struct PoolState;

// One keep-alive connection to the pool's server, opened at its first request and again after
// a failure. One request at a time; its `done` (and After's `f`) run on one of the pool's
// threads, never two of this link's at once. A Link must be destroyed after its pool's Stop()
// and before the pool.
class Link {
 public:
  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  using Done = std::function<void(Result<net::HttpResponse>)>;
  // As net::HttpClient::Request: `token` goes in the Authorization header when not empty, a
  // reused connection the server dropped is opened again once, network failures and timeouts
  // are Unavailable, HTTP errors are responses. After the pool's Stop(), fails at once.
  void Request(std::string_view method, std::string target, std::string body, std::string token,
               Duration timeout, Done done);
  // Calls `f` after `d` (0: soon), unless the pool stops first. One wait at a time: a second
  // call cancels the first's.
  void After(Duration d, std::function<void()> f);

 private:
  friend class LinkPool;
  explicit Link(std::unique_ptr<LinkState> state);
  std::unique_ptr<LinkState> state_;
};

class LinkPool {
 public:
  // `server` is http(s)://HOST:PORT, resolved once here; an https:// server's certificate is
  // checked against what `tls` trusts (one SSL context for every link).
  static Result<std::unique_ptr<LinkPool>> Create(std::string_view server,
                                                  const net::TlsClientOptions& tls, int threads);
  ~LinkPool();  // Stop()
  LinkPool(const LinkPool&) = delete;
  LinkPool& operator=(const LinkPool&) = delete;

  // True when the server is on IPv4 loopback (127.0.0.0/8), where each link may come from an
  // address of its own.
  bool loopback() const;
  // A connection from `source` (an IPv4 address, when loopback()), or from the address the
  // system picks ("").
  Result<std::unique_ptr<Link>> NewLink(const std::string& source);

  // Starts the threads.
  void Start();
  // Closes every link (requests in flight fail), waits a little for their callbacks, and ends
  // the threads; later requests fail at once.
  void Stop();

  // Descriptors the pool holds besides its links' sockets (its io_context's).
  static constexpr int kOwnDescriptors = 3;

 private:
  explicit LinkPool(std::unique_ptr<PoolState> state);
  std::unique_ptr<PoolState> state_;
};

}  // namespace baton::bench
