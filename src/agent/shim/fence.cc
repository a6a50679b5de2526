// The shim's side of the agent's fence (fence.h).
#include "fence.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

namespace {

// The fence. The agent keeps a lease in its run directory (run/lease: "DEADLINE GRACE", in
// CLOCK_BOOTTIME milliseconds) that it moves on each time it reaches a controller. A
// controller requeues the jobs of a node it has not heard from only once that node's fence
// has surely passed; so once the deadline passes, the shim stops its job (SIGTERM to its
// group, SIGKILL GRACE later) whether or not the agent is alive to do it: a stopped or
// partitioned agent cannot leave a second copy of the job running. No lease file: no fence.
// Looked at once a second from SIGALRM; everything the handler calls is async-signal-safe.
struct Fence {
  char lease_path[4200] = "";
  pid_t group = 0;
  int64_t kill_at = 0;  // after SIGTERM: when SIGKILL follows
  volatile sig_atomic_t fenced = 0;
};
Fence g_fence;

}  // namespace

bool Fenced() { return g_fence.fenced != 0; }

namespace {

int64_t BootMillis() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// "DEADLINE GRACE\n": two whole numbers; false for anything else.
bool ReadLease(const char* path, int64_t* deadline, int64_t* grace) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  char text[64];
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return false;
  text[n] = '\0';
  int64_t values[2] = {0, 0};
  const char* p = text;
  for (int64_t& v : values) {
    if (*p < '0' || *p > '9') return false;
    for (; *p >= '0' && *p <= '9'; ++p) {
      if (v > (INT64_MAX - 9) / 10) return false;
      v = v * 10 + (*p - '0');
    }
    if (*p == ' ') ++p;
  }
  *deadline = values[0];
  *grace = values[1];
  return true;
}

void CheckFence(int) {
  int saved = errno;
  int64_t now = BootMillis();
  if (g_fence.fenced) {
    if (g_fence.kill_at != 0 && now >= g_fence.kill_at) {
      kill(-g_fence.group, SIGKILL);
      g_fence.kill_at = 0;
    }
  } else {
    int64_t deadline = 0, grace = 0;
    if (ReadLease(g_fence.lease_path, &deadline, &grace) && now >= deadline) {
      g_fence.fenced = 1;
      g_fence.kill_at = now + (grace > 0 ? grace : 1);
      kill(-g_fence.group, SIGTERM);
    }
  }
  errno = saved;
}

}  // namespace

// Arms the fence for the job's process group: the lease beside the status file, looked at
// every second until the shim exits.
void ArmFence(const char* status_path, pid_t group) {
  const char* slash = strrchr(status_path, '/');
  size_t dir = slash == nullptr ? 0 : static_cast<size_t>(slash - status_path) + 1;
  if (dir + sizeof "lease" > sizeof g_fence.lease_path) return;
  memcpy(g_fence.lease_path, status_path, dir);
  memcpy(g_fence.lease_path + dir, "lease", sizeof "lease");
  g_fence.group = group;
  struct sigaction sa {};
  sa.sa_handler = CheckFence;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, nullptr);
  sigset_t alarm;
  sigemptyset(&alarm);
  sigaddset(&alarm, SIGALRM);
  sigprocmask(SIG_UNBLOCK, &alarm, nullptr);
  itimerval every_second{.it_interval = {1, 0}, .it_value = {1, 0}};
  setitimer(ITIMER_REAL, &every_second, nullptr);
}
