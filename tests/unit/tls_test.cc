// TLS end to end within one process: the data directory's own CA and certificate, the HTTP
// server speaking HTTPS and plain HTTP on one port, the client's verification and its messages,
// plain HTTP refused from another machine's address, and a tunnel (an upgraded connection)
// over TLS handed on as a plain descriptor on both sides.
#include "net/tls.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "api/http_server.h"
#include "net/http_client.h"

namespace baton::net {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/baton-tls-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_mode & 0777;
}

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(LocalCertificate, IsMadeOnceForTheNamesAndKeptPrivate) {
  TempDir dir;
  auto files = EnsureLocalCertificate(dir.path(), {"gpu-head", "10.1.2.3"});
  ASSERT_TRUE(files.has_value()) << files.error().message();
  LocalPki pki = LocalPkiIn(dir.path());
  EXPECT_EQ(files->cert_file, pki.server_cert);
  EXPECT_EQ(ModeOf(dir.path() + "/tls"), 0700u);
  EXPECT_EQ(ModeOf(pki.ca_key), 0600u);
  EXPECT_EQ(ModeOf(pki.server_key), 0600u);
  auto ca = ReadCertificate(pki.ca_cert);
  ASSERT_TRUE(ca.has_value());
  EXPECT_TRUE(ca->is_ca);
  auto server = ReadCertificate(pki.server_cert);
  ASSERT_TRUE(server.has_value());
  EXPECT_FALSE(server->is_ca);
  for (const char* name : {"localhost", "127.0.0.1", "::1", "gpu-head", "10.1.2.3"})
    EXPECT_TRUE(Has(server->names, name)) << name;
  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  EXPECT_GT(server->not_after_unix, now + 300 * 24 * 3600);  // about a year
  EXPECT_GT(ca->not_after_unix, now + 9 * 365 * 24 * 3600);  // about ten

  // A second start with the same names keeps everything as it is.
  std::string cert = Slurp(pki.server_cert), ca_pem = Slurp(pki.ca_cert);
  ASSERT_TRUE(EnsureLocalCertificate(dir.path(), {"gpu-head", "10.1.2.3"}).has_value());
  EXPECT_EQ(Slurp(pki.server_cert), cert);
  // A new name (another address): a new server certificate from the same CA.
  ASSERT_TRUE(EnsureLocalCertificate(dir.path(), {"gpu-head", "10.9.9.9"}).has_value());
  EXPECT_NE(Slurp(pki.server_cert), cert);
  EXPECT_EQ(Slurp(pki.ca_cert), ca_pem);
  EXPECT_TRUE(Has(ReadCertificate(pki.server_cert)->names, "10.9.9.9"));

  // A key others may read is refused, naming the file and the fix.
  ::chmod(pki.ca_key.c_str(), 0644);
  auto refused = EnsureLocalCertificate(dir.path(), {});
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("ca.key"), std::string::npos)
      << refused.error().message();
  EXPECT_NE(refused.error().message().find("chmod 600"), std::string::npos)
      << refused.error().message();
}

TEST(LocalCertificate, BadFilesAreNamedAtStart) {
  TempDir dir;
  ASSERT_TRUE(EnsureLocalCertificate(dir.path(), {}).has_value());
  LocalPki pki = LocalPkiIn(dir.path());
  Status ok = CheckServerFiles({.cert_file = pki.server_cert, .key_file = pki.server_key});
  EXPECT_TRUE(ok.ok()) << ok.message();
  // The CA's key is not the server certificate's.
  Status wrong = CheckServerFiles({.cert_file = pki.server_cert, .key_file = pki.ca_key});
  EXPECT_NE(wrong.message().find("not the key of the certificate"), std::string::npos)
      << wrong.message();
  std::ofstream(dir.path() + "/junk.pem") << "hello\n";
  Status junk =
      CheckServerFiles({.cert_file = dir.path() + "/junk.pem", .key_file = pki.server_key});
  EXPECT_NE(junk.message().find("junk.pem: not a PEM certificate"), std::string::npos)
      << junk.message();
  Status missing = CheckServerFiles({.cert_file = dir.path() + "/none.pem", .key_file = "x"});
  EXPECT_NE(missing.message().find("none.pem: cannot be read"), std::string::npos)
      << missing.message();
}

TEST(LoopbackAddress, CoversTheLoopbackRangesOnly) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackAddress("127.3.2.1"));
  EXPECT_TRUE(IsLoopbackAddress("::1"));
  EXPECT_TRUE(IsLoopbackAddress("::ffff:127.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("::ffff:10.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("fe80::1"));
  EXPECT_FALSE(IsLoopbackAddress("localhost"));  // a name, not an address
}

// A server with the directory's own certificate: /hello answers "hi", /tunnel upgrades and
// echoes what it is sent, upper-cased, until the client closes.
class TlsServerTest : public ::testing::Test {
 protected:
  void Start(std::string host = "127.0.0.1", bool plain_from_anywhere = false) {
    auto files = EnsureLocalCertificate(dir_.path(), {});
    ASSERT_TRUE(files.has_value()) << files.error().message();
    server_ = std::make_unique<api::HttpServer>(
        api::HttpServerOptions{.host = host,
                               .port = 0,
                               .threads = 2,
                               .tls = *files,
                               .plain_from_anywhere = plain_from_anywhere},
        [this](api::Request req, api::Respond respond) {
          if (req.path == "/tunnel") {
            respond(api::Response{.status = 101,
                                  .headers = {{"Upgrade", "echo"}},
                                  .upgrade = [this](int fd, std::string early) {
                                    echoes_.emplace_back([fd, early] { Echo(fd, early); });
                                  }});
            return;
          }
          respond(api::Response{.body = "hi " + req.path});
        });
    auto port = server_->Start();
    ASSERT_TRUE(port.has_value()) << port.error().message();
    port_ = std::to_string(*port);
    host_ = host;
  }

  void TearDown() override {
    // Destroyed, not only stopped: a tunnel's bridge still waiting for its peer's end is then
    // closed, and the echo reading from it ends.
    server_.reset();
    for (auto& t : echoes_) t.join();
  }

  static void Echo(int fd, std::string early) {
    std::string pending = early;
    char buf[4096];
    for (;;) {
      for (char& c : pending) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (!pending.empty() && ::write(fd, pending.data(), pending.size()) < 0) break;
      pending.clear();
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      pending.assign(buf, static_cast<size_t>(n));
    }
    ::close(fd);
  }

  std::string Url(const std::string& scheme = "https") const {
    return scheme + "://" + host_ + ":" + port_;
  }
  TlsClientOptions Trusting() const { return {.ca_file = LocalPkiIn(dir_.path()).ca_cert}; }

  TempDir dir_;
  std::unique_ptr<api::HttpServer> server_;
  std::vector<std::thread> echoes_;
  std::string host_, port_;
};

TEST_F(TlsServerTest, HttpsAndLoopbackPlainHttpOnOnePort) {
  Start();
  auto https = HttpClient::Create(Url(), "", Trusting());
  ASSERT_TRUE(https.has_value());
  for (int i = 0; i < 3; ++i) {  // one kept-alive connection
    auto r = (*https)->Request("GET", "/hello");
    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "hi /hello");
  }
  EXPECT_EQ((*https)->base_url(), Url());
  auto plain = HttpClient::Create(Url("http"), "");
  auto r = (*plain)->Request("GET", "/plain");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->body, "hi /plain");
}

TEST_F(TlsServerTest, AServerNotTrustedIsRefusedWithWhatToDo) {
  Start();
  // The system's CAs know nothing of this one.
  auto c = HttpClient::Create(Url(), "");
  auto r = (*c)->Request("GET", "/hello");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("the server's certificate is not trusted"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("--tls-ca"), std::string::npos) << r.error().message();
  // Another CA, given explicitly: refused too.
  TempDir other;
  ASSERT_TRUE(EnsureLocalCertificate(other.path(), {}).has_value());
  auto c2 = HttpClient::Create(Url(), "", {.ca_file = LocalPkiIn(other.path()).ca_cert});
  EXPECT_FALSE((*c2)->Request("GET", "/hello").has_value());
  // A CA file that is not one: said before connecting.
  std::ofstream(other.path() + "/junk.crt") << "junk\n";
  auto c3 = HttpClient::Create(Url(), "", {.ca_file = other.path() + "/junk.crt"});
  auto r3 = (*c3)->Request("GET", "/hello");
  ASSERT_FALSE(r3.has_value());
  EXPECT_NE(r3.error().message().find("--tls-ca " + other.path() + "/junk.crt"), std::string::npos)
      << r3.error().message();
  // The local CA as a fall-back beside the system's (what the CLI does with DATA/tls/ca.crt).
  auto c4 = HttpClient::Create(Url(), "", {.local_ca = LocalPkiIn(dir_.path()).ca_cert});
  auto r4 = (*c4)->Request("GET", "/hello");
  ASSERT_TRUE(r4.has_value()) << r4.error().message();
}

TEST_F(TlsServerTest, ACertificateForAnotherAddressIsRefused) {
  Start("127.0.0.2");  // loopback, but not among the certificate's names
  auto c = HttpClient::Create(Url(), "", Trusting());
  auto r = (*c)->Request("GET", "/hello");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("not for this address"), std::string::npos)
      << r.error().message();
}

// Plain HTTP from an address of this machine that is not loopback (a client bound to it, as a
// client on another machine would arrive): refused with a 403 saying to use https, unless the
// server was told --insecure-http.
std::string PlainFrom(const std::string& source, const std::string& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) {
    ::close(fd);
    return "bind failed";
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return "connect failed";
  }
  std::string req = "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  (void)::write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

std::string NonLoopbackV4() {
  for (const std::string& a : HostAddresses()) {
    if (a.find(':') == std::string::npos) return a;
  }
  return "";
}

TEST_F(TlsServerTest, PlainHttpFromAnotherAddressIsRefused) {
  std::string source = NonLoopbackV4();
  if (source.empty()) GTEST_SKIP() << "this machine has no IPv4 address but loopback";
  Start();
  std::string out = PlainFrom(source, port_);
  EXPECT_NE(out.find("HTTP/1.1 403"), std::string::npos) << out;
  EXPECT_NE(out.find("use https://"), std::string::npos) << out;
  EXPECT_NE(out.find("--insecure-http"), std::string::npos) << out;
  EXPECT_EQ(out.find("hi /hello"), std::string::npos) << out;
}

TEST_F(TlsServerTest, InsecureHttpAnswersPlainHttpFromAnywhere) {
  std::string source = NonLoopbackV4();
  if (source.empty()) GTEST_SKIP() << "this machine has no IPv4 address but loopback";
  Start("127.0.0.1", /*plain_from_anywhere=*/true);
  std::string out = PlainFrom(source, port_);
  EXPECT_NE(out.find("HTTP/1.1 200"), std::string::npos) << out;
  EXPECT_NE(out.find("hi /hello"), std::string::npos) << out;
}

TEST_F(TlsServerTest, ATunnelOverTlsIsAPlainDescriptorOnBothSides) {
  Start();
  for (int round = 0; round < 2; ++round) {
    auto c = HttpClient::Create(Url(), "", Trusting());
    auto up = (*c)->Upgrade("/tunnel", "echo");
    ASSERT_TRUE(up.has_value()) << up.error().message();
    ASSERT_GE(up->fd, 0) << up->refused.status << " " << up->refused.body;
    c.value().reset();  // the tunnel outlives its client
    // Large enough to take many TLS records each way.
    std::string sent(256 * 1024, 'a');
    std::thread writer([&] {
      size_t at = 0;
      while (at < sent.size()) {
        ssize_t n = ::write(up->fd, sent.data() + at, sent.size() - at);
        ASSERT_GT(n, 0);
        at += static_cast<size_t>(n);
      }
    });
    std::string got = up->early;
    char buf[16384];
    while (got.size() < sent.size()) {
      ssize_t n = ::read(up->fd, buf, sizeof buf);
      ASSERT_GT(n, 0) << "after " << got.size();
      got.append(buf, static_cast<size_t>(n));
    }
    writer.join();
    EXPECT_EQ(got, std::string(sent.size(), 'A'));
    // Closing our end ends the server's: its read sees the end, it closes, we see ours.
    ::shutdown(up->fd, SHUT_WR);
    EXPECT_EQ(::read(up->fd, buf, sizeof buf), 0);
    ::close(up->fd);
  }
}

}  // namespace
}  // namespace baton::net
