// TLS for the API and the agent link (OpenSSL, through Boost.Asio's ssl in the adapters):
// what a client trusts, the files a server serves with, and the private certificate authority
// `baton up` and `baton server` make in their data directory when given no certificate.
// Light on purpose: OpenSSL and Asio stay in the .cc files (net/tls_stream.h is the adapters').
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"

namespace baton::net {

// What an https:// client trusts. With `ca_file` set, that file's certificates only (--tls-ca,
// BATON_TLS_CA); else the system's CAs and, when it exists, `local_ca` (a local `baton up`'s
// DATA/tls/ca.crt, which the CLI adds when it talks to the local server).
struct TlsClientOptions {
  std::string ca_file;
  std::string local_ca;
};

// A server's certificate chain and private key, PEM files.
struct TlsServerFiles {
  std::string cert_file;
  std::string key_file;
};

// The files of a data directory's own certificate authority, in DIR/tls: ca.crt (give it to
// agents and remote CLIs with --tls-ca), ca.key, server.crt and server.key.
struct LocalPki {
  std::string ca_cert, ca_key, server_cert, server_key;
};
LocalPki LocalPkiIn(const std::string& data_dir);

// Makes DIR/tls's CA on first use (ECDSA P-256, ten years) and a server certificate it signs
// (one year) for `names`: host names and IP addresses (localhost, 127.0.0.1 and ::1 are
// always added). An existing server certificate is kept while it names every one of `names`
// and has more than 30 days left; else it is issued anew with the same CA (so a CA copied to
// several controllers signs each one's certificate). Keys are 0600, the directory 0700.
Result<TlsServerFiles> EnsureLocalCertificate(const std::string& data_dir,
                                              const std::vector<std::string>& names);

// Checks that `files` load and that the key is the certificate's: a clear error at start
// rather than at the first connection.
Status CheckServerFiles(const TlsServerFiles& files);

// What a certificate file says, for messages and tests.
struct CertificateInfo {
  std::string subject;             // its common name
  std::vector<std::string> names;  // its subjectAltName entries, DNS names and IP addresses
  int64_t not_after_unix = 0;      // seconds since 1970
  bool is_ca = false;
};
Result<CertificateInfo> ReadCertificate(const std::string& cert_file);

// The addresses of this machine's interfaces that are up, loopback excluded (for a
// certificate's names).
std::vector<std::string> HostAddresses();

// Before any other OpenSSL call (first thing in batond's main; MakeClientContext calls it too,
// for `baton`, which skips OpenSSL's start where no https:// server is used): OpenSSL registers
// no clean-up at exit, so a tunnel's bridge thread still running as the process exits never
// meets a freed library.
void InitTls();

// True for 127.0.0.0/8, ::1 and ::ffff:127.x.y.z.
bool IsLoopbackAddress(const std::string& address);

}  // namespace baton::net
