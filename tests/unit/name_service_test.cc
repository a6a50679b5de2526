// The static `baton`'s host and user lookups (cli/name_service.h): which nsswitch.conf lines
// glibc answers alone, and the `getent` path taken for the others, against this machine's
// own getent and getaddrinfo.
#include "cli/name_service.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netdb.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace baton::cli {
namespace {

using Sources = std::vector<std::string>;

// Debian 12's /etc/nsswitch.conf as installed.
constexpr const char* kDebian = R"(# /etc/nsswitch.conf
#
# Example configuration of GNU Name Service Switch functionality.

passwd:         files systemd
group:          files systemd
shadow:         files systemd
gshadow:        files systemd

hosts:          files dns
networks:       files

protocols:      db files
services:       db files
)";

TEST(NameSources, ReadsTheDatabasesLineInOrder) {
  EXPECT_EQ(NameSources(kDebian, "hosts"), (Sources{"files", "dns"}));
  EXPECT_EQ(NameSources(kDebian, "passwd"), (Sources{"files", "systemd"}));
  EXPECT_EQ(NameSources(kDebian, "services"), (Sources{"db", "files"}));
}

TEST(NameSources, SkipsActionsAndComments) {
  EXPECT_EQ(NameSources("hosts: files mdns4_minimal [NOTFOUND=return] dns # sss\n", "hosts"),
            (Sources{"files", "mdns4_minimal", "dns"}));
  EXPECT_EQ(NameSources("hosts:files[ NOTFOUND=return ]dns", "hosts"), (Sources{"files", "dns"}));
  EXPECT_EQ(NameSources("# hosts: sss\nhosts: files\n", "hosts"), (Sources{"files"}));
}

TEST(NameSources, EveryLineForTheDatabaseCounts) {
  EXPECT_EQ(NameSources("passwd: files\n  passwd: sss\n", "passwd"), (Sources{"files", "sss"}));
}

TEST(NameSources, AnUnnamedDatabaseHasGlibcsDefaults) {
  EXPECT_EQ(NameSources("passwd: files\n", "hosts"), (Sources{"dns", "files"}));
  EXPECT_EQ(NameSources("", "passwd"), (Sources{"files"}));
  EXPECT_EQ(NameSources("hostsx: sss\n", "hosts"), (Sources{"dns", "files"}));
}

class NameServiceFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/baton-nsswitch-XXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
  }
  void TearDown() override { unlink(path_.c_str()); }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  std::string path_;
};

TEST_F(NameServiceFile, OnlyFilesAndDnsAreLeftToTheStaticLibrary) {
  Write(kDebian);
  EXPECT_TRUE(StaticLookupWorks(path_, "hosts"));
  EXPECT_FALSE(StaticLookupWorks(path_, "passwd"));  // systemd is a module
  EXPECT_FALSE(StaticLookupWorks(path_, "services"));
  EXPECT_TRUE(StaticLookupWorks(path_, "networks"));
  Write("hosts: files myhostname dns\npasswd: files\n");
  EXPECT_FALSE(StaticLookupWorks(path_, "hosts"));
  EXPECT_TRUE(StaticLookupWorks(path_, "passwd"));
}

TEST_F(NameServiceFile, AMissingFileIsGlibcsDefaultsAndAnOversizedOneIsNotTrusted) {
  EXPECT_TRUE(StaticLookupWorks(path_ + ".none", "hosts"));
  Write(std::string(70 * 1024, '#') + "\nhosts: files\n");
  EXPECT_FALSE(StaticLookupWorks(path_, "hosts"));
}

TEST(GetentAddresses, EachAddressOnceInOrderWithTheCanonicalName) {
  std::string canonical;
  EXPECT_EQ(GetentAddresses("10.0.0.7       STREAM ctl.example.org\n"
                            "10.0.0.7       DGRAM  \n"
                            "10.0.0.7       RAW    \n"
                            "fd00::7        STREAM \n"
                            "fd00::7        DGRAM  \n",
                            &canonical),
            (Sources{"10.0.0.7", "fd00::7"}));
  EXPECT_EQ(canonical, "ctl.example.org");
  EXPECT_TRUE(GetentAddresses("\n\n", &canonical).empty());
}

// What the fake getaddrinfo was asked.
std::vector<std::string> asked;
int asked_flags = 0;
int FakeGetAddrInfo(const char* node, const char*, const addrinfo* hints, addrinfo**) {
  asked.emplace_back(node != nullptr ? node : "(null)");
  asked_flags = hints != nullptr ? hints->ai_flags : 0;
  return EAI_AGAIN;
}

std::set<std::string> Addresses(const addrinfo* list) {
  std::set<std::string> out;
  for (const addrinfo* a = list; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN];
    const void* raw =
        a->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
            : &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr;
    out.insert(inet_ntop(a->ai_family, raw, text, sizeof text));
  }
  return out;
}

TEST_F(NameServiceFile, NumericAddressesAndBuiltInSourcesGoToGlibc) {
  Write("hosts: files sss\n");
  asked.clear();
  addrinfo* res = nullptr;
  EXPECT_EQ(StaticGetAddrInfo("127.0.0.1", "80", nullptr, &res, &FakeGetAddrInfo, path_),
            EAI_AGAIN);
  EXPECT_EQ(StaticGetAddrInfo("::1", "80", nullptr, &res, &FakeGetAddrInfo, path_), EAI_AGAIN);
  Write("hosts: files dns\n");
  EXPECT_EQ(StaticGetAddrInfo("ctl.example.org", "443", nullptr, &res, &FakeGetAddrInfo, path_),
            EAI_AGAIN);
  EXPECT_EQ(asked, (Sources{"127.0.0.1", "::1", "ctl.example.org"}));
}

TEST_F(NameServiceFile, AServiceNameNeedsBuiltInSourcesForServices) {
  Write("hosts: files\nservices: db files\n");
  asked.clear();
  addrinfo* res = nullptr;
  EXPECT_EQ(StaticGetAddrInfo("127.0.0.1", "https", nullptr, &res, &FakeGetAddrInfo, path_),
            EAI_SERVICE);
  EXPECT_TRUE(asked.empty());
  Write("hosts: files\nservices: files\n");
  EXPECT_EQ(StaticGetAddrInfo("127.0.0.1", "https", nullptr, &res, &FakeGetAddrInfo, path_),
            EAI_AGAIN);
}

// localhost through getent, with this machine's getaddrinfo making each address: the same
// addresses as getaddrinfo finds by itself, and an unknown name is "no such name".
TEST_F(NameServiceFile, OtherSourcesAreAskedOfGetent) {
  Write("hosts: files sss\n");
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_CANONNAME;
  addrinfo* direct = nullptr;
  ASSERT_EQ(getaddrinfo("localhost", "8470", &hints, &direct), 0);
  addrinfo* via = nullptr;
  ASSERT_EQ(StaticGetAddrInfo("localhost", "8470", &hints, &via, &getaddrinfo, path_), 0);
  EXPECT_EQ(Addresses(via), Addresses(direct));
  ASSERT_NE(via->ai_canonname, nullptr);
  EXPECT_STREQ(via->ai_canonname, "localhost");
  EXPECT_EQ(via->ai_socktype, SOCK_STREAM);
  EXPECT_EQ(ntohs(reinterpret_cast<sockaddr_in*>(via->ai_addr)->sin_port), 8470);
  freeaddrinfo(direct);
  freeaddrinfo(via);

  hints.ai_family = AF_INET;
  ASSERT_EQ(StaticGetAddrInfo("localhost", "1", &hints, &via, &getaddrinfo, path_), 0);
  EXPECT_EQ(Addresses(via), (std::set<std::string>{"127.0.0.1"}));
  freeaddrinfo(via);

  EXPECT_EQ(StaticGetAddrInfo("no-such-host.invalid", "1", nullptr, &via, &getaddrinfo, path_),
            EAI_NONAME);
}

passwd* FakeGetPwNam(const char* name) {
  asked.emplace_back(name);
  return nullptr;
}

TEST_F(NameServiceFile, UsersThroughGlibcOrGetent) {
  Write("passwd: files\n");
  asked.clear();
  EXPECT_EQ(StaticGetPwNam("root", &FakeGetPwNam, path_), nullptr);
  EXPECT_EQ(asked, (Sources{"root"}));

  Write("passwd: files systemd\n");
  passwd* root = StaticGetPwNam("root", &FakeGetPwNam, path_);
  ASSERT_NE(root, nullptr);
  EXPECT_STREQ(root->pw_name, "root");
  EXPECT_EQ(root->pw_uid, 0u);
  EXPECT_EQ(root->pw_gid, 0u);
  EXPECT_STREQ(root->pw_dir, "/root");
  EXPECT_EQ(asked.size(), 1u);  // the fake was not asked

  errno = EINVAL;
  EXPECT_EQ(StaticGetPwNam("no-such-user-baton", &FakeGetPwNam, path_), nullptr);
  EXPECT_EQ(errno, 0);
  // getent takes digits as a uid: uid 0's entry is not a user named "0".
  EXPECT_EQ(StaticGetPwNam("0", &FakeGetPwNam, path_), nullptr);
  EXPECT_EQ(errno, 0);
}

}  // namespace
}  // namespace baton::cli
