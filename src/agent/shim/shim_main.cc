// baton-shim: the small program between the agent and one job. The agent starts it with
// posix_spawn (cheap for a large parent: no page tables are copied); it leaves the agent's
// session, starts the job in its own process group with stdout and stderr appended to the
// job's log, records the job's pid, waits for it, ends whatever the job left in its group and
// writes how the job ended. It outlives the agent, so a restarted agent still learns every
// job's fate (see executor.h).
// It is linked statically and links nothing of ours, to start fast and small: the few helpers
// it shares in spirit with the agent (whole reads and writes, the atomic status file) are its
// own copies on purpose.
//
//   baton-shim LOG STATUS PIDFILE WORKDIR CPUS MEMNODE CGROUP USER PROCS PROGRAM ARGV0 [ARG...]
//     (environment: the job's; CPUS a cpulist such as 0-15,32-47, MEMNODE a NUMA node, CGROUP
//      the cgroup v2 directory the job joins, or with cgroup v1 the job's directory in each
//      hierarchy, ':' between; USER the ids it runs as, UID:GID:G1,G2,...; PROCS
//      N:RANK0 starts N processes with LOCAL_RANK 0..N-1 and RANK RANK0.. (one per GPU); each
//      "-" for none: one process)
//
// Several processes share one process group (the first one's), so that a signal to the job
// reaches them all; the first to fail ends the others at once (its peers cannot go on without
// it, as torchrun does) and its status is the job's.
//
// Isolation: the shim itself stays as it was started (root, when the agent is), so that it can
// still write the status file; only the job is in CGROUP and becomes USER. The job is created
// inside its cgroup (clone3 with CLONE_INTO_CGROUP, Linux 5.7 and later): moving a running
// process into a cgroup instead takes the kernel's cgroup_threadgroup_rwsem for writing, which
// waits out an RCU grace period, and that wait (10-11 ms measured on an idle host) was the
// largest part of the time from submit to a job running. Where the kernel cannot (older
// kernels, a directory that is not a cgroup, cgroup v1), the job is vforked and writes itself
// into each CGROUP/cgroup.procs before it becomes USER (moving needs the privileges the switch
// drops).
// The agent looks the user up and decides whether a job may run as root.
//
// Deliberately plain: no C++ library beyond what the C library offers, so that it starts fast.
//
//   baton-shim --zygote   (fd 3: requests and replies, fd 4: notices; started by the agent)
//
// Creating a process is what bounds how many short jobs a node runs a second, and an exec is
// the dearest part of it. So the agent keeps one shim as a zygote: for each job it sends the
// zygote the shim's arguments and environment, and the zygote forks a copy of itself (small,
// static, no exec) that runs them exactly as a shim started on its own would. Each job still
// has its own shim, which outlives the zygote and the agent alike. The zygote answers each
// request with the new shim's pid, tells the agent on fd 4 when one of its shims has ended
// (it is their parent and reaps them), and exits when the agent closes fd 3.
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>  // struct clone_args, CLONE_INTO_CGROUP
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fence.h"
#include "session.h"

extern char** environ;

namespace {

// Closes every descriptor from `first` up: close_range where the kernel has it (5.9 and
// later), else one by one up to the limit of open files.
void CloseFrom(int first) {
  if (close_range(static_cast<unsigned>(first), ~0U, 0) == 0) return;
  long max = sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 1 << 20) max = 1 << 20;
  for (long fd = first; fd < max; ++fd) close(static_cast<int>(fd));
}

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
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  WriteAll(fd, text);
  close(fd);
  rename(tmp, path);
}

// The user a job runs as: numeric ids the agent looked up (the shim is linked statically, and
// user lookups through NSS need the C library's shared modules), taken on in the child.
struct Identity {
  bool switch_user = false;  // false: the job runs as the shim does
  uid_t uid = 0;
  gid_t gid = 0;
  const gid_t* groups = nullptr;
  int group_count = 0;
};

// Everything the vforked child needs; it lives in the shim's memory, which the child shares.
struct Launch {
  int log_fd = -1;
  const char* workdir = "";
  const char* program = nullptr;
  char** argv = nullptr;
  const char* cgroup = nullptr;  // nullptr: no cgroup
  // DIR/cgroup.procs of each group: one (cgroup v2), or one per hierarchy (v1: CGROUP lists
  // them, ':' between).
  static constexpr int kMaxCgroups = 8;
  const char* cgroup_procs[kMaxCgroups] = {};
  const char* cgroup_dirs[kMaxCgroups] = {};  // the same, without "/cgroup.procs"
  int cgroup_count = 0;
  int cgroup_fd = -1;  // CGROUP opened for clone3 (v2 only); -1: join by cgroup.procs
  Identity identity;
  pid_t group = 0;  // the process group to join; 0 = lead a new one
  char** envp = nullptr;
  // A child that cannot become the job (user, working directory, exec) writes a byte here before
  // it exits; close-on-exec, so a started job leaves the pipe without a word.
  int unstarted_fd = -1;
  const char* tty_path = nullptr;  // a session's terminal: the job's stdin, stdout and stderr
  int stdin_fd = -1;               // a session's stdin pipe (its first process); -1: /dev/null
};

// In the child: says the job never started, then exits with `code`.
[[noreturn]] void NotStarted(const Launch& job, int code) {
  if (job.unstarted_fd >= 0) {
    char c = 1;
    (void)!write(job.unstarted_fd, &c, 1);
  }
  _exit(code);
}

// The kernel's NGROUPS_MAX; static, since the shim's stack need not hold 256 KiB.
constexpr int kMaxGroups = 65536;
gid_t g_groups[kMaxGroups];

// Parses USER, "UID:GID:G1,G2,..." (the group list may be empty), into `id`.
bool ParseIdentity(const char* text, Identity* id) {
  char* end = nullptr;
  errno = 0;
  unsigned long uid = strtoul(text, &end, 10);
  if (end == text || *end != ':' || errno != 0) return false;
  const char* p = end + 1;
  unsigned long gid = strtoul(p, &end, 10);
  if (end == p || *end != ':' || errno != 0) return false;
  p = end + 1;
  int count = 0;
  while (*p != '\0') {
    unsigned long g = strtoul(p, &end, 10);
    if (end == p || errno != 0 || count >= kMaxGroups) return false;
    g_groups[count++] = static_cast<gid_t>(g);
    p = end;
    if (*p == ',')
      ++p;
    else if (*p != '\0')
      return false;
  }
  if (count == 0) g_groups[count++] = static_cast<gid_t>(gid);
  // Already that user (an agent that is not root, running its own user's jobs): nothing to do.
  if (getuid() == uid && geteuid() == uid && getgid() == gid && getegid() == gid) return true;
  id->switch_user = true;
  id->uid = static_cast<uid_t>(uid);
  id->gid = static_cast<gid_t>(gid);
  id->groups = g_groups;
  id->group_count = count;
  return true;
}

// In the child: moves it into the job's cgroup by writing "0" (the writer itself) to
// cgroup.procs. A failure is said in the job's log, and the job runs without its limits.
void JoinCgroup(const Launch& job) {
  for (int i = 0; i < job.cgroup_count; ++i) {
    int err = 0;
    int fd = open(job.cgroup_procs[i], O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      err = errno;
    } else {
      if (write(fd, "0", 1) != 1) err = errno;
      close(fd);
    }
    if (err == 0) continue;
    WriteAll(2, "baton: cannot join cgroup ");
    WriteAll(2, job.cgroup_dirs[i]);
    WriteAll(2, ": ");
    WriteAll(2, strerror(err));
    WriteAll(2, job.cgroup_count > 1 ? "; the job runs without its limits of that hierarchy\n"
                                     : "; the job runs without its limits\n");
  }
}

// In the child: becomes the job's user. Groups first, then the gid, then the uid: each step
// needs the privilege that the next one gives up. A job never runs as the wrong user.
void BecomeUser(const Launch& job) {
  const Identity& id = job.identity;
  const char* step = nullptr;
  if (setgroups(static_cast<size_t>(id.group_count), id.groups) != 0) {
    step = "setgroups";
  } else if (setgid(id.gid) != 0) {
    step = "setgid";
  } else if (setuid(id.uid) != 0) {
    step = "setuid";
  }
  if (step == nullptr) return;
  int err = errno;
  WriteAll(2, "baton: cannot run the job as its user (");
  WriteAll(2, step);
  WriteAll(2, "): ");
  WriteAll(2, strerror(err));
  WriteAll(2, "\n");
  NotStarted(job, 126);
}

// In the child: only async-signal-safe calls, ending in execve or _exit. `in_cgroup`: the
// child was created inside the job's cgroup and need not join it.
[[noreturn]] void RunJob(const Launch& job, bool in_cgroup) {
  if (job.tty_path != nullptr) {
    // A session of its own whose controlling terminal is the session's: Ctrl-C, Ctrl-Z and
    // window sizes reach it as on any terminal.
    setsid();
    int tty = open(job.tty_path, O_RDWR);
    if (tty >= 0) {
      ioctl(tty, TIOCSCTTY, 0);
      dup2(tty, 0);
      dup2(tty, 1);
      dup2(tty, 2);
      if (tty > 2) close(tty);
    }
  } else {
    setpgid(0, job.group);
    int in_fd = job.stdin_fd >= 0 ? job.stdin_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in_fd >= 0) dup2(in_fd, 0);
    dup2(job.log_fd, 1);
    dup2(job.log_fd, 2);
  }
  // The cgroup first: joining one needs the privileges that becoming the user drops. The
  // working directory after: it must be one the user may enter.
  if (job.cgroup != nullptr && !in_cgroup) JoinCgroup(job);
  if (job.identity.switch_user) BecomeUser(job);
  const char* workdir = job.workdir;
  char** argv = job.argv;
  if (workdir[0] != '\0' && chdir(workdir) != 0) {
    int err = errno;
    WriteAll(2, "baton: cannot enter the working directory ");
    WriteAll(2, workdir);
    WriteAll(2, ": ");
    WriteAll(2, strerror(err));
    WriteAll(2, "\n");
    NotStarted(job, 126);
  }
  execve(job.program, argv, job.envp);
  int err = errno;
  WriteAll(2, "baton: cannot execute '");
  WriteAll(2, argv[0]);
  WriteAll(2, "': ");
  WriteAll(2, strerror(err));
  WriteAll(2, "\n");
  NotStarted(job, err == ENOENT ? 127 : 126);
}

// Starts a child (fork semantics: the shim is small and static, so there is little to copy)
// that is born in the cgroup open at `cgroup_fd`. -1 with errno when the kernel cannot.
pid_t ForkIntoCgroup(int cgroup_fd) {
  clone_args args;
  memset(&args, 0, sizeof args);
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<uint64_t>(cgroup_fd);
  return static_cast<pid_t>(syscall(SYS_clone3, &args, sizeof args));
}

// Starts one process of the job: inside its cgroup when the kernel can, else vforked (the
// child then joins the cgroup itself). A refusal of clone3 is remembered: the later processes
// of the job go the other way at once.
pid_t StartProcess(Launch& launch) {
  if (launch.cgroup_fd >= 0) {
    pid_t pid = ForkIntoCgroup(launch.cgroup_fd);
    if (pid == 0) RunJob(launch, true);
    if (pid > 0) return pid;
    close(launch.cgroup_fd);
    launch.cgroup_fd = -1;
  }
  pid_t pid = vfork();
  if (pid == 0) RunJob(launch, false);
  return pid;
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
    if (*p == ',')
      ++p;
    else if (*p != '\0')
      return false;
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

// The environment of process `local` of a multi-process job: the job's, with its LOCAL_RANK and
// RANK. Built before vfork (malloc is not for the child); never freed, the shim exits soon.
char** RankEnvironment(int local, long rank0) {
  size_t n = 0;
  while (environ[n] != nullptr) ++n;
  char** env = static_cast<char**>(malloc((n + 3) * sizeof(char*)));
  char* local_rank = static_cast<char*>(malloc(32));
  char* rank = static_cast<char*>(malloc(32));
  if (env == nullptr || local_rank == nullptr || rank == nullptr) return environ;
  snprintf(local_rank, 32, "LOCAL_RANK=%d", local);
  snprintf(rank, 32, "RANK=%ld", rank0 + local);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    if (strncmp(environ[i], "LOCAL_RANK=", 11) == 0 || strncmp(environ[i], "RANK=", 5) == 0)
      continue;
    env[k++] = environ[i];
  }
  env[k++] = local_rank;
  env[k++] = rank;
  env[k] = nullptr;
  return env;
}

// Parses PROCS, "N:RANK0".
bool ParseProcs(const char* text, int* count, long* rank0) {
  char* end = nullptr;
  long n = strtol(text, &end, 10);
  if (end == text || *end != ':' || n < 1 || n > 4096) return false;
  const char* p = end + 1;
  *rank0 = strtol(p, &end, 10);
  if (end == p || *end != '\0' || *rank0 < 0) return false;
  *count = static_cast<int>(n);
  return true;
}

// The steps of ShimMain.

// What the shim writes when the job cannot run at all; the shim's own exit status stays 0.
int CannotRun(const char* status_path) {
  WriteFileAtomic(status_path, "unstarted 126\n");
  return 0;
}

// The job (and all it starts) runs on the CPUs of its GPUs' NUMA node and prefers that node's
// memory ("-": no binding). A failure is written to the job's log, and the job runs unbound.
void BindToNumaNode(int log_fd, const char* cpus, const char* memory_node) {
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
}

// Has the job created in CGROUP ("-": none). A path too long is written to the job's log, and
// the job runs without its limits.
void UseCgroup(int log_fd, const char* cgroup, Launch* launch) {
  static char cgroup_procs[Launch::kMaxCgroups][4200];
  static char cgroup_dirs[Launch::kMaxCgroups][4200];
  if (strcmp(cgroup, "-") == 0) return;
  // One directory (cgroup v2), or several with ':' between (v1: one per hierarchy).
  const char* part = cgroup;
  int count = 0;
  while (*part != '\0' && count < Launch::kMaxCgroups) {
    const char* end = strchr(part, ':');
    int length = static_cast<int>(end != nullptr ? end - part : strlen(part));
    if (snprintf(cgroup_procs[count], sizeof cgroup_procs[count], "%.*s/cgroup.procs", length,
                 part) >= static_cast<int>(sizeof cgroup_procs[count]) ||
        snprintf(cgroup_dirs[count], sizeof cgroup_dirs[count], "%.*s", length, part) >=
            static_cast<int>(sizeof cgroup_dirs[count])) {
      WriteAll(log_fd, "baton: cannot join cgroup ");
      WriteAll(log_fd, cgroup);
      WriteAll(log_fd, ": the path is too long; the job runs without its limits\n");
      return;
    }
    ++count;
    if (end == nullptr) break;
    part = end + 1;
  }
  launch->cgroup = cgroup;
  for (int i = 0; i < count; ++i) {
    launch->cgroup_procs[i] = cgroup_procs[i];
    launch->cgroup_dirs[i] = cgroup_dirs[i];
  }
  launch->cgroup_count = count;
  // clone3 into a cgroup is cgroup v2's alone: v1's groups are joined by cgroup.procs.
  if (strchr(cgroup, ':') == nullptr)
    launch->cgroup_fd = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

// PROCS: how many processes to start and the RANK of the first; "-" is one process without
// rank variables.
struct Procs {
  bool ranked = false;
  int count = 1;
  long rank0 = 0;
};

// Starts the job's processes in one process group, the first one's. Returns the group, or -1
// when one could not be started: then the log says so and those started are killed and reaped.
pid_t StartProcesses(Launch* launch, const Procs& procs) {
  pid_t group = 0;
  int started = 0;
  for (int i = 0; i < procs.count; ++i) {
    if (procs.ranked) launch->envp = RankEnvironment(i, procs.rank0);
    launch->group = group;
    pid_t pid = StartProcess(*launch);
    if (pid < 0) break;
    launch->stdin_fd = -1;  // a session's stdin is its first process's
    // Both sides set the process group, so that it exists whichever runs first (a terminal's
    // job makes a session of its own, which it could not as a group's leader).
    if (launch->tty_path == nullptr) setpgid(pid, group == 0 ? pid : group);
    if (group == 0) group = pid;
    ++started;
  }
  if (started < procs.count) {
    WriteAll(launch->log_fd, "baton: cannot start the job: fork failed\n");
    if (group != 0) kill(-group, SIGKILL);
    while (started-- > 0 && wait(nullptr) > 0) {
    }
    return -1;
  }
  return group;
}

// Waits for the job's `count` processes; the first to fail ends the others at once. Returns the
// wait status of the first that failed, else 0 (success).
int WaitForJob(int count, pid_t group) {
  int status = 0;
  bool failed = false;
  for (int left = count; left > 0;) {
    int st = 0;
    pid_t pid = waitpid(-1, &st, 0);  // its only children are the job's processes
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    --left;
    bool bad = WIFSIGNALED(st) || WEXITSTATUS(st) != 0;
    if (bad && !failed) {
      failed = true;
      status = st;
      if (left > 0) kill(-group, SIGKILL);  // the others cannot go on without it
    }
  }
  return status;
}

// Starts the job's processes (StartProcesses) and waits until every one has exec'd or one has
// said it could not start (`*not_started`). The group, or -1.
pid_t StartAndHear(Launch* launch, const Procs& procs, bool* not_started) {
  int unstarted[2];
  if (pipe2(unstarted, O_CLOEXEC) == 0) launch->unstarted_fd = unstarted[1];
  pid_t group = StartProcesses(launch, procs);
  if (launch->unstarted_fd < 0) return group;
  close(launch->unstarted_fd);
  if (group >= 0) {
    // The pipe closes when the last process exec'd; a byte says one could not start.
    char c = 0;
    ssize_t n;
    do {
      n = read(unstarted[0], &c, 1);
    } while (n < 0 && errno == EINTR);
    *not_started = n == 1;
  }
  close(unstarted[0]);
  return group;
}

// The job has ended with wait status `status`: whatever it left in its group ends too, an
// attached session's client is told how it ended, and the status file says it.
void Finish(pid_t group, int status, bool not_started, ShimSession* session,
            const char* status_path) {
  kill(-group, SIGKILL);
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  char text[64];
  if (Fenced()) {
    // "fenced SIGNAL" when the fence's signal ended it, "fenced-exit CODE" when it ended by
    // itself on the SIGTERM (a trap that checkpoints and exits 143).
    if (WIFSIGNALED(status))
      snprintf(text, sizeof text, "fenced %d", WTERMSIG(status));
    else
      snprintf(text, sizeof text, "fenced-exit %d", WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    snprintf(text, sizeof text, "signal %d", WTERMSIG(status));
  } else {
    snprintf(text, sizeof text, "%s %d", not_started ? "unstarted" : "exit", WEXITSTATUS(status));
  }
  if (session != nullptr) CloseSession(session, text);
  strcat(text, "\n");
  WriteFileAtomic(status_path, text);
}

int ShimMain(int argc, char** argv) {
  // A session (`baton run`): --session SOCKET stdin|tty before the usual arguments.
  const char* session_socket = nullptr;
  const char* session_mode = nullptr;
  if (argc >= 4 && strcmp(argv[1], "--session") == 0) {
    session_socket = argv[2];
    session_mode = argv[3];
    argv += 3;
    argc -= 3;
  }
  if (argc < 12) {
    WriteAll(2,
             "usage: baton-shim LOG STATUS PIDFILE WORKDIR CPUS MEMNODE CGROUP USER PROCS PROGRAM "
             "ARGV0 [ARG...] (started by the baton agent)\n");
    return 2;
  }
  const char* log_path = argv[1];
  const char* status_path = argv[2];
  const char* pid_path = argv[3];
  const char* cpus = argv[5];
  const char* memory_node = argv[6];
  const char* cgroup = argv[7];
  const char* run_as = argv[8];
  const char* procs_text = argv[9];
  Launch launch;
  launch.workdir = argv[4];
  launch.program = argv[10];
  launch.argv = argv + 11;
  launch.envp = environ;

  setsid();  // out of the agent's session: terminal signals and the agent's death pass it by
  // Whatever the agent had open without close-on-exec (its listening and client sockets)
  // must not reach the job: a job holding the server's port would outlive a restart.
  CloseFrom(3);
  // The log is the job's user's alone (0600, theirs once known); never through a link the
  // user put in the job's directory in its place.
  int log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (log_fd < 0) return CannotRun(status_path);
  BindToNumaNode(log_fd, cpus, memory_node);
  launch.log_fd = log_fd;
  if (strcmp(run_as, "-") != 0 && !ParseIdentity(run_as, &launch.identity)) {
    WriteAll(log_fd, "baton: the agent gave the shim a bad user: ");
    WriteAll(log_fd, run_as);
    WriteAll(log_fd, "\n");
    return CannotRun(status_path);
  }
  if (launch.identity.switch_user) (void)fchown(log_fd, launch.identity.uid, launch.identity.gid);
  UseCgroup(log_fd, cgroup, &launch);
  Procs procs;
  procs.ranked = strcmp(procs_text, "-") != 0;
  if (procs.ranked && !ParseProcs(procs_text, &procs.count, &procs.rank0)) {
    WriteAll(log_fd, "baton: the agent gave the shim a bad process count: ");
    WriteAll(log_fd, procs_text);
    WriteAll(log_fd, "\n");
    return CannotRun(status_path);
  }
  ShimSession session;
  int child_stdin = -1;
  if (session_socket != nullptr) {
    if (!OpenSession(session_socket, session_mode, log_fd, &session, &child_stdin)) {
      CloseSession(&session, "unstarted 126");
      return CannotRun(status_path);
    }
    if (session.tty) launch.tty_path = session.tty_path;
    launch.stdin_fd = child_stdin;
  }
  bool not_started = false;
  pid_t group = StartAndHear(&launch, procs, &not_started);
  if (child_stdin >= 0) close(child_stdin);
  if (group < 0) {
    CloseSession(&session, "unstarted 126");
    return CannotRun(status_path);
  }
  // A session's terminal output (and notes) go to the log through the shim.
  if (session_socket == nullptr) close(log_fd);
  if (launch.cgroup_fd >= 0) close(launch.cgroup_fd);
  char text[64];
  snprintf(text, sizeof text, "%d\n", static_cast<int>(group));
  WriteFileAtomic(pid_path, text);

  ArmFence(status_path, group);
  // The job's status: the first process that failed, else success.
  int status = session_socket != nullptr ? ServeSession(&session, log_fd, procs.count, group)
                                         : WaitForJob(procs.count, group);
  Finish(group, status, not_started, session_socket != nullptr ? &session : nullptr, status_path);
  return 0;
}

// Reads exactly `n` bytes; false at end of file or on an error.
bool ReadFull(int fd, void* buf, size_t n) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool WriteFull(int fd, const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// A request: u32 size, then that many bytes: u32 argc, u32 envc, and argc + envc strings, each
// ended by NUL. The answer: an i64, the new shim's pid or -errno, and a u64, its start time
// (from /proc, read before the zygote can reap it, so that the agent never sees a pid whose
// start it cannot tell). A notice on fd 4: an i32 pid of a shim that ended.
constexpr uint32_t kMaxRequest = 16u << 20;

// Field 22 of /proc/PID/stat, the process's start time in clock ticks; 0 when unreadable.
uint64_t StartTicks(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char* p = strrchr(buf, ')');  // the name may hold spaces and parentheses
  if (p == nullptr) return 0;
  int field = 2;
  for (; *p != '\0' && field < 22; ++p) {
    if (*p == ' ') ++field;
  }
  return strtoull(p, nullptr, 10);
}

int Zygote() {
  const int requests = 3, notices = 4;
  // Out of the agent's session (a Ctrl-C at its terminal is not for us), and holding nothing
  // of the agent's but the two channels: its sockets must not stay open here.
  setsid();
  CloseFrom(5);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, nullptr);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) return 1;
  for (;;) {
    pollfd fds[2] = {{.fd = requests, .events = POLLIN, .revents = 0},
                     {.fd = sfd, .events = POLLIN, .revents = 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (fds[1].revents != 0) {
      signalfd_siginfo info;
      while (read(sfd, &info, sizeof info) > 0) {
      }
      for (;;) {
        int st = 0;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0) break;
        int32_t ended = pid;
        (void)WriteFull(notices, &ended, sizeof ended);
      }
    }
    if (fds[0].revents == 0) continue;
    uint32_t size = 0;
    if (!ReadFull(requests, &size, sizeof size) || size < 8 || size > kMaxRequest)
      return 0;  // the agent is gone
    char* buf = static_cast<char*>(malloc(size + 1));
    if (buf == nullptr || !ReadFull(requests, buf, size)) return 0;
    buf[size] = '\0';
    uint32_t argc = 0, envc = 0;
    memcpy(&argc, buf, 4);
    memcpy(&envc, buf + 4, 4);
    if (argc > size / 2 || envc > size / 2) return 0;  // more strings than bytes: not the agent
    char** argv = static_cast<char**>(calloc(static_cast<size_t>(argc) + envc + 2, sizeof(char*)));
    char* p = buf + 8;
    char* end = buf + size;
    bool ok = argv != nullptr && argc >= 1;
    for (uint32_t i = 0; ok && i < argc + envc; ++i) {
      if (p >= end) {
        ok = false;
        break;
      }
      argv[i < argc ? i : i + 1] = p;  // argv, NULL, envp, NULL
      p += strlen(p) + 1;
    }
    int64_t answer[2] = {-EINVAL, 0};
    if (ok) {
      pid_t pid = fork();
      if (pid == 0) {
        // The shim: as if started on its own, with the job's environment and nothing blocked.
        sigprocmask(SIG_UNBLOCK, &chld, nullptr);
        close(sfd);
        close(requests);
        close(notices);
        environ = argv + argc + 1;
        _exit(ShimMain(static_cast<int>(argc), argv));
      }
      answer[0] = pid > 0 ? pid : -errno;
      if (pid > 0) answer[1] = static_cast<int64_t>(StartTicks(pid));
    }
    free(argv);
    free(buf);
    if (!WriteFull(requests, answer, sizeof answer)) return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--zygote") == 0) return Zygote();
  return ShimMain(argc, argv);
}
