#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

namespace {

constexpr uint32_t kMaxClientFrame = 64 * 1024;  // the CLI sends at most this much a frame
constexpr size_t kRingBytes = 16 * 1024;         // the output replayed to a client that attaches

// The last output, replayed to a client that attaches (a shell's prompt came before it did).
char g_ring[kRingBytes];
size_t g_ring_len = 0, g_ring_pos = 0;
// What the client sent that is not a whole frame yet.
char g_in[kMaxClientFrame + 5];
size_t g_in_len = 0;
// What a connection not yet known to be a client sent (its first frame, at most a note).
char g_pending[4096 + 5];
size_t g_pending_len = 0;

void Note(int log_fd, const char* what, const char* detail) {
  dprintf(log_fd, "baton: %s%s%s\n", what, detail[0] != '\0' ? ": " : "", detail);
}

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool SendFrame(int fd, char type, const char* p, size_t n) {
  unsigned char head[5] = {static_cast<unsigned char>(type), static_cast<unsigned char>(n >> 24),
                           static_cast<unsigned char>(n >> 16), static_cast<unsigned char>(n >> 8),
                           static_cast<unsigned char>(n)};
  return SendAll(fd, reinterpret_cast<char*>(head), 5) && SendAll(fd, p, n);
}

void DropClient(ShimSession* s) {
  if (s->client_fd >= 0) close(s->client_fd);
  s->client_fd = -1;
  g_in_len = 0;
}

// Binds a Unix socket at `path`, through its directory's descriptor when the path is longer
// than sun_path holds.
int Listen(const char* path) {
  sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  int dir = -1;
  if (strlen(path) >= sizeof addr.sun_path) {
    const char* slash = strrchr(path, '/');
    if (slash == nullptr) return -1;
    char parent[4200];
    size_t n = static_cast<size_t>(slash - path);
    if (n >= sizeof parent) return -1;
    memcpy(parent, path, n);
    parent[n] = '\0';
    dir = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return -1;
    if (snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d%s", dir, slash) >=
        static_cast<int>(sizeof addr.sun_path)) {
      close(dir);
      return -1;
    }
  } else {
    memcpy(addr.sun_path, path, strlen(path) + 1);
  }
  unlink(addr.sun_path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  mode_t old = umask(077);  // only the agent's user (and root) may connect
  bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
            listen(fd, 4) == 0;
  umask(old);
  if (dir >= 0) close(dir);
  if (!ok && fd >= 0) close(fd);
  return ok ? fd : -1;
}

// Output of the terminal: to the log, the ring and the client.
void Output(ShimSession* s, int log_fd, const char* p, size_t n) {
  size_t off = 0;
  while (off < n) {
    ssize_t w = write(log_fd, p + off, n - off);
    if (w <= 0) break;
    off += static_cast<size_t>(w);
  }
  for (size_t i = 0; i < n; ++i) {
    g_ring[g_ring_pos] = p[i];
    g_ring_pos = (g_ring_pos + 1) % kRingBytes;
  }
  g_ring_len = g_ring_len + n > kRingBytes ? kRingBytes : g_ring_len + n;
  if (s->client_fd >= 0 && !SendFrame(s->client_fd, 'd', p, n)) DropClient(s);
}

// Reads what the terminal has now; false once it has no writer left (the job ended).
bool DrainTerminal(ShimSession* s, int log_fd) {
  char buf[16384];
  for (;;) {
    ssize_t n = read(s->master, buf, sizeof buf);
    if (n > 0) {
      Output(s, log_fd, buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

// Input for the job: to its terminal (waiting, while reading its output, for room: a job that
// reads nothing for 5 s loses the rest) or its stdin pipe.
void Input(ShimSession* s, int log_fd, const char* p, size_t n) {
  int fd = s->tty ? s->master : s->stdin_w;
  if (fd < 0) return;
  for (int waited = 0; n > 0 && waited < 50;) {
    ssize_t w = write(fd, p, n);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {
      if (s->tty) DrainTerminal(s, log_fd);
      pollfd pf = {fd, POLLOUT, 0};
      poll(&pf, 1, 100);
      ++waited;
      continue;
    }
    if (!s->tty) {  // the job closed its stdin
      close(s->stdin_w);
      s->stdin_w = -1;
    }
    return;
  }
}

void Resize(ShimSession* s, const char* p, size_t n) {
  char text[32];
  if (!s->tty || n == 0 || n >= sizeof text) return;
  memcpy(text, p, n);
  text[n] = '\0';
  char* end = nullptr;
  long rows = strtol(text, &end, 10);
  long cols = strtol(end, nullptr, 10);
  if (rows <= 0 || cols <= 0 || rows > 10000 || cols > 10000) return;
  winsize ws;
  memset(&ws, 0, sizeof ws);
  ws.ws_row = static_cast<unsigned short>(rows);
  ws.ws_col = static_cast<unsigned short>(cols);
  ioctl(s->master, TIOCSWINSZ, &ws);  // the kernel tells the job (SIGWINCH)
}

// Acts on the whole frames in g_in; a malformed stream drops the client.
void HandleFrames(ShimSession* s, int log_fd) {
  size_t at = 0;
  while (g_in_len - at >= 5) {
    const unsigned char* h = reinterpret_cast<const unsigned char*>(g_in + at);
    uint32_t len = (uint32_t{h[1]} << 24) | (uint32_t{h[2]} << 16) | (uint32_t{h[3]} << 8) | h[4];
    if (len > kMaxClientFrame) return DropClient(s);
    if (g_in_len - at - 5 < len) break;
    const char* payload = g_in + at + 5;
    if (h[0] == 'd') {
      Input(s, log_fd, payload, len);
    } else if (h[0] == 'w') {
      Resize(s, payload, len);
    } else if (h[0] == 'e' && !s->tty && s->stdin_w >= 0) {
      close(s->stdin_w);
      s->stdin_w = -1;
    } else if (h[0] != 'e') {
      return DropClient(s);
    }
    at += 5 + len;
    if (s->client_fd < 0) return;
  }
  memmove(g_in, g_in + at, g_in_len - at);
  g_in_len -= at;
}

void FromClient(ShimSession* s, int log_fd) {
  ssize_t n = read(s->client_fd, g_in + g_in_len, sizeof g_in - g_in_len);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) return DropClient(s);  // detached
  g_in_len += static_cast<size_t>(n);
  HandleFrames(s, log_fd);
}

void Accept(ShimSession* s) {
  int fd = accept4(s->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return;
  if (s->pending_fd >= 0) close(s->pending_fd);  // one that said nothing gives way
  s->pending_fd = fd;
  g_pending_len = 0;
}

// The pending connection becomes the client: the one before is told, the screen so far replayed.
void Promote(ShimSession* s) {
  if (s->client_fd >= 0) {
    const char note[] = "baton: another client attached to this session; this one is detached";
    SendFrame(s->client_fd, 'n', note, sizeof note - 1);
    DropClient(s);
  }
  int fd = s->pending_fd;
  s->pending_fd = -1;
  timeval tv = {5, 0};  // a client that stops reading is dropped, not waited for
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  s->client_fd = fd;
  if (s->tty && g_ring_len > 0) {
    char replay[kRingBytes];
    size_t start = (g_ring_pos + kRingBytes - g_ring_len) % kRingBytes;
    for (size_t i = 0; i < g_ring_len; ++i) replay[i] = g_ring[(start + i) % kRingBytes];
    if (!SendFrame(fd, 'd', replay, g_ring_len)) DropClient(s);
  }
}

// The pending connection's first frame: a note is shown and the connection closed; anything
// else makes it the client, and what it sent is acted on.
void FromPending(ShimSession* s, int log_fd) {
  ssize_t n = read(s->pending_fd, g_pending + g_pending_len, sizeof g_pending - g_pending_len);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    close(s->pending_fd);
    s->pending_fd = -1;
    return;
  }
  g_pending_len += static_cast<size_t>(n);
  if (g_pending_len < 5) return;
  const unsigned char* h = reinterpret_cast<const unsigned char*>(g_pending);
  uint32_t len = (uint32_t{h[1]} << 24) | (uint32_t{h[2]} << 16) | (uint32_t{h[3]} << 8) | h[4];
  if (h[0] == 'n') {
    if (len > sizeof g_pending - 5) {
      close(s->pending_fd);
      s->pending_fd = -1;
      return;
    }
    if (g_pending_len - 5 < len) return;
    Output(s, log_fd, "\r\n", 2);
    Output(s, log_fd, g_pending + 5, len);
    Output(s, log_fd, "\r\n", 2);
    close(s->pending_fd);
    s->pending_fd = -1;
    return;
  }
  Promote(s);
  if (s->client_fd < 0) return;
  memcpy(g_in, g_pending, g_pending_len);
  g_in_len = g_pending_len;
  HandleFrames(s, log_fd);
}

}  // namespace

bool OpenSession(const char* socket_path, const char* mode, int log_fd, ShimSession* s,
                 int* child_stdin) {
  s->socket_path = socket_path;
  s->tty = strcmp(mode, "tty") == 0;
  if (!s->tty && strcmp(mode, "stdin") != 0) {
    Note(log_fd, "the agent gave the shim a bad session mode", mode);
    return false;
  }
  s->listen_fd = Listen(socket_path);
  if (s->listen_fd < 0) {
    Note(log_fd, "cannot serve the session's socket", strerror(errno));
    return false;
  }
  if (s->tty) {
    s->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s->master < 0 || grantpt(s->master) != 0 || unlockpt(s->master) != 0 ||
        ptsname_r(s->master, s->tty_path, sizeof s->tty_path) != 0) {
      Note(log_fd, "cannot open a terminal for the session", strerror(errno));
      return false;
    }
    winsize ws;
    memset(&ws, 0, sizeof ws);
    ws.ws_row = 24;
    ws.ws_col = 80;
    ioctl(s->master, TIOCSWINSZ, &ws);
    fcntl(s->master, F_SETFL, fcntl(s->master, F_GETFL) | O_NONBLOCK);
    return true;
  }
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    Note(log_fd, "cannot make the session's stdin", strerror(errno));
    return false;
  }
  *child_stdin = p[0];
  s->stdin_w = p[1];
  return true;
}

int ServeSession(ShimSession* s, int log_fd, int count, pid_t group) {
  signal(SIGPIPE, SIG_IGN);  // a job that closed its stdin; the processes run already
  int status = 0;
  bool failed = false, terminal_open = s->tty;
  for (int left = count; left > 0;) {
    pollfd fds[4];
    nfds_t n = 0;
    fds[n++] = {s->listen_fd, POLLIN, 0};
    int client_at = -1, master_at = -1, pending_at = -1;
    if (s->client_fd >= 0) {
      client_at = static_cast<int>(n);
      fds[n++] = {s->client_fd, POLLIN, 0};
    }
    if (s->pending_fd >= 0) {
      pending_at = static_cast<int>(n);
      fds[n++] = {s->pending_fd, POLLIN, 0};
    }
    if (terminal_open) {
      master_at = static_cast<int>(n);
      fds[n++] = {s->master, POLLIN, 0};
    }
    poll(fds, n, 50);  // the job's ends are looked for at least this often
    if (fds[0].revents & POLLIN) Accept(s);
    if (client_at >= 0 && fds[client_at].revents != 0 && s->client_fd >= 0) FromClient(s, log_fd);
    if (pending_at >= 0 && fds[pending_at].revents != 0 && s->pending_fd >= 0)
      FromPending(s, log_fd);
    if (master_at >= 0 && fds[master_at].revents != 0) terminal_open = DrainTerminal(s, log_fd);
    for (;;) {
      int st = 0;
      pid_t pid = waitpid(-1, &st, WNOHANG);
      if (pid <= 0) break;
      --left;
      bool bad = WIFSIGNALED(st) || WEXITSTATUS(st) != 0;
      if (bad && !failed) {
        failed = true;
        status = st;
        if (left > 0) kill(-group, SIGKILL);
      }
    }
  }
  if (terminal_open) DrainTerminal(s, log_fd);  // its last words
  return status;
}

void CloseSession(ShimSession* s, const char* how) {
  if (s->client_fd >= 0) SendFrame(s->client_fd, 'x', how, strlen(how));
  DropClient(s);
  if (s->pending_fd >= 0) close(s->pending_fd);
  if (s->listen_fd >= 0) close(s->listen_fd);
  if (s->socket_path != nullptr) unlink(s->socket_path);
  if (s->stdin_w >= 0) close(s->stdin_w);
  if (s->master >= 0) close(s->master);
}
