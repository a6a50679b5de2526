// Small helpers the load tools share (bench/load.cc, bench/agents.cc).
#pragma once

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "net/http_client.h"

namespace baton::bench {

// The first line of a file ("" when it cannot be read): server.url, admin.token.
inline std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// The p-quantile (0..1) of `v`, nearest rank; 0 for none.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// The data directory whose server.url, admin.token and tls/ca.crt the tools read, as the CLI
// does: $BATON_HOME, else ~/.baton.
inline std::string BatonHome() {
  if (const char* home = std::getenv("BATON_HOME")) return home;
  return std::string(std::getenv("HOME") ? std::getenv("HOME") : ".") + "/.baton";
}

// Fills what --server, --token and --tls-ca left empty as the CLI does: $BATON_SERVER,
// $BATON_TOKEN and $BATON_TLS_CA, else `home`'s server.url, admin.token and tls/ca.crt.
inline void ResolveServer(const std::string& home, std::string& server, std::string& token,
                          net::TlsClientOptions& tls) {
  if (server.empty() && std::getenv("BATON_SERVER")) server = std::getenv("BATON_SERVER");
  if (server.empty()) server = ReadFirstLine(home + "/server.url");
  if (token.empty() && std::getenv("BATON_TOKEN")) token = std::getenv("BATON_TOKEN");
  if (token.empty()) token = ReadFirstLine(home + "/admin.token");
  if (tls.ca_file.empty() && std::getenv("BATON_TLS_CA")) tls.ca_file = std::getenv("BATON_TLS_CA");
  tls.local_ca = home + "/tls/ca.crt";
}

}  // namespace baton::bench
