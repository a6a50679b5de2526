#include "async_link.h"

#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>
#include <vector>

#include "net/tls_stream.h"

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24  // linux/in.h, since Linux 4.2
#endif

namespace baton::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct PoolState {
  net::HttpUrl url;
  tcp::endpoint server;
  std::shared_ptr<net::SslContext> ssl;  // https:// only
  asio::io_context ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  int thread_count = 2;
  std::vector<std::thread> threads;
  std::atomic<bool> stopping{false};

  std::mutex mu;  // guards what follows
  std::condition_variable cv;
  int running = 0;  // threads in ioc.run()
  std::unordered_set<LinkState*> links;

  std::string Url() const {
    return std::string(url.tls ? "https://" : "http://") + url.host + ":" + url.port;
  }
};

// One link's connection and the request in flight. Everything runs on `strand`, so a link's
// callbacks never overlap though the pool has several threads.
struct LinkState {
  LinkState(PoolState& p, tcp::endpoint from, bool bind_source)
      : pool(p), strand(asio::make_strand(p.ioc)), timer(strand), source(from), bind(bind_source) {}

  PoolState& pool;
  asio::strand<asio::io_context::executor_type> strand;
  asio::steady_timer timer;  // After()
  tcp::endpoint source;
  bool bind = false;
  std::optional<beast::tcp_stream> plain;
  std::optional<net::TlsStream> secure;
  beast::flat_buffer buffer;

  http::request<http::string_body> req;
  std::optional<http::response_parser<http::string_body>> parser;
  Duration timeout{};
  bool fresh = false;    // the request went over a connection opened for it
  bool retried = false;  // it was sent again after a reused connection failed
  Link::Done done;

  bool open() const { return plain.has_value() || secure.has_value(); }
  beast::tcp_stream& Lowest() { return secure ? beast::get_lowest_layer(*secure) : *plain; }
  void Reset() {
    secure.reset();
    plain.reset();
  }
  // From Stop(): the operation in flight, if any, completes with an error.
  void Close() {
    timer.cancel();
    if (!open()) return;
    beast::error_code ec;
    Lowest().socket().close(ec);
  }
  std::string From() const { return bind ? " from " + source.address().to_string() : ""; }

  void Try();
  void Connect();
  void Send();
  // The streams are reset (destroyed) only here and in Connect, in handlers of their own (the
  // operations' handlers post them), never inside a stream's operation.
  void Failed(beast::error_code ec, bool connecting);
  void Answered();
  void Finish(Result<net::HttpResponse> result);
};

void LinkState::Try() {
  if (pool.stopping) return Finish(Err(Unavailable("request to " + pool.Url() + " cancelled")));
  fresh = !open();
  if (fresh) return Connect();
  Send();
}

void LinkState::Connect() {
  Reset();
  buffer.clear();
  if (pool.ssl) {
    secure.emplace(strand, *pool.ssl);
  } else {
    plain.emplace(strand);
  }
  tcp::socket& socket = Lowest().socket();
  beast::error_code ec;
  socket.open(pool.server.protocol(), ec);
  if (!ec && bind) {
    // The port is picked at connect, for the whole address pair, rather than at bind among the
    // ports no socket of any address holds: ten thousand agents would crowd them.
    int one = 1;
    ::setsockopt(socket.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    socket.bind(source, ec);
  }
  if (ec) {
    Reset();
    return Finish(Err(Unavailable("cannot open a connection" + From() + ": " + ec.message())));
  }
  Lowest().expires_after(std::min<Duration>(timeout, std::chrono::seconds(10)));
  Lowest().async_connect(pool.server, [this](beast::error_code ec) {
    if (ec) return asio::post(strand, [this, ec] { Failed(ec, true); });
    beast::error_code nd;
    Lowest().socket().set_option(tcp::no_delay(true), nd);
    if (!secure) return Send();
    if (Status st = net::ExpectServerName(*secure, pool.url.host); !st.ok()) {
      return asio::post(strand, [this, st] {
        Reset();
        Finish(Err(st));
      });
    }
    secure->async_handshake(asio::ssl::stream_base::client, [this](beast::error_code hec) {
      if (!hec) return Send();
      std::string why = net::HandshakeError(hec, *secure);
      asio::post(strand, [this, why] {
        Reset();
        Finish(Err(Unavailable("cannot connect to " + pool.Url() + From() + ": " + why)));
      });
    });
  });
}

void LinkState::Send() {
  Lowest().expires_after(timeout);
  parser.emplace();
  parser->body_limit(64 << 20);
  auto send = [this](auto& stream) {
    http::async_write(stream, req, [this, &stream](beast::error_code ec, size_t) {
      if (ec) return asio::post(strand, [this, ec] { Failed(ec, false); });
      http::async_read(stream, buffer, *parser, [this](beast::error_code rec, size_t) {
        if (rec) return asio::post(strand, [this, rec] { Failed(rec, false); });
        asio::post(strand, [this] { Answered(); });
      });
    });
  };
  if (secure) {
    send(*secure);
  } else {
    send(*plain);
  }
}

void LinkState::Failed(beast::error_code ec, bool connecting) {
  Reset();
  if (connecting) {
    return Finish(
        Err(Unavailable("cannot connect to " + pool.Url() + From() + ": " + ec.message())));
  }
  if (!fresh && !retried && !pool.stopping) {
    retried = true;  // a reused connection may have been closed by the server: once more
    return Try();
  }
  Finish(Err(Unavailable("request to " + pool.Url() + " failed: " + ec.message())));
}

void LinkState::Answered() {
  auto res = parser->release();
  parser.reset();
  if (!res.keep_alive()) Reset();
  Finish(net::HttpResponse{.status = static_cast<int>(res.result_int()),
                           .body = std::move(res.body()),
                           .standby = res["X-Baton-Role"] == "standby",
                           .leader = std::string(res["X-Baton-Leader"])});
}

void LinkState::Finish(Result<net::HttpResponse> result) {
  // `done` may start the next request on this link at once.
  Link::Done d = std::move(done);
  done = nullptr;
  if (d) d(std::move(result));
}

// ---- Link ----

Link::Link(std::unique_ptr<LinkState> state) : state_(std::move(state)) {}

Link::~Link() {
  std::lock_guard lock(state_->pool.mu);
  state_->pool.links.erase(state_.get());
}

void Link::Request(std::string_view method, std::string target, std::string body, std::string token,
                   Duration timeout, Done done) {
  LinkState& s = *state_;
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, s.pool.url.host + ":" + s.pool.url.port);
  req.set(http::field::user_agent, "baton");
  if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
  req.keep_alive(true);
  if (!body.empty() || method == "POST") {
    req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
    req.prepare_payload();
  }
  asio::dispatch(s.strand, [&s, req = std::move(req), timeout, done = std::move(done)]() mutable {
    s.req = std::move(req);
    s.timeout = timeout;
    s.done = std::move(done);
    s.retried = false;
    s.Try();
  });
}

void Link::After(Duration d, std::function<void()> f) {
  LinkState& s = *state_;
  asio::dispatch(s.strand, [&s, d, f = std::move(f)]() mutable {
    if (s.pool.stopping) return;
    s.timer.expires_after(d);
    s.timer.async_wait([&s, f = std::move(f)](beast::error_code ec) {
      if (!ec && !s.pool.stopping) f();
    });
  });
}

// ---- LinkPool ----

Result<std::unique_ptr<LinkPool>> LinkPool::Create(std::string_view server,
                                                   const net::TlsClientOptions& tls, int threads) {
  auto s = std::make_unique<PoolState>();
  ASSIGN_OR_RETURN(s->url, net::ParseHttpUrl(server));
  if (s->url.tls) {
    ASSIGN_OR_RETURN(s->ssl, net::MakeClientContext(tls));
    // Idle connections give their read and write buffers back: most links wait in a long poll.
    SSL_CTX_set_mode(s->ssl->native_handle(), SSL_MODE_RELEASE_BUFFERS);
  }
  beast::error_code ec;
  tcp::resolver resolver(s->ioc);
  auto found = resolver.resolve(s->url.host, s->url.port, ec);
  if (ec || found.empty())
    return Err(Unavailable("cannot resolve " + s->url.host + ": " + ec.message()));
  // IPv4 first: loopback's 127.0.0.0/8 gives each agent an address of its own.
  s->server = found.begin()->endpoint();
  for (const auto& e : found) {
    if (e.endpoint().address().is_v4()) {
      s->server = e.endpoint();
      break;
    }
  }
  s->thread_count = std::max(1, threads);
  return std::unique_ptr<LinkPool>(new LinkPool(std::move(s)));
}

LinkPool::LinkPool(std::unique_ptr<PoolState> state) : state_(std::move(state)) {}

LinkPool::~LinkPool() { Stop(); }

bool LinkPool::loopback() const {
  const auto& a = state_->server.address();
  return a.is_v4() && a.to_v4().is_loopback();
}

Result<std::unique_ptr<Link>> LinkPool::NewLink(const std::string& source) {
  tcp::endpoint from;
  if (!source.empty()) {
    beast::error_code ec;
    auto address = asio::ip::make_address_v4(source, ec);
    if (ec) return Err(InvalidArgument("source address " + source + ": " + ec.message()));
    from = tcp::endpoint(address, 0);
  }
  auto link = std::make_unique<LinkState>(*state_, from, !source.empty());
  std::lock_guard lock(state_->mu);
  state_->links.insert(link.get());
  return std::unique_ptr<Link>(new Link(std::move(link)));
}

void LinkPool::Start() {
  PoolState& s = *state_;
  s.work.emplace(s.ioc.get_executor());
  std::lock_guard lock(s.mu);
  for (int i = 0; i < s.thread_count; ++i) {
    ++s.running;
    s.threads.emplace_back([&s] {
      s.ioc.run();
      std::lock_guard done(s.mu);
      --s.running;
      s.cv.notify_all();
    });
  }
}

void LinkPool::Stop() {
  PoolState& s = *state_;
  if (s.stopping.exchange(true)) return;
  std::unique_lock lock(s.mu);
  for (LinkState* link : s.links) asio::post(link->strand, [link] { link->Close(); });
  s.work.reset();
  // Each link's operation ends with an error, and its callback starts nothing more; a callback
  // still busy after this is cut short (dropped with the io_context).
  s.cv.wait_for(lock, std::chrono::seconds(5), [&] { return s.running == 0; });
  lock.unlock();
  s.ioc.stop();
  for (auto& t : s.threads) t.join();
  s.threads.clear();
}

}  // namespace baton::bench
