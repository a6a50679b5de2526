// baton-shim: the small program between the agent and one job. The agent starts it with
// posix_spawn (cheap for a large parent: no page tables are copied); it leaves the agent's
// session, starts the job in its own process group with stdout and stderr appended to the
// job's log, records the job's pid, waits for it, ends whatever the job left in its group and
// writes how the job ended. It outlives the agent, so a restarted agent still learns every
// job's fate (see executor.h).
//
//   baton-shim LOG STATUS PIDFILE WORKDIR CPUS MEMNODE PROGRAM ARGV0 [ARG...]
//     (environment: the job's; CPUS a cpulist such as 0-15,32-47 and MEMNODE a NUMA node,
//      each "-" for none)
//
// Deliberately plain: no C++ library beyond what the C library offers, so that it starts fast.
#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

void WriteAll(int fd, const char* s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

// Writes `text` to `path` through a temporary file and a rename: all or nothing. Not fsynced:
// the files only need to outlive the agent process, not the machine (a machine that crashes
// takes its jobs with it, and the agent then reports them lost), and an fsync per job costs
// job throughput.
void WriteFileAtomic(const char* path, const char* text) {
  char tmp[4200];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= static_cast<int>(sizeof tmp)) return;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  WriteAll(fd, text);
  close(fd);
  rename(tmp, path);
}

// In the vforked child: only async-signal-safe calls, ending in execve or _exit.
[[noreturn]] void RunJob(int log_fd, const char* workdir, const char* program, char** argv) {
  setpgid(0, 0);
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd >= 0) dup2(null_fd, 0);
  dup2(log_fd, 1);
  dup2(log_fd, 2);
  if (workdir[0] != '\0' && chdir(workdir) != 0) {
    int err = errno;
    WriteAll(2, "baton: cannot enter the working directory ");
    WriteAll(2, workdir);
    WriteAll(2, ": ");
    WriteAll(2, strerror(err));
    WriteAll(2, "\n");
    _exit(126);
  }
  execve(program, argv, environ);
  int err = errno;
  WriteAll(2, "baton: cannot execute '");
  WriteAll(2, argv[0]);
  WriteAll(2, "': ");
  WriteAll(2, strerror(err));
  WriteAll(2, "\n");
  _exit(err == ENOENT ? 127 : 126);
}

// Parses a cpulist ("0-3,8,10-11") and binds this process (and so the job) to it.
bool BindCpus(const char* list) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const char* p = list;
  while (*p != '\0') {
    char* end = nullptr;
    long a = strtol(p, &end, 10);
    if (end == p || a < 0 || a >= CPU_SETSIZE) return false;
    long b = a;
    p = end;
    if (*p == '-') {
      b = strtol(p + 1, &end, 10);
      if (end == p + 1 || b < a || b >= CPU_SETSIZE) return false;
      p = end;
    }
    for (long c = a; c <= b; ++c) CPU_SET(static_cast<int>(c), &set);
    if (*p == ',') ++p;
    else if (*p != '\0') return false;
  }
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

// set_mempolicy(MPOL_PREFERRED) for one node: allocations come from there while it has room.
bool PreferMemoryNode(int node) {
  if (node < 0 || node >= 1024) return false;
  unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {};
  mask[node / (8 * sizeof(unsigned long))] |= 1UL << (node % (8 * sizeof(unsigned long)));
  const int kMpolPreferred = 1;
  return syscall(SYS_set_mempolicy, kMpolPreferred, mask, 1024 + 1) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 9) {
    WriteAll(2, "usage: baton-shim LOG STATUS PIDFILE WORKDIR CPUS MEMNODE PROGRAM ARGV0 [ARG...] "
                "(started by the baton agent)\n");
    return 2;
  }
  const char* log_path = argv[1];
  const char* status_path = argv[2];
  const char* pid_path = argv[3];
  const char* workdir = argv[4];
  const char* cpus = argv[5];
  const char* memory_node = argv[6];
  const char* program = argv[7];
  char** job_argv = argv + 8;

  setsid();  // out of the agent's session: terminal signals and the agent's death pass it by
  // Whatever the agent had open without close-on-exec (its listening and client sockets)
  // must not reach the job: a job holding the server's port would outlive a restart.
  close_range(3, ~0U, 0);
  int log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    WriteFileAtomic(status_path, "exit 126\n");
    return 0;
  }
  // The job (and all it starts) runs on the CPUs of its GPUs' NUMA node and prefers that
  // node's memory. A failure is written to the job's log, and the job runs unbound.
  if (strcmp(cpus, "-") != 0 && !BindCpus(cpus)) {
    WriteAll(log_fd, "baton: cannot bind the job to CPUs ");
    WriteAll(log_fd, cpus);
    WriteAll(log_fd, "; it runs on any CPU\n");
  }
  if (strcmp(memory_node, "-") != 0 && !PreferMemoryNode(atoi(memory_node))) {
    WriteAll(log_fd, "baton: cannot prefer the memory of NUMA node ");
    WriteAll(log_fd, memory_node);
    WriteAll(log_fd, "; the job's memory comes from any node\n");
  }
  pid_t job = vfork();
  if (job == 0) RunJob(log_fd, workdir, program, job_argv);
  char text[64];
  if (job < 0) {
    WriteAll(log_fd, "baton: cannot start the job: fork failed\n");
    WriteFileAtomic(status_path, "exit 126\n");
    return 0;
  }
  // Both sides set the process group, so that it exists whichever runs first.
  setpgid(job, job);
  close(log_fd);
  snprintf(text, sizeof text, "%d\n", static_cast<int>(job));
  WriteFileAtomic(pid_path, text);

  int status = 0;
  while (waitpid(job, &status, 0) < 0 && errno == EINTR) {
  }
  // Whatever the job left behind in its group ends with it.
  kill(-job, SIGKILL);
  if (WIFSIGNALED(status)) {
    snprintf(text, sizeof text, "signal %d\n", WTERMSIG(status));
  } else {
    snprintf(text, sizeof text, "exit %d\n", WEXITSTATUS(status));
  }
  WriteFileAtomic(status_path, text);
  return 0;
}
