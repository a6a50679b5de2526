#include "api/http_server.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detect_ssl.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

#include "codec/json_codec.h"
#include "net/tls_stream.h"

namespace baton::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using local = asio::local::stream_protocol;
// Plain HTTP on the local Unix socket (HttpServerOptions::unix_socket).
using LocalStream = beast::basic_stream<local>;

namespace {

Response ErrorResponse(int status, Status st) {
  return Response{.status = status, .body = codec::EncodeError(st)};
}

// One connection's requests, over `Stream`: beast::tcp_stream (plain HTTP), LocalStream (plain
// HTTP on the Unix socket) or net::TlsStream.
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kIsTls = std::is_same_v<Stream, net::TlsStream>;

  // `buffer`: what was read already (the bytes that told TLS from plain HTTP). `refuse`: the
  // reason every request is answered 403 (plain HTTP from another machine), or "".
  // `ticket`: its place among the TCP connections (none on the Unix socket).
  Session(Stream stream, beast::flat_buffer buffer, const HttpServerOptions& options,
          const Handler& handler, ConnectionTicket ticket, std::string refuse = {})
      : stream_(std::move(stream)),
        timer_(stream_.get_executor()),
        buffer_(std::move(buffer)),
        refuse_(std::move(refuse)),
        ticket_(std::move(ticket)),
        options_(options),
        handler_(handler) {}

  void Run() {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] { self->Start(); });
  }

 private:
  using std::enable_shared_from_this<Session<Stream>>::shared_from_this;
  using std::enable_shared_from_this<Session<Stream>>::weak_from_this;

  auto& Lowest() { return beast::get_lowest_layer(stream_); }

  void Start() {
    // Chosen for room (Connections): closed on its own strand.
    ticket_.SetCloser([weak = weak_from_this(), ex = stream_.get_executor()] {
      asio::post(ex, [weak] {
        if (auto self = weak.lock()) self->Close();
      });
    });
    if constexpr (kIsTls) {
      Lowest().expires_after(std::chrono::seconds(30));
      // (The default argument: Boost 1.81 checks a buffered handshake's handler against the
      // unbuffered signature too.)
      stream_.async_handshake(asio::ssl::stream_base::server, buffer_.data(),
                              [self = shared_from_this()](beast::error_code ec, size_t used = 0) {
                                if (ec) return self->Close();
                                self->buffer_.consume(used);
                                self->Read();
                              });
    } else {
      Read();
    }
  }

  // Deadlines: an idle keep-alive connection may wait 300 s for its next request, but a
  // request's head must arrive whole within kHeadDeadline of its first bytes (a client that
  // sends a byte and stalls holds a connection seconds, not minutes); its body then has 300 s.
  static constexpr auto kHeadDeadline = std::chrono::seconds(10);

  void Read() {
    parser_.emplace();
    parser_->body_limit(options_.max_body_bytes);
    body_limit_ = options_.max_body_bytes;
    parser_->header_limit(static_cast<uint32_t>(options_.max_header_bytes));
    ticket_.SetIdle(true);                              // until a request's head is in
    if (buffer_.size() > 0) return ReadHead();          // the next request came with the last
    Lowest().expires_after(std::chrono::seconds(300));  // idle keep-alive connections
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) return self->OnRead(ec);
                              self->buffer_.commit(n);
                              self->ReadHead();
                            });
  }

  // The head first, under the largest limit (Beast checks a Content-Length against the limit
  // as the head ends); then the route's own limit for the body.
  void ReadHead() {
    Lowest().expires_after(kHeadDeadline);
    size_t largest = options_.max_body_bytes;
    for (const auto& [route, limit] : options_.large_bodies) largest = std::max(largest, limit);
    parser_->body_limit(largest);
    http::async_read_header(
        stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
          if (ec) return self->OnRead(ec);
          self->ticket_.SetIdle(false);
          if (!self->LimitBody()) return self->OnRead(http::error::body_limit);
          self->Lowest().expires_after(std::chrono::seconds(300));
          http::async_read(self->stream_, self->buffer_, *self->parser_,
                           [self](beast::error_code ec2, size_t) { self->OnRead(ec2); });
        });
  }

  // Sets the body limit of the request whose head was read: its route's, or the default;
  // false when its Content-Length is over it already.
  bool LimitBody() {
    body_limit_ = RouteLimit();
    if (parser_->content_length() && *parser_->content_length() > body_limit_) return false;
    parser_->body_limit(body_limit_);
    return true;
  }

  // The body limit of the route whose head was read (the default before a head).
  size_t RouteLimit() {
    const auto& head = parser_->get();
    std::string_view target(head.target().data(), head.target().size());
    target = target.substr(0, target.find('?'));
    std::string key = std::string(head.method_string()) + " " + std::string(target);
    size_t body_limit = options_.max_body_bytes;
    for (const auto& [route, limit] : options_.large_bodies) {
      if (route == key) body_limit = limit;
    }
    return body_limit;
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
        ec == asio::error::eof) {
      Close();
      return;
    }
    if (ec == http::error::body_limit) {
      // The route's own limit, also when the head's Content-Length was over every limit.
      body_limit_ = RouteLimit();
      std::string limit = std::to_string(body_limit_) + " bytes";
      if (body_limit_ % (1 << 20) == 0) limit = std::to_string(body_limit_ >> 20) + " MiB";
      Write(ErrorResponse(413, TooLarge("body: larger than " + limit)), false, 11);
      return;
    }
    if (ec == http::error::header_limit) {
      Write(ErrorResponse(431, TooLarge("headers: larger than " +
                                        std::to_string(options_.max_header_bytes) + " bytes")),
            false, 11);
      return;
    }
    if (ec) {
      Write(ErrorResponse(400, InvalidArgument("request: " + ec.message())), false, 11);
      return;
    }
    http::request<http::string_body> req = parser_->release();
    bool keep_alive = req.keep_alive();
    unsigned version = req.version();
    if (!refuse_.empty()) {
      Write(ErrorResponse(403, PermissionDenied(refuse_)), false, version);
      return;
    }
    Request r;
    r.method = std::string(req.method_string());
    auto target =
        boost::urls::parse_origin_form(std::string_view(req.target().data(), req.target().size()));
    if (!target) {
      Write(ErrorResponse(400, InvalidArgument("request: bad target")), false, version);
      return;
    }
    r.path = std::string(target->path());
    r.target = std::string(req.target());
    for (std::string segment : target->segments()) {
      if (!segment.empty()) r.segments.push_back(std::move(segment));  // "/v1//jobs/" as before
    }
    for (auto param : target->params()) r.query[std::string(param.key)] = std::string(param.value);
    r.body = std::move(req.body());
    if (auto it = req.find(http::field::authorization); it != req.end())
      r.authorization = std::string(it->value());
    if (auto it = req.find("Idempotency-Key"); it != req.end())
      r.idempotency_key = std::string(it->value());
    if (auto it = req.find(http::field::accept); it != req.end())
      r.accept = std::string(it->value());
    if (auto it = req.find("Last-Event-ID"); it != req.end())
      r.last_event_id = std::string(it->value());
    if (auto it = req.find(http::field::content_type); it != req.end())
      r.content_type = std::string(it->value());
    if (auto it = req.find(http::field::accept_encoding); it != req.end())
      r.accept_encoding = std::string(it->value());
    if (auto it = req.find(http::field::if_none_match); it != req.end())
      r.if_none_match = std::string(it->value());
    if (auto it = req.find(http::field::upgrade);
        it != req.end() && http::token_list(req[http::field::connection]).exists("upgrade"))
      r.upgrade = std::string(it->value());
    Lowest().expires_never();  // the answer may take a while (long polls)
    auto self = shared_from_this();
    handler_(std::move(r), [self, keep_alive, version](Response res) {
      asio::post(self->stream_.get_executor(),
                 [self, res = std::move(res), keep_alive, version]() mutable {
                   self->Write(std::move(res), keep_alive, version);
                 });
    });
  }

  void Write(Response res, bool keep_alive, unsigned version) {
    if (res.stream) return StartStream(std::move(res), version);
    if (res.upgrade && res.status == 101) return Upgrade(std::move(res), version);
    auto msg = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(res.status), version);
    msg->set(http::field::server, "baton");
    msg->set(http::field::content_type, res.content_type);
    for (const auto& [k, v] : res.headers) msg->set(k, v);
    msg->keep_alive(keep_alive);
    msg->body() = std::move(res.body);
    msg->prepare_payload();
    Lowest().expires_after(std::chrono::seconds(60));
    http::async_write(stream_, *msg,
                      [self = shared_from_this(), msg, keep_alive](beast::error_code ec, size_t) {
                        if (ec) {
                          self->Close();
                        } else if (!keep_alive) {
                          self->LingeringClose();
                        } else {
                          self->Read();
                        }
                      });
  }

  // A streamed body: the head, then one chunk per piece the response's `stream` gives, until it
  // says the end or the client goes (a read that watches the socket notices a close at once,
  // even while nothing is being written).
  void StartStream(Response res, unsigned version) {
    auto head = std::make_shared<http::response<http::empty_body>>(
        static_cast<http::status>(res.status), version);
    head->set(http::field::server, "baton");
    head->set(http::field::content_type, res.content_type);
    head->set(http::field::cache_control, "no-cache");
    for (const auto& [k, v] : res.headers) head->set(k, v);
    head->keep_alive(false);
    // HTTP/1.0 has no chunks: the body is the bytes until the connection closes.
    chunked_ = version >= 11;
    head->chunked(chunked_);
    pull_ = std::move(res.stream);
    auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*head);
    Lowest().expires_after(std::chrono::seconds(60));
    http::async_write_header(
        stream_, *serializer,
        [self = shared_from_this(), head, serializer](beast::error_code ec, size_t) {
          if (ec) return self->Gone();
          self->WatchForClose();
          self->PullNext();
        });
  }

  // 101 Switching Protocols, then the socket and what was read past the request go to the
  // response's `upgrade`; this session ends without closing the connection.
  void Upgrade(Response res, unsigned version) {
    auto head = std::make_shared<http::response<http::empty_body>>(
        http::status::switching_protocols, version);
    head->set(http::field::server, "baton");
    for (const auto& [k, v] : res.headers) head->set(k, v);
    head->set(http::field::connection, "Upgrade");
    Lowest().expires_after(std::chrono::seconds(60));
    http::async_write(stream_, *head,
                      [self = shared_from_this(), head, take = std::move(res.upgrade)](
                          beast::error_code ec, size_t) {
                        if (ec) return self->Close();
                        self->Lowest().expires_never();
                        std::string early = beast::buffers_to_string(self->buffer_.data());
                        self->buffer_.consume(self->buffer_.size());
                        int fd = -1;
                        if constexpr (kIsTls) {
                          // TLS is not a socket to hand on: a bridge carries it to one.
                          auto bridged = net::StartBridge(std::move(self->stream_));
                          if (!bridged) return;
                          fd = *bridged;
                        } else {
                          beast::error_code rec;
                          fd = self->stream_.socket().release(rec);
                          if (rec) return self->Close();
                        }
                        take(fd, std::move(early));
                      });
  }

  void WatchForClose() {
    auto on_read = [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->Gone();
      self->WatchForClose();  // a client may send more; it is not read as a request
    };
    if constexpr (kIsTls) {
      stream_.async_read_some(asio::buffer(scratch_), std::move(on_read));
    } else {
      Lowest().socket().async_read_some(asio::buffer(scratch_), std::move(on_read));
    }
  }

  void PullNext() {
    if (gone_) return;
    Lowest().expires_never();
    pull_([self = shared_from_this()](Piece piece) {
      asio::post(self->stream_.get_executor(),
                 [self, piece = std::move(piece)]() mutable { self->OnPiece(std::move(piece)); });
    });
  }

  void OnPiece(Piece piece) {
    if (gone_) return;
    if (!piece.data.empty()) {
      auto data = std::make_shared<std::string>(std::move(piece.data));
      Lowest().expires_after(std::chrono::seconds(60));  // a client that stops reading is dropped
      auto done = [self = shared_from_this(), data, end = piece.end](beast::error_code ec, size_t) {
        if (ec) return self->Gone();
        if (end) return self->EndStream();
        self->PullNext();
      };
      if (chunked_) {
        asio::async_write(stream_, http::make_chunk(asio::buffer(*data)), std::move(done));
      } else {
        asio::async_write(stream_, asio::buffer(*data), std::move(done));
      }
      return;
    }
    if (piece.end) return EndStream();
    // The wait ends when the timer expires or is cancelled by the piece's wake-up: either way
    // the handler runs once and asks again. A wake-up for an earlier wait finds another id.
    uint64_t wait = ++wait_id_;
    timer_.expires_after(piece.wait);
    timer_.async_wait([self = shared_from_this()](beast::error_code) {
      if (!self->gone_) self->PullNext();
    });
    if (piece.on_wake) {
      // Holds no reference to the session: a stream that never hears news does not keep it.
      piece.on_wake([weak = weak_from_this(), executor = stream_.get_executor(), wait] {
        asio::post(executor, [weak, wait] {
          auto self = weak.lock();
          if (self && !self->gone_ && self->wait_id_ == wait) self->timer_.cancel();
        });
      });
    }
  }

  void EndStream() {
    if (!chunked_) return Gone();
    Lowest().expires_after(std::chrono::seconds(60));
    asio::async_write(stream_, http::make_chunk_last(),
                      [self = shared_from_this()](beast::error_code, size_t) { self->Gone(); });
  }

  void Gone() {
    gone_ = true;
    pull_ = nullptr;
    timer_.cancel();
    Close();
  }

  // Closing a socket with unread input makes the kernel send a reset, which can destroy the
  // response the client has not read yet (a 413 for a body still being sent, say). So: stop
  // sending, then read and discard what the client still sends, for a bounded time and size.
  void LingeringClose() {
    if constexpr (kIsTls) {
      // close_notify, and the client's in return (or 5 s), then the socket.
      Lowest().expires_after(std::chrono::seconds(5));
      stream_.async_shutdown([self = shared_from_this()](beast::error_code) { self->Close(); });
      return;
    }
    beast::error_code ec;
    Lowest().socket().shutdown(asio::socket_base::shutdown_send, ec);
    if (ec) {
      Close();
      return;
    }
    Lowest().expires_after(std::chrono::seconds(5));
    Discard();
  }

  void Discard() {
    if (discarded_ > (int64_t{64} << 20)) {
      Close();
      return;
    }
    stream_.async_read_some(asio::buffer(scratch_),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) {
                                self->Close();
                                return;
                              }
                              self->discarded_ += static_cast<int64_t>(n);
                              self->Discard();
                            });
  }

  void Close() {
    beast::error_code ec;
    Lowest().socket().shutdown(asio::socket_base::shutdown_send, ec);
    Lowest().socket().close(ec);
  }

  Stream stream_;
  asio::steady_timer timer_;
  api::Pull pull_;
  bool chunked_ = true;
  bool gone_ = false;
  uint64_t wait_id_ = 0;  // the stream's current wait (OnPiece)
  beast::flat_buffer buffer_;
  std::string refuse_;
  ConnectionTicket ticket_;
  std::array<char, 64 * 1024> scratch_;
  int64_t discarded_ = 0;
  size_t body_limit_ = 0;  // the current request's
  std::optional<http::request_parser<http::string_body>> parser_;
  const HttpServerOptions& options_;
  const Handler& handler_;
};

// A new connection to a server with TLS: its first bytes say whether it speaks TLS (a
// ClientHello) or plain HTTP, which only loopback peers may (or any, with `plain_from_anywhere`).
class Detector : public std::enable_shared_from_this<Detector> {
 public:
  Detector(tcp::socket socket, net::SslContext& ssl, const HttpServerOptions& options,
           const Handler& handler, ConnectionTicket ticket)
      : stream_(std::move(socket)),
        ssl_(ssl),
        options_(options),
        handler_(handler),
        ticket_(std::move(ticket)) {}

  void Run() {
    // Runs on the connection's strand, as OnDetect does: after the hand-off to a Session
    // (which sets its own closer), nothing is left here to close.
    ticket_.SetCloser([weak = weak_from_this(), ex = stream_.get_executor()] {
      asio::post(ex, [weak] {
        auto self = weak.lock();
        if (!self || self->handed_off_) return;
        beast::error_code ec;
        self->stream_.socket().close(ec);
      });
    });
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      // A new connection's first bytes (a TLS ClientHello or a plain request's head): seconds.
      self->stream_.expires_after(std::chrono::seconds(10));
      beast::async_detect_ssl(self->stream_, self->buffer_,
                              [self](beast::error_code ec, bool tls) { self->OnDetect(ec, tls); });
    });
  }

 private:
  void OnDetect(beast::error_code ec, bool tls) {
    if (ec) {
      stream_.socket().close(ec);
      return;
    }
    handed_off_ = true;
    if (tls) {
      std::make_shared<Session<net::TlsStream>>(net::TlsStream(std::move(stream_), ssl_),
                                                std::move(buffer_), options_, handler_,
                                                std::move(ticket_))
          ->Run();
      return;
    }
    std::string refuse;
    beast::error_code pec;
    auto peer = stream_.socket().remote_endpoint(pec);
    if (!options_.plain_from_anywhere &&
        (pec || !net::IsLoopbackAddress(peer.address().to_string()))) {
      refuse =
          "this server takes plain HTTP only from its own machine: use https:// (its CA "
          "is DATA/tls/ca.crt; pass it with --tls-ca), or start it with --insecure-http";
    }
    std::make_shared<Session<beast::tcp_stream>>(std::move(stream_), std::move(buffer_), options_,
                                                 handler_, std::move(ticket_), std::move(refuse))
        ->Run();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  net::SslContext& ssl_;
  const HttpServerOptions& options_;
  const Handler& handler_;
  ConnectionTicket ticket_;
  bool handed_off_ = false;  // the stream went to a Session (on the strand)
};

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  Handler handler;
  std::shared_ptr<net::SslContext> ssl;    // with TLS
  std::optional<Connections> connections;  // outlives the sessions the io_context holds
  asio::io_context ioc;
  std::optional<asio::steady_timer> accept_pause;
  std::optional<tcp::acceptor> acceptor;
  std::optional<local::acceptor> local_acceptor;  // with options.unix_socket
  Status unix_socket_status;
  std::vector<std::thread> threads;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;

  void Accept() {
    acceptor->async_accept(asio::make_strand(ioc),
                           [this](beast::error_code ec, tcp::socket socket) {
                             if (ec == asio::error::operation_aborted) return;
                             if (ec) {
                               // Out of descriptors (EMFILE) or memory: try again in a moment, not
                               // at once for ever on one core.
                               accept_pause->expires_after(std::chrono::milliseconds(100));
                               accept_pause->async_wait([this](beast::error_code wec) {
                                 if (wec != asio::error::operation_aborted) Accept();
                               });
                               return;
                             }
                             Take(std::move(socket));
                             Accept();
                           });
  }

  // A new TCP connection: its place under the caps, or closed at once.
  void Take(tcp::socket socket) {
    beast::error_code ec;
    auto peer = socket.remote_endpoint(ec);
    uint64_t id = connections->Open(ec ? std::string("?") : peer.address().to_string());
    if (id == 0) {
      socket.close(ec);  // at a cap, with none idle to close for room
      return;
    }
    ConnectionTicket ticket(&*connections, id);
    socket.set_option(tcp::no_delay(true), ec);
    if (ssl) {
      std::make_shared<Detector>(std::move(socket), *ssl, options, handler, std::move(ticket))
          ->Run();
    } else {
      std::make_shared<Session<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)),
                                                   beast::flat_buffer(), options, handler,
                                                   std::move(ticket))
          ->Run();
    }
  }

  void AcceptLocal() {
    local_acceptor->async_accept(asio::make_strand(ioc), [this](beast::error_code ec,
                                                                local::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        std::make_shared<Session<LocalStream>>(LocalStream(std::move(socket)), beast::flat_buffer(),
                                               options, handler, ConnectionTicket())
            ->Run();
      }
      AcceptLocal();
    });
  }

  // Binds options.unix_socket, readable and writable by this user only; a socket left there
  // by a server that is gone is replaced (the data directory's lock says none is running).
  Status ListenLocal() {
    const std::string& path = options.unix_socket;
    if (path.size() >= sizeof(sockaddr_un::sun_path)) {
      return InvalidArgument("unix socket: " + path + " is longer than " +
                             std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes");
    }
    std::error_code fec;
    if (std::filesystem::is_socket(std::filesystem::symlink_status(path, fec)))
      std::filesystem::remove(path, fec);
    beast::error_code ec;
    local_acceptor.emplace(ioc);
    local_acceptor->open(local(), ec);
    // (Requests on it need a token as on the TCP port; the mode only keeps others out.)
    if (!ec) local_acceptor->bind(local::endpoint(path), ec);
    if (!ec && ::chmod(path.c_str(), 0600) != 0) ec.assign(errno, beast::system_category());
    if (!ec) local_acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      local_acceptor.reset();
      return Unavailable("unix socket: cannot listen on " + path + ": " + ec.message());
    }
    AcceptLocal();
    return Status::Ok();
  }
};

HttpServer::HttpServer(HttpServerOptions options, Handler handler)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->handler = std::move(handler);
}

HttpServer::~HttpServer() { Stop(); }

Result<uint16_t> HttpServer::Start() {
  Impl& im = *impl_;
  if (!im.options.tls.cert_file.empty()) {
    ASSIGN_OR_RETURN(im.ssl, net::MakeServerContext(im.options.tls));
  }
  beast::error_code ec;
  auto address = asio::ip::make_address(im.options.host, ec);
  if (ec) return Err(InvalidArgument("listen: \"" + im.options.host + "\" is not an IP address"));
  tcp::endpoint endpoint(address, im.options.port);
  im.acceptor.emplace(im.ioc);
  im.acceptor->open(endpoint.protocol(), ec);
  if (!ec) im.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) im.acceptor->bind(endpoint, ec);
  if (!ec) im.acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Err(Unavailable("listen: cannot listen on " + im.options.host + ":" +
                           std::to_string(im.options.port) + ": " + ec.message()));
  }
  uint16_t port = im.acceptor->local_endpoint().port();
  ConnectionCaps caps = im.options.connections;
  if (caps.total == 0) {
    rlimit nofile{};
    caps = CapsFromLimit(getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY
                             ? nofile.rlim_cur
                             : 1024);
  }
  im.connections.emplace(caps);
  im.accept_pause.emplace(im.ioc);
  if (!im.options.unix_socket.empty()) {
    // Not fatal: commands on this machine then use the URL (a file system without sockets).
    im.unix_socket_status = im.ListenLocal();
  }
  im.work.emplace(im.ioc.get_executor());
  im.Accept();
  for (int i = 0; i < std::max(1, im.options.threads); ++i) {
    im.threads.emplace_back([&im] { im.ioc.run(); });
  }
  return port;
}

void HttpServer::Stop() {
  Impl& im = *impl_;
  if (im.threads.empty()) return;
  asio::post(im.ioc, [&im] {
    beast::error_code ec;
    if (im.acceptor) im.acceptor->close(ec);
    if (im.local_acceptor) im.local_acceptor->close(ec);
    if (im.accept_pause) im.accept_pause->cancel();
  });
  im.work.reset();
  im.ioc.stop();
  for (auto& t : im.threads) t.join();
  im.threads.clear();
  if (im.local_acceptor) {
    std::error_code ec;
    std::filesystem::remove(im.options.unix_socket, ec);
  }
}

void HttpServer::Post(std::function<void()> fn) { asio::post(impl_->ioc, std::move(fn)); }

Status HttpServer::unix_socket_status() const { return impl_->unix_socket_status; }

Connections::Counts HttpServer::connection_counts() const {
  return impl_->connections ? impl_->connections->counts() : Connections::Counts{};
}

}  // namespace baton::api
