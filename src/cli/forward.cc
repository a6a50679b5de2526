// `baton forward ID [LOCAL:]REMOTE`: each connection to 127.0.0.1:LOCAL becomes a tunnel to
// port REMOTE on the loopback of the job's first node (through the controller and the agent,
// api/relay.h), copied both ways on a thread of its own, until Ctrl-C or the job ends.
#include "cli/forward.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstring>
#include <functional>
#include <iostream>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/signals.h"
#include "core/splice.h"

namespace baton::cli {

namespace {

// A listening socket on 127.0.0.1:port (0: a free one); -1 with errno.
int ListenLocal(int port, int* bound) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  *bound = ntohs(addr.sin_port);
  return fd;
}

// The connections being relayed, each on its thread; closing `stop` ends them all.
class Relays {
 public:
  Relays() {
    if (pipe2(stop_, O_CLOEXEC) != 0) stop_[0] = stop_[1] = -1;
  }
  ~Relays() {
    if (stop_[1] >= 0) close(stop_[1]);
    for (auto& r : relays_) r.thread.join();
    if (stop_[0] >= 0) close(stop_[0]);
  }
  void Start(ApiClient& api, const std::string& target, int conn) {
    Reap();
    auto done = std::make_shared<std::atomic<bool>>(false);
    int stop = stop_[0];
    std::thread t([&api, target, conn, stop, done, this] {
      auto tunnel = api.OpenTunnel(target);
      if (tunnel) {
        Splice(tunnel->fd, conn, stop, tunnel->early);
        close(tunnel->fd);
      } else {
        std::lock_guard lock(mu_);
        std::cerr << "baton: " << tunnel.error().message() << std::endl;
      }
      close(conn);
      *done = true;
    });
    relays_.push_back(Relay{std::move(t), done});
  }

 private:
  struct Relay {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void Reap() {
    for (auto it = relays_.begin(); it != relays_.end();) {
      if (*it->done) {
        it->thread.join();
        it = relays_.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::mutex mu_;  // one error line at a time
  std::list<Relay> relays_;
  int stop_[2] = {-1, -1};
};

// Whether something answers HTTP at the job's port: one request through a tunnel.
bool AnswersHttp(ApiClient& api, const std::string& target) {
  auto tunnel = api.OpenTunnel(target);
  if (!tunnel) return false;
  timeval tv = {5, 0};
  setsockopt(tunnel->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got = tunnel->early;
  if (WriteAllTo(tunnel->fd, "GET /api/status HTTP/1.0\r\nHost: localhost\r\n\r\n")) {
    char buf[64];
    while (got.size() < 5) {
      ssize_t n = read(tunnel->fd, buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
  }
  close(tunnel->fd);
  return got.starts_with("HTTP/");
}

}  // namespace

int ForwardUntilEnd(ApiClient& api, const std::string& ref, PortPair pair,
                    const std::function<void(int local)>& ready) {
  Signals signals({SIGINT, SIGTERM, SIGHUP});  // before the relays' threads: they inherit it
  int local = 0;
  int listener = ListenLocal(pair.local, &local);
  if (listener < 0) {
    int err = errno;
    return Fail(Unavailable("forward: cannot listen on 127.0.0.1:" + std::to_string(pair.local) +
                            ": " + std::strerror(err)));
  }
  ready(local);
  std::string target = "/v1/jobs/" + ref + "/forward?port=" + std::to_string(pair.remote);
  bool interrupted = false;
  {
    Relays relays;
    for (bool going = true; going;) {
      pollfd fds[2] = {{.fd = listener, .events = POLLIN, .revents = 0},
                       {.fd = signals.fd(), .events = POLLIN, .revents = 0}};
      int n = poll(fds, 2, 2000);
      if (fds[1].revents != 0) {
        interrupted = true;
        break;
      }
      if (fds[0].revents != 0) {
        int c = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        int one = 1;
        if (c >= 0) setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (c >= 0) relays.Start(api, target, c);
      }
      if (n == 0) {
        auto now = api.GetJob(ref);
        going = !now || !IsTerminal(now->state);
        if (!going)
          std::cerr << "baton: job " << ref << " has ended; forwarding stops" << std::endl;
      }
    }
  }
  close(listener);
  return interrupted ? 130 : 0;
}

int Forward(const Connection& conn, const std::string& ref, const std::string& ports) {
  auto pair = ParsePortPair(ports);
  if (!pair) return Usage(pair.error());
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto job = (*api)->GetJob(ref);
  if (!job) return Fail(job.error());
  if (job->state != JobState::kRunning) {
    return Fail(Conflict("job " + ref + " is " + std::string(JobStateName(job->state)) +
                         (IsTerminal(job->state) ? "" : "; forward once it runs")));
  }
  std::string node = job->allocation.empty() ? "?" : job->allocation.front().node;
  int code = ForwardUntilEnd(**api, ref, *pair, [&](int local) {
    std::cout << "forwarding 127.0.0.1:" << local << " to port " << pair->remote << " of job "
              << ref << " on " << node << std::endl;
    std::cerr << "baton: http://127.0.0.1:" << local << "/ reaches it; Ctrl-C stops" << std::endl;
  });
  return code == 130 ? 0 : code;  // Ctrl-C is how a forward is stopped
}

int WaitForHttp(ApiClient& api, const std::string& ref, int port) {
  std::string target = "/v1/jobs/" + ref + "/forward?port=" + std::to_string(port);
  for (int i = 0; i < 300; ++i) {
    if (AnswersHttp(api, target)) return 0;
    auto job = api.GetJob(ref);
    if (job && IsTerminal(job->state)) return ExitCodeOf(*job);
    usleep(500'000);
  }
  return Fail(Unavailable("job " + ref + " has not answered on port " + std::to_string(port) +
                          " for 150s (`baton logs " + ref + "` says why)"));
}

Result<PortPair> ParsePortPair(const std::string& text) {
  auto port = [&](std::string_view s, int lo) -> std::optional<int> {
    int v = -1;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < lo || v > 65535) return std::nullopt;
    return v;
  };
  size_t colon = text.find(':');
  std::optional<int> remote = port(colon == std::string::npos ? text : text.substr(colon + 1), 1);
  std::optional<int> local =
      colon == std::string::npos ? remote : port(std::string_view(text).substr(0, colon), 0);
  if (!remote || !local) {
    return Err(InvalidArgument("forward: \"" + text.substr(0, 32) +
                               "\" is not [LOCAL:]REMOTE (TCP ports, e.g. 8888 or 9000:8888)"));
  }
  return PortPair{.local = *local, .remote = *remote};
}

}  // namespace baton::cli
