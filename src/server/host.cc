#include "server/host.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "api/auth.h"
#include "core/file_util.h"
#include "core/log.h"
#include "core/node.h"
#include "core/quantity.h"

namespace baton::server {

agent::HostTopology HostTopologyOrNone() {
  auto topology = agent::LoadHostTopology();
  if (!topology) {
    LogWarn(topology.error().message() + ": jobs run without CPU binding", {.component = "agent"});
    return {};
  }
  return std::move(*topology);
}

std::string ReadTrimmed(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

Result<std::string> EnsureToken(const std::string& path) {
  std::string t = ReadTrimmed(path);
  if (t.size() >= 32) return t;
  ASSIGN_OR_RETURN(t, api::NewToken());
  RETURN_IF_ERROR(WriteFileAtomic(path, t + "\n", {.mode = 0600}));
  return t;
}

Result<std::pair<std::string, uint16_t>> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos)
    return Err(InvalidArgument("--listen: expected HOST:PORT, got \"" + listen + "\""));
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  std::string port = listen.substr(colon + 1);
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) {
    return Err(InvalidArgument("--listen: \"" + port + "\" is not a port number"));
  }
  return std::make_pair(host, static_cast<uint16_t>(p));
}

std::string HostName() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  std::string name = buf;
  if (name.find('.') != std::string::npos) name = name.substr(0, name.find('.'));
  return IsValidNodeName(name) ? name : "localhost";
}

std::string LocalUser() {
  const char* u = std::getenv("USER");
  return u != nullptr && *u != '\0' ? u : (geteuid() == 0 ? "root" : "user");
}

sigset_t BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return set;
}

int WaitForShutdown(const sigset_t& set) {
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

bool PortFree(const std::string& host, uint16_t port) {
  bool v6 = host.find(':') != std::string::npos;
  int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // as the HTTP server binds
  bool ok = false;
  if (v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    ok = inet_pton(AF_INET6, host.c_str(), &a.sin6_addr) == 1 &&
         bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    ok = inet_pton(AF_INET, host.c_str(), &a.sin_addr) == 1 &&
         bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  close(fd);
  return ok;
}

void KeepPreviousPort(const std::string& dir, std::pair<std::string, uint16_t>& listen) {
  if (listen.second != 0) return;
  std::ifstream in(dir + "/server.port");
  int port = 0;
  if (!(in >> port) || port <= 0 || port > 65535) return;
  if (PortFree(listen.first, static_cast<uint16_t>(port))) {
    listen.second = static_cast<uint16_t>(port);
    LogInfo("keeping port " + std::to_string(port) + " of the previous start (" + dir +
            "/server.port)");
  } else {
    LogWarn("port " + std::to_string(port) +
            " of the previous start is taken: serving on a new port; agents given the old "
            "address must be pointed at the new one");
  }
}

// Takes DIR/lock (flock, held until the process ends): one baton at a time uses a data
// directory, be it a server's or an agent's (two agents on one directory would each adopt
// and report the other's jobs).
Status LockDir(const std::string& dir, const std::string& doing) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Internal("cannot create the data directory " + dir + ": " + ec.message());
  int lock_fd = open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0) return Internal("cannot open " + dir + "/lock: " + std::strerror(errno));
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0)
    return Conflict("another baton already " + doing + " " + dir + " (" + dir + "/lock is held)");
  return Status::Ok();
}

// Logs a warning when `dir`'s disk has less free than `reserve` (--disk-reserve).
void WarnWithinReserve(const std::string& dir, int64_t reserve) {
  struct statvfs fs {};
  if (statvfs(dir.c_str(), &fs) != 0) return;
  const int64_t free_bytes = static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
  if (free_bytes >= reserve) return;
  LogInfo("warning: " + dir + " has " + FormatSize(free_bytes) +
          " free, less than the reserve of " + FormatSize(reserve) +
          " (--disk-reserve): job output is not kept until space is freed there");
}

uint64_t RaiseDescriptorLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 1024;
  if (r.rlim_cur < r.rlim_max) {
    rlimit raised{r.rlim_max, r.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
  }
  return r.rlim_cur;
}

}  // namespace baton::server
