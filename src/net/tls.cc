// The private CA and server certificates of a data directory, with OpenSSL's X509 API: what
// `openssl req`/`openssl x509` or kubeadm's certificate phase would do, made in-process so that
// `baton up` needs no tool and no configuration.
#include "net/tls.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

#include "core/file_util.h"

namespace baton::net {

namespace {

namespace fs = std::filesystem;

template <class T, void (*Free)(T*)>
struct Freer {
  void operator()(T* p) const { Free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Freer<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Freer<X509, X509_free>>;
using Bio = std::unique_ptr<BIO, Freer<BIO, BIO_free_all>>;

constexpr long kDay = 24 * 3600;
constexpr long kCaLifetime = 3650 * kDay;
constexpr long kServerLifetime = 365 * kDay;
constexpr long kRenewBefore = 30 * kDay;

// OpenSSL's last error, for a message.
std::string SslError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

Result<Key> NewKey() {
  Key key(EVP_EC_gen("P-256"));
  if (!key) return Err(Internal("cannot make a key: " + SslError()));
  return key;
}

Result<std::string> PemOf(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1)
    return Err(Internal("cannot encode a certificate: " + SslError()));
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Result<std::string> PemOf(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return Err(Internal("cannot encode a key: " + SslError()));
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Result<Cert> LoadCert(const std::string& path) {
  Bio bio(BIO_new_file(path.c_str(), "r"));
  if (!bio) return Err(NotFound(path + ": cannot be read"));
  Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) return Err(InvalidArgument(path + ": not a PEM certificate (" + SslError() + ")"));
  return cert;
}

Result<Key> LoadKey(const std::string& path) {
  Bio bio(BIO_new_file(path.c_str(), "r"));
  if (!bio) return Err(NotFound(path + ": cannot be read"));
  Key key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return Err(InvalidArgument(path + ": not a PEM private key (" + SslError() + ")"));
  return key;
}

bool IsIpAddress(const std::string& name) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return Internal("certificate extension " + value + ": " + SslError());
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) return Internal("certificate extension " + value + ": " + SslError());
  return Status::Ok();
}

// A certificate for `key` named `common_name`, signed by `issuer_key` (itself when no issuer).
Result<Cert> Issue(EVP_PKEY* key, const std::string& common_name, long lifetime, X509* issuer,
                   EVP_PKEY* issuer_key, const std::vector<std::string>& names) {
  Cert cert(X509_new());
  if (!cert) return Err(Internal("cannot make a certificate: " + SslError()));
  X509_set_version(cert.get(), 2);  // v3
  // A random 127-bit serial (positive), as RFC 5280 asks of a CA.
  std::unique_ptr<BIGNUM, Freer<BIGNUM, BN_free>> serial(BN_new());
  if (!serial || BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    return Err(Internal("cannot make a serial number: " + SslError()));
  }
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);  // clocks a little behind
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), lifetime);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("Baton"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash"));
  RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always"));
  if (issuer == nullptr) {
    RETURN_IF_ERROR(
        AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
    RETURN_IF_ERROR(
        AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign"));
  } else {
    RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE"));
    RETURN_IF_ERROR(
        AddExtension(cert.get(), signer, NID_key_usage, "critical,digitalSignature,keyAgreement"));
    RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_ext_key_usage, "serverAuth"));
    std::string san;
    for (const std::string& n : names) {
      if (!san.empty()) san += ",";
      san += (IsIpAddress(n) ? "IP:" : "DNS:") + n;
    }
    RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_subject_alt_name, san));
  }
  if (X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) <= 0)
    return Err(Internal("cannot sign a certificate: " + SslError()));
  return cert;
}

// Seconds from now until `cert` expires (negative when it has).
long SecondsLeft(X509* cert) {
  int days = 0, seconds = 0;
  if (ASN1_TIME_diff(&days, &seconds, nullptr, X509_get0_notAfter(cert)) != 1) return -1;
  return days * kDay + seconds;
}

std::vector<std::string> NamesOf(X509* cert) {
  std::vector<std::string> out;
  auto* sans =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (sans == nullptr) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* gn = sk_GENERAL_NAME_value(sans, i);
    if (gn->type == GEN_DNS) {
      const ASN1_IA5STRING* s = gn->d.dNSName;
      out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                       static_cast<size_t>(ASN1_STRING_length(s)));
    } else if (gn->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* s = gn->d.iPAddress;
      char text[INET6_ADDRSTRLEN] = {};
      int len = ASN1_STRING_length(s);
      const unsigned char* bytes = ASN1_STRING_get0_data(s);
      if (len == 4) inet_ntop(AF_INET, bytes, text, sizeof text);
      if (len == 16) inet_ntop(AF_INET6, bytes, text, sizeof text);
      if (text[0] != 0) out.emplace_back(text);
    }
  }
  GENERAL_NAMES_free(sans);
  return out;
}

// An IP address in its canonical text (so "::0001" and "::1" compare equal), else as given.
std::string Canonical(const std::string& name) {
  unsigned char buf[sizeof(in6_addr)];
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_pton(AF_INET6, name.c_str(), buf) == 1) {
    inet_ntop(AF_INET6, buf, text, sizeof text);
    return text;
  }
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

Status WritePem(const std::string& path, const std::string& pem, mode_t mode) {
  return WriteFileAtomic(path, pem, {.mode = mode});
}

}  // namespace

LocalPki LocalPkiIn(const std::string& data_dir) {
  std::string tls = data_dir + "/tls";
  return LocalPki{.ca_cert = tls + "/ca.crt",
                  .ca_key = tls + "/ca.key",
                  .server_cert = tls + "/server.crt",
                  .server_key = tls + "/server.key"};
}

Result<TlsServerFiles> EnsureLocalCertificate(const std::string& data_dir,
                                              const std::vector<std::string>& names) {
  LocalPki pki = LocalPkiIn(data_dir);
  std::string dir = data_dir + "/tls";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || ::chmod(dir.c_str(), 0700) != 0)
    return Err(Internal("cannot make " + dir + (ec ? ": " + ec.message() : std::string())));
  RETURN_IF_ERROR(CheckPrivate(pki.ca_key, "the TLS CA's key"));
  RETURN_IF_ERROR(CheckPrivate(pki.server_key, "the TLS server key"));

  std::vector<std::string> wanted = {"localhost", "127.0.0.1", "::1"};
  for (const std::string& n : names) {
    if (!n.empty() && n != "0.0.0.0" && n != "::" &&
        std::find(wanted.begin(), wanted.end(), n) == wanted.end())
      wanted.push_back(n);
  }

  // The CA: made once; an existing one is used as it is.
  Cert ca;
  Key ca_key;
  bool have_ca = fs::exists(pki.ca_cert) || fs::exists(pki.ca_key);
  if (have_ca) {
    ASSIGN_OR_RETURN(ca, LoadCert(pki.ca_cert));
    ASSIGN_OR_RETURN(ca_key, LoadKey(pki.ca_key));
    if (X509_check_private_key(ca.get(), ca_key.get()) != 1)
      return Err(InvalidArgument(pki.ca_key + ": not the key of " + pki.ca_cert));
  } else {
    ASSIGN_OR_RETURN(ca_key, NewKey());
    ASSIGN_OR_RETURN(ca, Issue(ca_key.get(), "Baton CA", kCaLifetime, nullptr, nullptr, {}));
    ASSIGN_OR_RETURN(std::string key_pem, PemOf(ca_key.get()));
    ASSIGN_OR_RETURN(std::string cert_pem, PemOf(ca.get()));
    RETURN_IF_ERROR(WritePem(pki.ca_key, key_pem, 0600));
    RETURN_IF_ERROR(WritePem(pki.ca_cert, cert_pem, 0644));
  }

  // The server's: kept while it is the CA's, names everything wanted and has time left.
  if (fs::exists(pki.server_cert) && fs::exists(pki.server_key)) {
    auto cert = LoadCert(pki.server_cert);
    auto key = LoadKey(pki.server_key);
    bool keep = cert && key && X509_check_private_key(cert->get(), key->get()) == 1 &&
                X509_check_issued(ca.get(), cert->get()) == X509_V_OK &&
                SecondsLeft(cert->get()) > kRenewBefore;
    if (keep) {
      std::set<std::string> has;
      for (const std::string& n : NamesOf(cert->get())) has.insert(Canonical(n));
      for (const std::string& n : wanted) keep = keep && has.count(Canonical(n)) > 0;
    }
    if (keep) return TlsServerFiles{.cert_file = pki.server_cert, .key_file = pki.server_key};
  }
  ASSIGN_OR_RETURN(Key key, NewKey());
  ASSIGN_OR_RETURN(
      Cert cert, Issue(key.get(), wanted.back(), kServerLifetime, ca.get(), ca_key.get(), wanted));
  ASSIGN_OR_RETURN(std::string key_pem, PemOf(key.get()));
  ASSIGN_OR_RETURN(std::string cert_pem, PemOf(cert.get()));
  ASSIGN_OR_RETURN(std::string ca_pem, PemOf(ca.get()));
  // The key first: a certificate is never left beside a key that is not its own.
  RETURN_IF_ERROR(WritePem(pki.server_key, key_pem, 0600));
  RETURN_IF_ERROR(WritePem(pki.server_cert, cert_pem + ca_pem, 0644));  // the chain, leaf first
  return TlsServerFiles{.cert_file = pki.server_cert, .key_file = pki.server_key};
}

Status CheckServerFiles(const TlsServerFiles& files) {
  auto cert = LoadCert(files.cert_file);
  if (!cert) return Status(cert.error().code(), "--tls-cert " + cert.error().message());
  auto key = LoadKey(files.key_file);
  if (!key) return Status(key.error().code(), "--tls-key " + key.error().message());
  if (X509_check_private_key(cert->get(), key->get()) != 1) {
    ERR_clear_error();
    return InvalidArgument("--tls-key " + files.key_file + ": not the key of the certificate " +
                           files.cert_file);
  }
  if (SecondsLeft(cert->get()) <= 0)
    return InvalidArgument("--tls-cert " + files.cert_file + ": the certificate has expired");
  return Status::Ok();
}

Result<CertificateInfo> ReadCertificate(const std::string& cert_file) {
  ASSIGN_OR_RETURN(Cert cert, LoadCert(cert_file));
  CertificateInfo info;
  char cn[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert.get()), NID_commonName, cn, sizeof cn);
  info.subject = cn;
  info.names = NamesOf(cert.get());
  info.is_ca = X509_check_ca(cert.get()) != 0;
  ASN1_TIME* epoch = ASN1_TIME_set(nullptr, 0);
  int days = 0, seconds = 0;
  if (epoch != nullptr && ASN1_TIME_diff(&days, &seconds, epoch, X509_get0_notAfter(cert.get())))
    info.not_after_unix = int64_t{days} * kDay + seconds;
  ASN1_TIME_free(epoch);
  return info;
}

std::vector<std::string> HostAddresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || (a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK))
      continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      const in6_addr& addr = reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr;
      if (IN6_IS_ADDR_LINKLOCAL(&addr)) continue;  // needs a zone; no use in a certificate
      inet_ntop(AF_INET6, &addr, text, sizeof text);
    }
    if (text[0] != 0 && std::find(out.begin(), out.end(), text) == out.end())
      out.emplace_back(text);
  }
  freeifaddrs(list);
  return out;
}

void InitTls() { OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr); }

bool IsLoopbackAddress(const std::string& address) {
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, address.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

}  // namespace baton::net
