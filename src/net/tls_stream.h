// The adapters' side of TLS (included only by .cc files that already use Beast: the HTTP server
// and the HTTP client): SSL contexts for a server and a client, and the bridge that lets an
// upgraded connection (a tunnel) over TLS be handed on as a plain file descriptor.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <memory>
#include <string>

#include "core/status.h"
#include "net/tls.h"

namespace baton::net {

using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;
using SslContext = boost::asio::ssl::context;

// TLS 1.2 and 1.3 with `files`' chain and key.
Result<std::shared_ptr<SslContext>> MakeServerContext(const TlsServerFiles& files);
// Verifies servers against what `options` trusts.
Result<std::shared_ptr<SslContext>> MakeClientContext(const TlsClientOptions& options);

// Before the handshake of a client stream: the name sent (SNI, for a host name) and the name the
// server's certificate must carry (a host name or an IP address).
Status ExpectServerName(TlsStream& stream, const std::string& host);

// A handshake's failure in words a user can act on (an untrusted certificate says which flag
// helps).
std::string HandshakeError(const boost::system::error_code& ec, TlsStream& stream);

// Copies the bytes of `tls` (after its handshake and any HTTP exchange) to and from a new
// socketpair on `tls`'s executor, until either side ends; returns the pair's other end, which
// the caller owns (blocking mode). Someone must keep running the executor. `keep` (the SSL
// context, say) is held until the bridge ends.
Result<int> StartBridge(TlsStream tls, std::shared_ptr<void> keep = nullptr);

}  // namespace baton::net
