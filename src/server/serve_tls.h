// The controller's TLS: the certificate it serves with (--tls-cert/--tls-key, else its own CA's
// in DATA/tls, made on first start) and the URL that local tools and `baton up`'s agent use.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "net/tls.h"

namespace baton::server {

struct TlsFlags {
  std::string cert;            // --tls-cert / tls.cert
  std::string key;             // --tls-key / tls.key
  bool insecure_http = false;  // --insecure-http / tls.insecure_http
};

struct ServeTls {
  net::TlsServerFiles files;
  bool own_ca = false;  // DATA/tls's CA signed the certificate
  std::string ca_file;  // with own_ca: DATA/tls/ca.crt, for agents and remote CLIs
};

// Checks --tls-cert/--tls-key, or makes (or renews) DATA/tls's certificate for this machine's
// names: its host name, the listen and advertised hosts, its interfaces' addresses.
Result<ServeTls> PrepareServerTls(const TlsFlags& flags, const std::string& data_dir,
                                  const std::string& listen_host, const std::string& advertise);

// The URL written to DATA/server.url: loopback for a wildcard listen address; https:// when the
// certificate names that host for sure (the own CA's) or plain HTTP would be refused (a
// non-loopback host), else http:// (plain HTTP is served to loopback).
std::string LocalServerUrl(const ServeTls& tls, const std::string& listen_host, uint16_t port);

// The log line saying what the server serves with (and, with its own CA, what to hand out).
std::string DescribeServerTls(const ServeTls& tls);
// The line `baton up` and `baton server` log about the dashboard: where to open it (`url` is the
// one served, as LocalServerUrl made it; plain http://127.0.0.1 where the server listens on
// loopback or everywhere, https:// from elsewhere) and the token to log in with.
std::string DescribeDashboard(const ServeTls& tls, const std::string& url,
                              const std::string& listen_host, const std::string& dir);

// What `baton agent` checks the controller's certificate against: --tls-ca, else
// $BATON_TLS_CA, else "" (the system's CAs); a file given must hold a certificate.
Result<std::string> AgentTlsCa(const std::string& flag);

}  // namespace baton::server
