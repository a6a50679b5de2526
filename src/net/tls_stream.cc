#include "net/tls_stream.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace baton::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;

namespace {

bool IsIp(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// Both copy loops of a tunnel over TLS. When the plain side ends, the TLS side is shut for
// sending (its peer sees the end) and closed once its peer has closed too, or after 5 s; when
// the TLS side ends, everything is closed.
class Bridge : public std::enable_shared_from_this<Bridge> {
 public:
  Bridge(TlsStream tls, asio::local::stream_protocol::socket local, std::shared_ptr<void> keep)
      : keep_(std::move(keep)),
        tls_(std::move(tls)),
        local_(std::move(local)),
        timer_(local_.get_executor()) {}

  void Start() {
    beast::get_lowest_layer(tls_).expires_never();
    FromTls();
    FromLocal();
  }

 private:
  void FromTls() {
    tls_.async_read_some(asio::buffer(in_),
                         [self = shared_from_this()](beast::error_code ec, size_t n) {
                           if (ec) return self->CloseAll();
                           asio::async_write(self->local_, asio::buffer(self->in_.data(), n),
                                             [self](beast::error_code ec2, size_t) {
                                               if (ec2) return self->CloseAll();
                                               self->FromTls();
                                             });
                         });
  }

  void FromLocal() {
    local_.async_read_some(asio::buffer(out_),
                           [self = shared_from_this()](beast::error_code ec, size_t n) {
                             if (ec) return self->LocalEnded();
                             asio::async_write(self->tls_, asio::buffer(self->out_.data(), n),
                                               [self](beast::error_code ec2, size_t) {
                                                 if (ec2) return self->CloseAll();
                                                 self->FromLocal();
                                               });
                           });
  }

  void LocalEnded() {
    beast::error_code ec;
    local_.close(ec);
    auto& socket = beast::get_lowest_layer(tls_).socket();
    socket.shutdown(asio::socket_base::shutdown_send, ec);
    timer_.expires_after(std::chrono::seconds(5));
    timer_.async_wait([self = shared_from_this()](beast::error_code) { self->CloseAll(); });
  }

  void CloseAll() {
    beast::error_code ec;
    timer_.cancel();
    local_.close(ec);
    beast::get_lowest_layer(tls_).socket().close(ec);
  }

  std::shared_ptr<void> keep_;  // declared first: outlives the stream
  TlsStream tls_;
  asio::local::stream_protocol::socket local_;
  asio::steady_timer timer_;
  std::array<char, 16 * 1024> in_, out_;
};

}  // namespace

Result<std::shared_ptr<SslContext>> MakeServerContext(const TlsServerFiles& files) {
  RETURN_IF_ERROR(CheckServerFiles(files));
  auto ctx = std::make_shared<SslContext>(SslContext::tls_server);
  beast::error_code ec;
  ctx->set_options(SslContext::default_workarounds | SslContext::no_sslv2 | SslContext::no_sslv3 |
                       SslContext::no_tlsv1 | SslContext::no_tlsv1_1 | SslContext::single_dh_use,
                   ec);
  if (!ec) ctx->use_certificate_chain_file(files.cert_file, ec);
  if (!ec) ctx->use_private_key_file(files.key_file, SslContext::pem, ec);
  if (ec) return Err(InvalidArgument("TLS: " + files.cert_file + ": " + ec.message()));
  return ctx;
}

Result<std::shared_ptr<SslContext>> MakeClientContext(const TlsClientOptions& options) {
  InitTls();
  auto ctx = std::make_shared<SslContext>(SslContext::tls_client);
  beast::error_code ec;
  ctx->set_options(SslContext::default_workarounds | SslContext::no_sslv2 | SslContext::no_sslv3 |
                       SslContext::no_tlsv1 | SslContext::no_tlsv1_1,
                   ec);
  ctx->set_verify_mode(ssl::verify_peer, ec);
  if (!options.ca_file.empty()) {
    ctx->load_verify_file(options.ca_file, ec);
    if (ec) {
      return Err(InvalidArgument("--tls-ca " + options.ca_file +
                                 ": cannot be read as PEM certificates (" + ec.message() + ")"));
    }
    return ctx;
  }
  // The system's CAs by their hashed directory (/etc/ssl/certs, or SSL_CERT_DIR): looked up
  // only when a certificate names an issuer. Loading the whole bundle file instead costs every
  // command some 20 ms (measured: docs/performance.md, "TLS"), so SSL_CERT_FILE is read only
  // where no such directory exists.
  const char* dir = std::getenv(X509_get_default_cert_dir_env());
  std::string cert_dir = dir != nullptr ? dir : X509_get_default_cert_dir();
  std::error_code dec;
  if (std::filesystem::is_directory(cert_dir, dec)) {
    ctx->add_verify_path(cert_dir, ec);
  } else {
    const char* file = std::getenv(X509_get_default_cert_file_env());
    ctx->load_verify_file(file != nullptr ? file : X509_get_default_cert_file(), ec);
  }
  std::error_code fec;
  if (!options.local_ca.empty() && std::filesystem::exists(options.local_ca, fec)) {
    ctx->load_verify_file(options.local_ca, ec);  // unreadable (another user's): system CAs only
  }
  return ctx;
}

Status ExpectServerName(TlsStream& stream, const std::string& host) {
  SSL* ssl = stream.native_handle();
  if (IsIp(host)) {
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) != 1)
      return InvalidArgument("TLS: bad address " + host);
    return Status::Ok();
  }
  if (SSL_set_tlsext_host_name(ssl, host.c_str()) != 1 || SSL_set1_host(ssl, host.c_str()) != 1)
    return InvalidArgument("TLS: bad host name " + host);
  return Status::Ok();
}

std::string HandshakeError(const boost::system::error_code& ec, TlsStream& stream) {
  long verify = SSL_get_verify_result(stream.native_handle());
  if (verify != X509_V_OK) {
    std::string why = X509_verify_cert_error_string(verify);
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
      return "the server's certificate is not for this address (" + why +
             "): connect by a name it carries, or give the server a certificate for it";
    }
    return "the server's certificate is not trusted (" + why +
           "): pass --tls-ca FILE (or set BATON_TLS_CA) with its CA, e.g. the server's "
           "DATA/tls/ca.crt";
  }
  if (ec == asio::ssl::error::stream_truncated || ec == asio::error::eof)
    return "the server closed the connection during the TLS handshake (" + ec.message() + ")";
  return "TLS handshake failed: " + ec.message();
}

Result<int> StartBridge(TlsStream tls, std::shared_ptr<void> keep) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    return Err(Unavailable(std::string("tunnel: no socketpair: ") + std::strerror(errno)));
  asio::local::stream_protocol::socket local(tls.get_executor());
  beast::error_code ec;
  local.assign(asio::local::stream_protocol(), pair[0], ec);
  if (ec) {
    ::close(pair[0]);
    ::close(pair[1]);
    return Err(Unavailable("tunnel: " + ec.message()));
  }
  std::make_shared<Bridge>(std::move(tls), std::move(local), std::move(keep))->Start();
  return pair[1];
}

}  // namespace baton::net
