// The HTTP/1.1 server on Boost.Beast: keep-alive, bounded request sizes, answers that may come
// later from another thread (long polls, group commit), HTTPS on the same port when given a
// certificate. Beast and OpenSSL stay inside http_server.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/connections.h"
#include "api/http.h"
#include "core/status.h"
#include "net/tls.h"

namespace baton::api {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;                // 0 picks a free port
  size_t max_body_bytes = 1 << 20;  // larger bodies get 413
  // Routes whose bodies may be larger: "METHOD PATH" (exact, no query) and their limit.
  std::vector<std::pair<std::string, size_t>> large_bodies;
  size_t max_header_bytes = 16 * 1024;
  int threads = 1;
  // TLS: with a certificate, each connection's first bytes tell TLS from plain HTTP (one port
  // serves both), and plain HTTP is answered only for loopback peers unless
  // `plain_from_anywhere` (--insecure-http); others get 403 saying to use https://.
  net::TlsServerFiles tls;
  bool plain_from_anywhere = false;
  // Also plain HTTP on a Unix socket at this path (mode 0600), for commands on this machine:
  // no TCP, no TLS; removed on Stop. "" = none. One that cannot be made is left out
  // (unix_socket_status says why).
  std::string unix_socket;
  // Caps on TCP connections (api/connections.h); zeros: from the descriptor limit at Start.
  // The Unix socket's connections are not counted.
  ConnectionCaps connections;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, Handler handler);
  ~HttpServer();

  // Binds and starts serving; returns the port bound.
  Result<uint16_t> Start();
  // Stops accepting and closes connections; joins the threads.
  void Stop();
  // Runs `fn` on one of the server's threads.
  void Post(std::function<void()> fn);
  // Why options.unix_socket is not served (Start goes on without it), or OK.
  Status unix_socket_status() const;
  // The TCP connections now (after Start).
  Connections::Counts connection_counts() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton::api
