#include "net/http_client.h"

#include <fcntl.h>
#include <sys/un.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/version.hpp>
#include <boost/url/parse.hpp>
#include <optional>
#include <thread>

#include "net/tls_stream.h"

namespace baton::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using LocalStream = beast::basic_stream<asio::local::stream_protocol>;

std::string ApiSocketPath(const std::string& data_dir) { return data_dir + "/api.sock"; }

std::string LocalApiSocket(const std::string& data_dir) {
  std::string path = ApiSocketPath(data_dir);
  return path.size() < sizeof(sockaddr_un::sun_path) ? path : std::string();
}

Result<HttpUrl> ParseHttpUrl(std::string_view url) {
  auto u = boost::urls::parse_uri(url);
  if (!u || (u->scheme() != "http" && u->scheme() != "https") || u->host().empty()) {
    return Err(
        InvalidArgument("server: \"" + std::string(url) +
                        "\" is not a URL of the form https://HOST:PORT or http://HOST:PORT"));
  }
  HttpUrl out;
  out.tls = u->scheme() == "https";
  out.port = u->has_port() ? std::string(u->port()) : (out.tls ? "443" : "80");
  out.host = std::string(u->host());
  if (out.host.size() > 2 && out.host.front() == '[' && out.host.back() == ']')
    out.host = out.host.substr(1, out.host.size() - 2);
  if (!u->encoded_path().empty())
    out.target = std::string(u->encoded_target());
  else if (u->has_query())
    out.target = "/?" + std::string(u->encoded_query());
  return out;
}

Result<std::pair<std::string, std::string>> ParseBaseUrl(std::string_view url) {
  ASSIGN_OR_RETURN(HttpUrl u, ParseHttpUrl(url));
  return std::make_pair(std::move(u.host), std::move(u.port));
}

struct HttpClient::Impl {
  std::string host, port, token;
  bool tls = false;
  TlsClientOptions tls_options;
  std::shared_ptr<SslContext> ssl_context;  // made at the first https:// connection
  std::atomic<bool> cancelled{false};
  // Shared: an upgraded connection over TLS takes it (and its stream) to its bridge's thread.
  std::shared_ptr<asio::io_context> ioc = std::make_shared<asio::io_context>();
  std::string unix_socket;  // tried first when not empty (HttpUrl::unix_socket)
  // The connection: one of them, or none.
  std::optional<beast::tcp_stream> plain;
  std::optional<TlsStream> secure;
  std::optional<LocalStream> local;
  beast::flat_buffer buffer;

  bool open() const { return plain.has_value() || secure.has_value() || local.has_value(); }
  void Reset() {
    secure.reset();
    plain.reset();
    local.reset();
  }
  // `f` on the stream requests go over.
  template <class F>
  void Visit(F&& f) {
    if (secure) {
      f(*secure);
    } else if (local) {
      f(*local);
    } else {
      f(*plain);
    }
  }
  // `f` on the socket's stream, under TLS if any: timeouts, closing.
  template <class F>
  void VisitLowest(F&& f) {
    if (secure) {
      f(beast::get_lowest_layer(*secure));
    } else if (local) {
      f(*local);
    } else {
      f(*plain);
    }
  }
  void ExpiresAfter(Duration d) {
    VisitLowest([d](auto& s) { s.expires_after(d); });
  }
  void CloseSocket() {
    VisitLowest([](auto& s) {
      beast::error_code ec;
      s.socket().close(ec);
    });
  }
  std::string Url() const {
    return std::string(tls ? "https://" : "http://") +
           (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
  }

  // The headers every request carries: the host, who asks, and the token.
  void SetCommonHeaders(http::fields& f) const {
    f.set(http::field::host, host + ":" + port);
    f.set(http::field::user_agent, "baton");
    if (!token.empty()) f.set(http::field::authorization, "Bearer " + token);
  }

  // Runs the io_context until the started operation finishes or `timeout` passes.
  bool RunFor(Duration timeout) {
    ioc->restart();
    ioc->run_for(timeout);
    if (!ioc->stopped()) {
      // Timed out: cancel and drain.
      if (open()) CloseSocket();
      ioc->restart();
      ioc->run();
      return false;
    }
    return true;
  }

  // The local controller's Unix socket; false (and the socket forgotten, so that HOST:PORT is
  // used from now on) where it cannot be reached: none there, or a server that is gone.
  bool ConnectLocal(Duration timeout) {
    local.emplace(*ioc);
    beast::error_code result = asio::error::would_block;
    local->expires_after(timeout);
    local->async_connect(asio::local::stream_protocol::endpoint(unix_socket),
                         [&](beast::error_code ec) { result = ec; });
    RunFor(timeout + std::chrono::seconds(1));
    if (!result) return true;
    local.reset();
    unix_socket.clear();
    return false;
  }

  Status Connect(Duration timeout) {
    Reset();
    buffer.clear();
    if (!unix_socket.empty() && ConnectLocal(timeout)) return Status::Ok();
    if (tls) {
      if (!ssl_context) {
        ASSIGN_OR_RETURN(ssl_context, MakeClientContext(tls_options));
      }
      secure.emplace(*ioc, *ssl_context);
    } else {
      plain.emplace(*ioc);
    }
    beast::error_code result = asio::error::would_block;
    tcp::resolver resolver(*ioc);
    tcp::resolver::results_type endpoints;
    beast::error_code rec;
    endpoints = resolver.resolve(host, port, rec);
    if (rec) return Unavailable("cannot resolve " + host + ": " + rec.message());
    beast::tcp_stream& lowest = secure ? beast::get_lowest_layer(*secure) : *plain;
    lowest.expires_after(timeout);
    lowest.async_connect(endpoints,
                         [&](beast::error_code ec, const tcp::endpoint&) { result = ec; });
    RunFor(timeout + std::chrono::seconds(1));
    if (result) {
      Reset();
      return Unavailable("cannot connect to " + Url() + ": " + result.message());
    }
    lowest.socket().set_option(tcp::no_delay(true));
    if (!secure) return Status::Ok();
    if (Status st = ExpectServerName(*secure, host); !st.ok()) {
      Reset();
      return st;
    }
    result = asio::error::would_block;
    secure->async_handshake(asio::ssl::stream_base::client,
                            [&](beast::error_code ec) { result = ec; });
    RunFor(timeout + std::chrono::seconds(1));
    if (result) {
      // "cannot ...": it never reached the server's API, so it may be tried elsewhere.
      std::string why = HandshakeError(result, *secure);
      Reset();
      return Unavailable("cannot connect to " + Url() + ": " + why);
    }
    return Status::Ok();
  }

  Result<HttpResponse> Once(http::request<http::string_body>& req, Duration timeout) {
    beast::error_code result = asio::error::would_block;
    http::response_parser<http::string_body> parser;
    parser.body_limit(512 * 1024 * 1024);
    ExpiresAfter(timeout);
    Visit([&](auto& stream) {
      http::async_write(stream, req, [&](beast::error_code ec, size_t) {
        if (ec) {
          result = ec;
          return;
        }
        http::async_read(stream, buffer, parser,
                         [&](beast::error_code ec2, size_t) { result = ec2; });
      });
    });
    RunFor(timeout + std::chrono::seconds(1));
    if (result) {
      Reset();
      return Err(Unavailable("request to " + Url() + " failed: " + result.message()));
    }
    auto res = parser.release();
    if (!res.keep_alive() && res.result_int() != 101) Reset();
    return HttpResponse{.status = static_cast<int>(res.result_int()),
                        .body = std::move(res.body()),
                        .standby = res["X-Baton-Role"] == "standby",
                        .leader = std::string(res["X-Baton-Leader"])};
  }
};

HttpClient::HttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::~HttpClient() = default;

Result<std::unique_ptr<HttpClient>> HttpClient::Create(std::string_view base_url, std::string token,
                                                       const TlsClientOptions& tls) {
  ASSIGN_OR_RETURN(HttpUrl url, ParseHttpUrl(base_url));
  return Create(url, std::move(token), tls);
}

std::unique_ptr<HttpClient> HttpClient::Create(const HttpUrl& url, std::string token,
                                               const TlsClientOptions& tls) {
  auto impl = std::make_unique<Impl>();
  impl->host = url.host;
  impl->port = url.port;
  impl->tls = url.tls;
  impl->unix_socket = url.unix_socket;
  impl->tls_options = tls;
  impl->token = std::move(token);
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(impl)));
}

void HttpClient::SetToken(std::string token) { impl_->token = std::move(token); }

void HttpClient::Retarget(const HttpUrl& url) {
  impl_->Reset();
  impl_->host = url.host;
  impl_->port = url.port;
  impl_->tls = url.tls;
  impl_->unix_socket = url.unix_socket;
}

std::string HttpClient::base_url() const { return impl_->Url(); }

void HttpClient::Cancel() {
  impl_->cancelled = true;
  asio::post(*impl_->ioc, [im = impl_.get()] {
    if (im->open()) im->CloseSocket();
  });
}

Result<HttpResponse> HttpClient::Stream(std::string_view target,
                                        const std::function<void(std::string_view)>& on_data,
                                        const Headers& headers, Duration idle) {
  Impl& im = *impl_;
  if (im.cancelled) return Err(Unavailable("request to " + im.Url() + " cancelled"));
  http::request<http::empty_body> req{http::verb::get, target, 11};
  im.SetCommonHeaders(req);
  for (const auto& [k, v] : headers) req.set(k, v);
  RETURN_IF_ERROR(im.Connect(std::min<Duration>(idle, std::chrono::seconds(10))));
  auto fail = [&](beast::error_code ec) {
    im.Reset();
    return Err(Unavailable("request to " + im.Url() + " failed: " + ec.message()));
  };
  beast::error_code result = asio::error::would_block;
  im.ExpiresAfter(idle);
  im.Visit([&](auto& stream) {
    http::async_write(stream, req, [&](beast::error_code ec, size_t) { result = ec; });
  });
  im.RunFor(idle + std::chrono::seconds(1));
  if (result) return fail(result);
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);  // chunks go to on_data; only an error body is kept (small)
  auto on_chunk = [&](std::uint64_t, std::string_view body, beast::error_code&) -> size_t {
    on_data(body);
    return body.size();
  };
  parser.on_chunk_body(on_chunk);
  while (!parser.is_done()) {
    result = asio::error::would_block;
    im.ExpiresAfter(idle);
    im.Visit([&](auto& stream) {
      http::async_read_some(stream, im.buffer, parser,
                            [&](beast::error_code ec, size_t) { result = ec; });
    });
    if (!im.RunFor(idle + std::chrono::seconds(1)) && !result) result = beast::error::timeout;
    if (result) return fail(result);
  }
  auto res = parser.release();
  im.Reset();
  int status = static_cast<int>(res.result_int());
  if (status >= 200 && status < 300 && !res.body().empty()) {
    on_data(res.body());  // a body sent whole (not chunked): it is the stream
    res.body().clear();
  }
  return HttpResponse{.status = status,
                      .body = std::move(res.body()),
                      .standby = res["X-Baton-Role"] == "standby",
                      .leader = std::string(res["X-Baton-Leader"])};
}

Result<HttpClient::Upgraded> HttpClient::Upgrade(std::string_view target, std::string_view protocol,
                                                 Duration timeout) {
  Impl& im = *impl_;
  if (im.cancelled) return Err(Unavailable("request to " + im.Url() + " cancelled"));
  http::request<http::string_body> req{http::verb::get, target, 11};
  im.SetCommonHeaders(req);
  req.set(http::field::connection, "Upgrade");
  req.set(http::field::upgrade, protocol);
  RETURN_IF_ERROR(im.Connect(std::min<Duration>(timeout, std::chrono::seconds(10))));
  ASSIGN_OR_RETURN(HttpResponse answer, im.Once(req, timeout));
  Upgraded out;
  if (answer.status != 101 || !im.open()) {
    im.Reset();
    out.refused = std::move(answer);
    return out;
  }
  out.early = beast::buffers_to_string(im.buffer.data());
  im.buffer.consume(im.buffer.size());
  if (im.secure) {
    // TLS cannot be handed on as a socket: a bridge on a thread of its own copies between the
    // TLS connection and a socketpair, whose other end the caller gets. The thread takes this
    // client's io_context with it and ends when either side does.
    beast::get_lowest_layer(*im.secure).expires_never();
    auto fd = StartBridge(std::move(*im.secure), im.ssl_context);
    im.Reset();
    if (!fd) return Err(fd.error());
    im.ioc->restart();
    std::thread([ioc = std::move(im.ioc)] { ioc->run(); }).detach();
    im.ioc = std::make_shared<asio::io_context>();
    out.fd = *fd;
    return out;
  }
  beast::error_code ec;
  int fd = im.local ? im.local->socket().release(ec) : im.plain->socket().release(ec);
  im.Reset();
  if (ec) return Err(Unavailable("upgraded connection: " + ec.message()));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // asio left it non-blocking
  out.fd = fd;
  return out;
}

Result<HttpResponse> HttpClient::Request(std::string_view method, std::string_view target,
                                         std::string_view body, const Headers& headers,
                                         Duration timeout) {
  Impl& im = *impl_;
  http::request<http::string_body> req;
  req.method(http::string_to_verb(method));
  req.target(target);
  req.version(11);
  im.SetCommonHeaders(req);
  req.keep_alive(true);
  for (const auto& [k, v] : headers) req.set(k, v);
  if (!body.empty() || method == "POST") {
    // JSON unless the caller said otherwise (a YAML job file).
    if (req.find(http::field::content_type) == req.end())
      req.set(http::field::content_type, "application/json");
    req.body() = std::string(body);
    req.prepare_payload();
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (im.cancelled) return Err(Unavailable("request to " + im.Url() + " cancelled"));
    bool fresh = !im.open();
    if (fresh) RETURN_IF_ERROR(im.Connect(std::min<Duration>(timeout, std::chrono::seconds(10))));
    auto res = im.Once(req, timeout);
    if (res || fresh) return res;  // a reused connection may have been closed by the server
  }
  return Err(Unavailable("request failed"));
}

}  // namespace baton::net
