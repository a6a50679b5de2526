// The agent's end of tunnels (`baton run`, `attach`, `forward`; api/relay.h): for each tunnel
// order, a thread opens the controller's /v1/agent/tunnels/{id} and connects it to the job's
// session (the Unix socket its shim serves, executor.h) or to a TCP port on this node's
// loopback that the job's user listens on, and copies bytes both ways until either side ends. The
// threads end with the agent; the job and its session do not (a client attaches again).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "agent/agent.h"
#include "core/session_frame.h"
#include "core/splice.h"
#include "core/step_wire.h"

namespace baton::agent {

namespace {

// A connected Unix socket at `path`; a path longer than sun_path holds is reached through its
// directory's descriptor (/proc/self/fd/N/NAME). -1 with errno on failure.
int ConnectUnix(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  int dir = -1;
  std::string name = path;
  if (name.size() >= sizeof addr.sun_path) {
    size_t slash = path.rfind('/');
    dir = ::open(path.substr(0, slash).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return -1;
    name = "/proc/self/fd/" + std::to_string(dir) + path.substr(slash);
    if (name.size() >= sizeof addr.sun_path) {
      ::close(dir);
      errno = ENAMETOOLONG;
      return -1;
    }
  }
  std::memcpy(addr.sun_path, name.c_str(), name.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int rc = fd < 0 ? -1 : ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  int err = errno;
  if (dir >= 0) ::close(dir);
  if (rc != 0 && fd >= 0) ::close(fd);
  errno = err;
  return rc == 0 ? fd : -1;
}

// A TCP connection to `port` on this host's loopback (IPv4, then IPv6). -1 with errno.
int ConnectLoopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_port = htons(static_cast<uint16_t>(port));
  v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&v4), sizeof v4) == 0) return fd;
  if (fd >= 0) ::close(fd);
  fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_port = htons(static_cast<uint16_t>(port));
  v6.sin6_addr = in6addr_loopback;
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&v6), sizeof v6) == 0) return fd;
  int err = errno;
  if (fd >= 0) ::close(fd);
  errno = err;
  return -1;
}

// The owner of the socket listening where `fd` is connected, on this host (/proc/net/tcp and
// tcp6: a LISTEN entry, state 0A, at the peer's address or the wildcard, on its port); -1 when
// none is found.
long ListenerUid(int fd) {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return -1;
  std::string address;
  int port = 0;
  const char* table = "/proc/net/tcp";
  char hex[40];
  if (peer.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&peer);
    std::snprintf(hex, sizeof hex, "%08X", a->sin_addr.s_addr);
    port = ntohs(a->sin_port);
  } else if (peer.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&peer);
    uint32_t words[4];
    std::memcpy(words, &a->sin6_addr, sizeof words);
    std::snprintf(hex, sizeof hex, "%08X%08X%08X%08X", words[0], words[1], words[2], words[3]);
    port = ntohs(a->sin6_port);
    table = "/proc/net/tcp6";
  } else {
    return -1;
  }
  address = hex;
  auto scan = [&](const char* path, const std::vector<std::string>& at_any) -> long {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits;
      long uid = -1;
      if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid))
        continue;
      size_t colon = local.find(':');
      if (state != "0A" || colon == std::string::npos) continue;
      if (std::strtol(local.c_str() + colon + 1, nullptr, 16) != port) continue;
      if (std::find(at_any.begin(), at_any.end(), local.substr(0, colon)) != at_any.end())
        return uid;
    }
    return -1;
  };
  long uid = scan(table, {address, std::string(address.size(), '0')});
  // An IPv4 peer may be an IPv6 socket's that listens on every address.
  if (uid < 0 && peer.ss_family == AF_INET) uid = scan("/proc/net/tcp6", {std::string(32, '0')});
  return uid;
}

}  // namespace

std::string Agent::SessionSocket(JobId id, int attempt) const {
  return RunFile(id, attempt) + ".sock";
}

void Agent::OpenTunnel(const TunnelOrder& t) {
  std::string target;
  // A port (a forward, a notebook, an allocation's host): the job's user, who alone may be
  // what listens there. Another user's process may have taken the port first: a notebook's
  // is known from its job id, an allocation host's is one the controller chose.
  long owner = -1;
  if (t.port != 0) {
    const bool step = !t.step_key.empty();
    auto it = jobs_.find(JobAttempt{t.job, t.attempt});
    // Jobs run as their users under a root agent, else as the agent's own (whose jobs' users
    // need no account here, as at launch).
    Result<long> uid = static_cast<long>(geteuid());
    if (it == jobs_.end() || it->second.exited || (step && !it->second.order.alloc)) {
      uid = Err(NotFound(step ? "it has no allocation running here" : "it is not running here"));
    } else if (as_root_) {
      auto user = LookupUnixUser(it->second.order.user);
      uid = user ? Result<long>(static_cast<long>(user->uid)) : Err(user.error());
    }
    if (!uid) {
      LogWarn("tunnel to job " + t.job.ToString() + (step ? "'s allocation: " : "'s port: ") +
                  uid.error().message(),
              Context(t.job));
      return;
    }
    owner = *uid;
  }
  if (t.port == 0) {
    auto it = jobs_.find(JobAttempt{t.job, t.attempt});
    if (it == jobs_.end() || it->second.exited ||
        it->second.order.interactive == Interactive::kNone) {
      LogWarn("tunnel to job " + t.job.ToString() + "'s session: it has none running here",
              Context(t.job));
      return;
    }
    target = SessionSocket(t.job, t.attempt);
  }
  std::lock_guard lock(tunnels_mu_);
  for (auto it = tunnels_.begin(); it != tunnels_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = tunnels_.erase(it);
    } else {
      ++it;
    }
  }
  if (tunnel_stop_[0] < 0 && pipe2(tunnel_stop_, O_CLOEXEC) != 0) {
    LogWarn("tunnel: no pipe: " + std::string(std::strerror(errno)), Context(t.job));
    return;
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  int stop = tunnel_stop_[0];
  std::thread thread([this, t, target, stop, done, owner] {
    RunTunnel(t, target, stop, owner);
    *done = true;
  });
  tunnels_.push_back(Tunnel{std::move(thread), done});
}

void Agent::RunTunnel(const TunnelOrder& t, const std::string& socket, int stop, long owner) {
  auto client = net::HttpClient::Create(servers_->Current(), Credential(), options_.tls);
  if (!client) return;
  auto up =
      (*client)->Upgrade("/v1/agent/tunnels/" + t.id, "baton-tunnel", std::chrono::seconds(10));
  if (!up || up->fd < 0) {
    LogWarn("tunnel to job " + t.job.ToString() +
                ": the controller refused it: " + (up ? up->refused.body : up.error().message()),
            Context(t.job));
    return;
  }
  int local = -1;
  std::string why;       // why the connection failed, when said better than errno
  bool refused = false;  // what listens at the port is not the job's user's
  if (!t.step_key.empty()) {
    // An allocation's host listens where the other nodes reach this one (BATON_STEP_BIND).
    local = slurm::ConnectTo(options_.address.empty() ? options_.name : options_.address, t.port, 0,
                             &why);
  } else {
    local = t.port == 0 ? ConnectUnix(socket) : ConnectLoopback(t.port);
  }
  // A service bound to the address other nodes reach this one at is not on the loopback.
  if (local < 0 && t.port != 0 && t.step_key.empty() && !options_.address.empty()) {
    int err = errno;
    std::string also;
    local = slurm::ConnectTo(options_.address, t.port, 0, &also);
    errno = err;
  }
  // A port reaches only what the job's user listens on (see OpenTunnel): a forward's bytes
  // and an allocation host's key go to no one else.
  if (local >= 0 && t.port != 0 && ListenerUid(local) != owner) {
    ::close(local);
    local = -1;
    refused = true;
    why = "what listens there is not the job's user's";
  }
  // A session just started: its shim makes the socket a moment after the job is reported
  // started, and a client may attach in between. Wait for it a little.
  for (int i = 0; i < 150 && local < 0 && t.port == 0 && (errno == ENOENT || errno == ECONNREFUSED);
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    local = ConnectUnix(socket);
  }
  if (local < 0) {
    if (why.empty()) why = std::strerror(errno);
    std::string what = t.port == 0 ? "its session" : "port " + std::to_string(t.port);
    if (t.port == 0) {
      (void)WriteAllTo(up->fd,
                       EncodeFrame(FrameType::kNote, "baton: cannot reach job " + t.job.ToString() +
                                                         "'s session: " + why));
    }
    // Another user's process at the job's port is worth an operator's look.
    (refused ? LogWarn : LogInfo)(
        "tunnel to job " + t.job.ToString() + ": cannot connect to " + what + ": " + why,
        Context(t.job));
    ::close(up->fd);
    return;
  }
  int one = 1;
  if (t.port != 0) ::setsockopt(local, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // An allocation's host: the request's head, with the key its client never sees.
  if (!t.step_key.empty()) {
    std::string head = slurm::RequestHead(t.step_key);
    if (!WriteAllTo(local, head)) {
      LogInfo("tunnel to job " + t.job.ToString() + ": the allocation's host went away",
              Context(t.job));
      ::close(local);
      ::close(up->fd);
      return;
    }
  }
  {
    // Any open tunnel is someone at the job: a terminal, or a browser on a notebook's port.
    std::lock_guard lock(tunnels_mu_);
    ++attached_[t.job];
  }
  Splice(up->fd, local, stop, up->early);
  {
    std::lock_guard lock(tunnels_mu_);
    if (--attached_[t.job] <= 0) attached_.erase(t.job);
  }
  ::close(local);
  ::close(up->fd);
}

std::vector<JobId> Agent::AttachedSessions() {
  std::lock_guard lock(tunnels_mu_);
  std::vector<JobId> out;
  for (const auto& [job, n] : attached_) out.push_back(job);
  return out;
}

void Agent::DeliverNote(const SessionNote& note) {
  auto it = jobs_.find(JobAttempt{note.job, note.attempt});
  if (it == jobs_.end() || it->second.exited || it->second.order.interactive == Interactive::kNone)
    return;
  int fd = ConnectUnix(SessionSocket(note.job, note.attempt));
  if (fd < 0) {
    LogWarn("cannot tell job " + note.job.ToString() + "'s session: " + std::strerror(errno),
            Context(note.job));
    return;
  }
  // A connection whose first frame is a note is not a client: the shim shows the line and
  // closes it (shim/session.cc).
  (void)WriteAllTo(fd, EncodeFrame(FrameType::kNote, note.message));
  ::close(fd);
}

void Agent::StopTunnels() {
  std::lock_guard lock(tunnels_mu_);
  if (tunnel_stop_[1] >= 0) ::close(tunnel_stop_[1]);
  for (Tunnel& tunnel : tunnels_) tunnel.thread.join();
  tunnels_.clear();
  if (tunnel_stop_[0] >= 0) ::close(tunnel_stop_[0]);
  tunnel_stop_[0] = tunnel_stop_[1] = -1;
}

}  // namespace baton::agent
