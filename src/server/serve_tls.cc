#include "server/serve_tls.h"

#include <boost/url/parse.hpp>
#include <cstdlib>
#include <vector>

#include "core/file_util.h"
#include "server/host.h"

namespace baton::server {

Result<ServeTls> PrepareServerTls(const TlsFlags& flags, const std::string& data_dir,
                                  const std::string& listen_host, const std::string& advertise) {
  ServeTls out;
  if (flags.cert.empty() != flags.key.empty())
    return Err(InvalidArgument("--tls-cert and --tls-key go together: give both, or neither"));
  if (!flags.cert.empty()) {
    out.files = net::TlsServerFiles{.cert_file = flags.cert, .key_file = flags.key};
    RETURN_IF_ERROR(CheckPrivate(flags.key, "the TLS key (--tls-key)"));
    RETURN_IF_ERROR(net::CheckServerFiles(out.files));
    return out;
  }
  std::vector<std::string> names = {HostName(), listen_host};
  if (!advertise.empty()) {
    if (auto u = boost::urls::parse_uri(advertise); u && !u->host().empty()) {
      std::string host(u->host());
      if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
      names.push_back(host);
    }
  }
  for (std::string& a : net::HostAddresses()) names.push_back(std::move(a));
  ASSIGN_OR_RETURN(out.files, net::EnsureLocalCertificate(data_dir, names));
  out.own_ca = true;
  out.ca_file = net::LocalPkiIn(data_dir).ca_cert;
  return out;
}

std::string LocalServerUrl(const ServeTls& tls, const std::string& listen_host, uint16_t port) {
  std::string host = listen_host;
  if (host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  bool https = tls.own_ca || !net::IsLoopbackAddress(host);
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return std::string(https ? "https://" : "http://") + host + ":" + std::to_string(port);
}

std::string DescribeServerTls(const ServeTls& tls) {
  if (!tls.own_ca) return "TLS: " + tls.files.cert_file;
  return "TLS: " + tls.files.cert_file + ", signed by this server's own CA " + tls.ca_file +
         ": agents and users elsewhere trust it with --tls-ca " + tls.ca_file + " (a copy)";
}

Result<std::string> AgentTlsCa(const std::string& flag) {
  std::string ca = flag;
  if (const char* env = std::getenv("BATON_TLS_CA"); ca.empty() && env != nullptr) ca = env;
  if (!ca.empty()) {
    if (auto cert = net::ReadCertificate(ca); !cert)
      return Err(InvalidArgument("--tls-ca " + cert.error().message()));
  }
  return ca;
}

std::string DescribeDashboard(const ServeTls& tls, const std::string& url,
                              const std::string& listen_host, const std::string& dir) {
  std::string where = url + "/ui/";
  const std::string trust = tls.own_ca ? " (trusting " + dir + "/tls/ca.crt)" : "";
  const std::string port = url.substr(url.rfind(':') + 1);
  // Plain HTTP is taken from this machine: a browser here needs no certificate trusted.
  if (url.starts_with("https://") && net::IsLoopbackAddress(listen_host)) {
    where = "http://127.0.0.1:" + port + "/ui/";
  } else if (url.starts_with("https://") && (listen_host == "0.0.0.0" || listen_host == "::")) {
    where = "http://127.0.0.1:" + port + "/ui/ on this machine, https://" + HostName() + ":" +
            port + "/ui/ from others" + trust;
  } else {
    where += trust;
  }
  return "dashboard: " + where + "; log in with the token in " + dir + "/admin.token";
}

}  // namespace baton::server
