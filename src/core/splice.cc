#include "core/splice.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>

namespace baton {

bool WriteAllTo(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
      if (::poll(&p, 1, 30'000) <= 0) return false;  // a peer that stops reading is dropped
      continue;
    }
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool ReadExactFrom(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void Splice(int a, int b, int stop_fd, std::string_view a_early) {
  if (!a_early.empty() && !WriteAllTo(b, a_early)) return;
  // open[i]: direction i still carries bytes (0: a to b, 1: b to a).
  bool open[2] = {true, true};
  const int from[2] = {a, b}, to[2] = {b, a};
  std::array<char, 64 * 1024> buf;
  while (open[0] || open[1]) {
    pollfd fds[3];
    nfds_t n = 0;
    int which[3] = {-1, -1, -1};
    for (int i = 0; i < 2; ++i) {
      if (!open[i]) continue;
      fds[n] = {.fd = from[i], .events = POLLIN, .revents = 0};
      which[n++] = i;
    }
    if (stop_fd >= 0) fds[n++] = {.fd = stop_fd, .events = POLLIN, .revents = 0};
    if (::poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (nfds_t k = 0; k < n; ++k) {
      if (fds[k].revents == 0) continue;
      if (which[k] < 0) return;  // stop_fd
      int i = which[k];
      ssize_t got = ::read(from[i], buf.data(), buf.size());
      if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (got < 0) return;
      if (got == 0) {
        open[i] = false;
        ::shutdown(to[i], SHUT_WR);
        continue;
      }
      if (!WriteAllTo(to[i], std::string_view(buf.data(), static_cast<size_t>(got)))) return;
    }
  }
}

}  // namespace baton
