// srun and scontrol, as a job written for Slurm calls them (slurm_main.cc dispatches here).
//
// srun starts its command once per task across the job's allocation and waits for them all:
// the tasks of its own node as its children, those of the job's other nodes through their step
// servers (step_wire.h). Each task gets the environment srun has (as --export=ALL) with
// SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID and the step's SLURM_NTASKS; on another node, that
// node's own GPUs and names. Output comes back here, labelled with -l. Its exit code is the
// highest of its tasks'.
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>

#include "agent/slurm/slurm.h"
#include "core/hostlist.h"
#include "core/step_wire.h"

namespace baton::slurm {

namespace {

volatile sig_atomic_t g_signal = 0;
void OnSignal(int sig) { g_signal = sig; }
volatile sig_atomic_t g_notice = 0;
void OnNotice(int sig) { g_notice = sig; }

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t i = 0;
  while (true) {
    size_t j = s.find(sep, i);
    out.push_back(s.substr(i, j == std::string::npos ? std::string::npos : j - i));
    if (j == std::string::npos) break;
    i = j + 1;
  }
  return out;
}

struct SrunOptions {
  int ntasks = 0;          // -n; 0: nodes x tasks per node
  int nodes = 0;           // -N; 0: all (or as many as tasks, if fewer)
  int tasks_per_node = 0;  // --ntasks-per-node; 0: the job's
  int cpus_per_task = 0;
  bool label = false;
  bool kill_on_bad_exit = false;
  std::string chdir, exports = "ALL", nodelist;
  std::vector<std::string> command;
};

// Options srun takes as Slurm's does and that change nothing here: a step uses its job's
// allocation as it is (its GPUs, memory and CPUs per node).
const char* const kIgnoredWithValue[] = {"-J",
                                         "--job-name",
                                         "--gpus",
                                         "-G",
                                         "--gpus-per-node",
                                         "--gpus-per-task",
                                         "--gres",
                                         "--mem",
                                         "--mem-per-cpu",
                                         "--mem-per-gpu",
                                         "--cpu-bind",
                                         "--gpu-bind",
                                         "--mpi",
                                         "--distribution",
                                         "-m",
                                         "--jobid",
                                         "--hint",
                                         "--threads-per-core",
                                         "--accel-bind",
                                         "-p",
                                         "--partition",
                                         "-A",
                                         "--account",
                                         "-t",
                                         "--time",
                                         "--cpus-per-gpu",
                                         "-o",
                                         "--output",
                                         "-e",
                                         "--error",
                                         "--het-group",
                                         "--network",
                                         "--signal",
                                         "--wait",
                                         "-W"};
const char* const kIgnoredFlags[] = {
    "--exclusive", "--overlap", "-u",      "--unbuffered", "--overcommit", "-O",         "--exact",
    "--whole",     "-Q",        "--quiet", "-v",           "--verbose",    "--mpi=none", "--pty"};

Result<int> Positive(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 1 || n > 100000)
    return Err(InvalidArgument(opt + ": \"" + v.substr(0, 32) + "\" is not a positive number"));
  return static_cast<int>(n);
}

Result<SrunOptions> ParseSrun(const std::vector<std::string>& args) {
  SrunOptions o;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    std::string name = a, value;
    bool inline_value = false;
    if (a.starts_with("--")) {
      size_t eq = a.find('=');
      if (eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        inline_value = true;
      }
    } else if (a.size() > 2) {
      name = a.substr(0, 2);
      value = a.substr(2);
      inline_value = true;
    }
    auto take = [&]() -> Result<std::string> {
      if (inline_value) return value;
      if (i + 1 >= args.size()) return Err(InvalidArgument(name + ": needs a value"));
      return args[++i];
    };
    if (name == "-l" || name == "--label") {
      o.label = true;
      if (inline_value && name == "-l") return Err(InvalidArgument(a + ": unknown option"));
    } else if (name == "-K" || name == "--kill-on-bad-exit") {
      o.kill_on_bad_exit = !(inline_value && value == "0");
    } else if (name == "-n" || name == "--ntasks") {
      ASSIGN_OR_RETURN(std::string v, take());
      ASSIGN_OR_RETURN(o.ntasks, Positive(name, v));
    } else if (name == "-N" || name == "--nodes") {
      ASSIGN_OR_RETURN(std::string v, take());
      ASSIGN_OR_RETURN(o.nodes, Positive(name, v.substr(0, v.find('-'))));
    } else if (name == "--ntasks-per-node") {
      ASSIGN_OR_RETURN(std::string v, take());
      ASSIGN_OR_RETURN(o.tasks_per_node, Positive(name, v));
    } else if (name == "-c" || name == "--cpus-per-task") {
      ASSIGN_OR_RETURN(std::string v, take());
      ASSIGN_OR_RETURN(o.cpus_per_task, Positive(name, v));
    } else if (name == "-D" || name == "--chdir") {
      ASSIGN_OR_RETURN(o.chdir, take());
    } else if (name == "--export") {
      ASSIGN_OR_RETURN(o.exports, take());
    } else if (name == "-w" || name == "--nodelist") {
      ASSIGN_OR_RETURN(o.nodelist, take());
    } else if (std::find(std::begin(kIgnoredFlags), std::end(kIgnoredFlags), a) !=
               std::end(kIgnoredFlags)) {
      continue;
    } else if (std::find(std::begin(kIgnoredWithValue), std::end(kIgnoredWithValue), name) !=
               std::end(kIgnoredWithValue)) {
      ASSIGN_OR_RETURN(std::string ignored, take());
    } else {
      return Err(InvalidArgument(
          a +
          ": an option Baton's srun does not know (it knows -n, -N, --ntasks-per-node, -l, "
          "-K, -c, -D, -w, --export, and takes Slurm's resource options as the job's)"));
    }
  }
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(std::min(i, args.size())),
                   args.end());
  if (o.command.empty()) return Err(InvalidArgument("no command to run (srun [OPTIONS] CMD ...)"));
  return o;
}

// The environment tasks get under --export: ALL (srun's own), NONE (Slurm's and Baton's
// variables and the basics), or a list ("ALL,A=1,B" or "A,B").
std::vector<std::string> ExportedEnvironment(const std::string& exports) {
  std::vector<std::string> own = OwnEnvironment();
  std::vector<std::string> items = Split(exports, ',');
  bool all = std::find(items.begin(), items.end(), "ALL") != items.end();
  std::vector<std::string> env;
  if (all) {
    env = own;
  } else {
    for (const std::string& e : own) {
      std::string k = e.substr(0, e.find('='));
      bool keep = k.starts_with("SLURM") || k.starts_with("BATON_") || k.starts_with("CUDA_") ||
                  k == "PATH" || k == "HOME" || k == "USER" || k == "LOGNAME" || k == "LANG";
      if (keep) env.push_back(e);
    }
  }
  for (const std::string& item : items) {
    if (item == "ALL" || item == "NONE" || item.empty()) continue;
    size_t eq = item.find('=');
    if (eq != std::string::npos) {
      SetVar(&env, item.substr(0, eq), item.substr(eq + 1));
    } else if (const char* v = std::getenv(item.c_str())) {
      SetVar(&env, item, v);
    }
  }
  return env;
}

struct Running {
  int task = 0;
  std::string node;
  bool remote = false;
  pid_t pid = -1;                  // local
  int out = -1, err = -1;          // local pipes
  int sock = -1;                   // remote
  std::string status;              // "E0", "S9"... once ended; "" while running
  std::string line_out, line_err;  // a partial line, with --label
};

void Emit(Running& r, bool err, const std::string& data, bool label) {
  FILE* to = err ? stderr : stdout;
  if (!label) {
    std::fwrite(data.data(), 1, data.size(), to);
    std::fflush(to);
    return;
  }
  std::string& partial = err ? r.line_err : r.line_out;
  partial += data;
  size_t nl;
  while ((nl = partial.find('\n')) != std::string::npos) {
    std::fprintf(to, "%d: %.*s\n", r.task, static_cast<int>(nl), partial.data());
    partial.erase(0, nl + 1);
  }
  std::fflush(to);
}

void FlushLabel(Running& r) {
  for (bool err : {false, true}) {
    std::string& partial = err ? r.line_err : r.line_out;
    if (!partial.empty()) std::fprintf(err ? stderr : stdout, "%d: %s\n", r.task, partial.c_str());
    partial.clear();
  }
}

void Stop(Running& r, int sig) {
  if (!r.status.empty()) return;
  if (r.remote) {
    if (r.sock >= 0) ::shutdown(r.sock, SHUT_RDWR);
  } else if (r.pid > 0) {
    ::kill(-r.pid, sig);
  }
}

}  // namespace

Notice NoticeOf() {
  const char* v = std::getenv("BATON_NOTICE_SIGNAL");
  std::string text = v != nullptr ? v : "";
  Notice n{.shell = text.starts_with("B:")};
  n.signal = std::atoi(text.c_str() + (n.shell ? 2 : 0));
  if (n.signal <= 0 || n.signal >= 32 || n.signal == SIGTERM || n.signal == SIGINT ||
      n.signal == SIGHUP || n.signal == SIGKILL || n.signal == SIGSTOP)
    n.signal = 0;
  return n;
}

int Srun(const std::vector<std::string>& args) {
  auto parsed = ParseSrun(args);
  if (!parsed) {
    std::fprintf(stderr, "srun: error: %s\n", parsed.error().message().c_str());
    return 2;
  }
  SrunOptions& o = *parsed;
  auto env_of = [](const char* k) {
    const char* v = std::getenv(k);
    return std::string(v != nullptr ? v : "");
  };
  if (env_of("SLURM_JOB_ID").empty()) {
    std::fprintf(stderr,
                 "srun: error: not inside a job: Baton's srun runs a job's tasks within the job "
                 "(submit a script with `baton submit script.sh`, or run `baton run -- CMD`)\n");
    return 2;
  }
  // The job's nodes, and where their step servers listen (a batch script on several nodes);
  // else the tasks run on this node alone.
  auto names = ExpandHostList(env_of("SLURM_JOB_NODELIST"));
  std::vector<std::string> all = names ? *names : std::vector<std::string>{};
  std::vector<std::string> addrs = Split(env_of("BATON_STEP_ADDRS"), ',');
  int port = std::atoi(env_of("BATON_STEP_PORT").c_str());
  std::string key = env_of("BATON_STEP_KEY");
  std::string self = env_of("SLURMD_NODENAME");
  int self_index = std::atoi(env_of("SLURM_NODEID").c_str());
  std::vector<int> nodes;  // indices into `all` the step runs on
  if (addrs.size() != all.size() || all.empty() || port <= 0) {
    if (all.empty()) all = {self};
    self_index = std::clamp(self_index, 0, static_cast<int>(all.size()) - 1);
    nodes = {self_index};
    addrs.clear();
    if (o.nodes > 1 || !o.nodelist.empty()) {
      std::fprintf(stderr,
                   "srun: warning: this job's srun runs tasks on its own node only (a "
                   "batch script's srun spreads them over the job's nodes)\n");
    }
  } else if (!o.nodelist.empty()) {
    auto wanted = ExpandHostList(o.nodelist);
    if (!wanted) {
      std::fprintf(stderr, "srun: error: --nodelist: %s\n", wanted.error().message().c_str());
      return 2;
    }
    for (const std::string& w : *wanted) {
      auto it = std::find(all.begin(), all.end(), w);
      if (it == all.end()) {
        std::fprintf(stderr, "srun: error: --nodelist: %s is not a node of this job (%s)\n",
                     w.c_str(), env_of("SLURM_JOB_NODELIST").c_str());
        return 2;
      }
      nodes.push_back(static_cast<int>(it - all.begin()));
    }
  } else {
    int count = static_cast<int>(all.size());
    if (o.nodes > 0) {
      if (o.nodes > count) {
        std::fprintf(stderr, "srun: error: -N %d: the job has %d node(s)\n", o.nodes, count);
        return 2;
      }
      count = o.nodes;
    } else if (o.ntasks > 0) {
      count = std::min(count, o.ntasks);
    }
    for (int i = 0; i < count; ++i) nodes.push_back(i);
  }
  int per_node = o.tasks_per_node > 0
                     ? o.tasks_per_node
                     : std::max(1, std::atoi(env_of("SLURM_NTASKS_PER_NODE").c_str()));
  int k = static_cast<int>(nodes.size());
  int ntasks = o.ntasks > 0 ? o.ntasks : k * per_node;
  std::vector<int> counts(static_cast<size_t>(k));
  for (int i = 0; i < k; ++i)
    counts[static_cast<size_t>(i)] = ntasks / k + (i < ntasks % k ? 1 : 0);

  std::vector<std::string> step_names;
  std::string tasks_per_node;
  for (int i = 0; i < k; ++i) {
    step_names.push_back(all[static_cast<size_t>(nodes[static_cast<size_t>(i)])]);
    tasks_per_node += (i ? "," : "") + std::to_string(counts[static_cast<size_t>(i)]);
  }
  std::vector<std::string> base = ExportedEnvironment(o.exports);
  SetVar(&base, "SLURM_NTASKS", std::to_string(ntasks));
  SetVar(&base, "SLURM_NPROCS", std::to_string(ntasks));
  SetVar(&base, "SLURM_STEP_NUM_TASKS", std::to_string(ntasks));
  SetVar(&base, "SLURM_STEP_NUM_NODES", std::to_string(k));
  SetVar(&base, "SLURM_STEP_NODELIST", CompressHostList(step_names));
  SetVar(&base, "SLURM_STEP_TASKS_PER_NODE", tasks_per_node);
  SetVar(&base, "SLURM_STEP_ID", "0");
  SetVar(&base, "SLURM_STEPID", "0");
  if (o.cpus_per_task > 0) SetVar(&base, "SLURM_CPUS_PER_TASK", std::to_string(o.cpus_per_task));
  std::string cwd = o.chdir;
  if (cwd.empty()) {
    char here[4096];
    if (getcwd(here, sizeof here) != nullptr) cwd = here;
  }

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // The job's notice: passed on to the tasks here (the other nodes' step servers pass it to
  // theirs), or, the batch shell's alone (B:), not this srun's.
  if (Notice notice = NoticeOf(); notice.signal != 0) {
    struct sigaction na {};
    na.sa_handler = notice.shell ? SIG_IGN : OnNotice;
    sigaction(notice.signal, &na, nullptr);
  }

  std::vector<Running> tasks;
  int task = 0;
  for (int i = 0; i < k; ++i) {
    size_t node = static_cast<size_t>(nodes[static_cast<size_t>(i)]);
    for (int local = 0; local < counts[static_cast<size_t>(i)]; ++local, ++task) {
      std::vector<std::string> env = base;
      SetVar(&env, "SLURM_PROCID", std::to_string(task));
      SetVar(&env, "SLURM_LOCALID", std::to_string(local));
      SetVar(&env, "SLURM_NODEID", std::to_string(node));
      SetVar(&env, "SLURMD_NODENAME", all[node]);
      Running r;
      r.task = task;
      r.node = all[node];
      if (static_cast<int>(node) == self_index || addrs.empty()) {
        auto started = StartTask(o.command, env, cwd);
        if (!started) {
          std::fprintf(stderr, "srun: error: task %d: %s\n", task,
                       started.error().message().c_str());
          r.status = "E1";
        } else {
          r.pid = started->pid;
          r.out = started->out;
          r.err = started->err;
        }
      } else {
        r.remote = true;
        std::string error;
        r.sock = ConnectTo(addrs[node], port, 60, &error);
        StepRequest req{.key = key, .verb = "run", .cwd = cwd, .argv = o.command, .env = env};
        if (r.sock < 0 || !SendRequest(r.sock, req)) {
          std::fprintf(stderr, "srun: error: %s: task %d: cannot reach its step server: %s\n",
                       all[node].c_str(), task, error.empty() ? strerror(errno) : error.c_str());
          if (r.sock >= 0) ::close(r.sock);
          r.sock = -1;
          r.status = "E1";
        }
      }
      tasks.push_back(std::move(r));
    }
  }

  bool stopping = false;
  while (true) {
    if (g_signal != 0 && !stopping) {
      stopping = true;
      for (Running& r : tasks) Stop(r, g_signal);
    }
    if (int notice = g_notice; notice != 0) {
      g_notice = 0;
      for (Running& r : tasks) {
        if (!r.remote && r.pid > 0 && r.status.empty()) ::kill(-r.pid, notice);
      }
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, int>> which;  // task, 0 out / 1 err / 2 socket
    for (size_t t = 0; t < tasks.size(); ++t) {
      Running& r = tasks[t];
      if (r.remote && r.sock >= 0) {
        fds.push_back({r.sock, POLLIN, 0});
        which.emplace_back(t, 2);
      }
      if (!r.remote && r.out >= 0) {
        fds.push_back({r.out, POLLIN, 0});
        which.emplace_back(t, 0);
      }
      if (!r.remote && r.err >= 0) {
        fds.push_back({r.err, POLLIN, 0});
        which.emplace_back(t, 1);
      }
    }
    if (fds.empty()) break;
    int n = ::poll(fds.data(), fds.size(), 1000);
    if (n < 0 && errno != EINTR) break;
    for (size_t f = 0; n > 0 && f < fds.size(); ++f) {
      if (fds[f].revents == 0) continue;
      Running& r = tasks[which[f].first];
      int kind = which[f].second;
      if (kind == 2) {
        auto frame = ReadFrame(r.sock);
        if (!frame) {
          ::close(r.sock);
          r.sock = -1;
          if (r.status.empty()) {
            std::fprintf(stderr, "srun: error: %s: task %d: its step server went away\n",
                         r.node.c_str(), r.task);
            r.status = "E1";
          }
        } else if (frame->first == 'x') {
          r.status = frame->second;
          ::close(r.sock);
          r.sock = -1;
        } else {
          Emit(r, frame->first == 'e', frame->second, o.label);
        }
        continue;
      }
      int& fd = kind == 0 ? r.out : r.err;
      char buf[65536];
      ssize_t got = ::read(fd, buf, sizeof buf);
      if (got > 0) {
        Emit(r, kind == 1, std::string(buf, static_cast<size_t>(got)), o.label);
      } else if (got == 0 || errno != EINTR) {
        ::close(fd);
        fd = -1;
      }
    }
    // Local tasks whose output has ended: their status.
    for (Running& r : tasks) {
      if (r.remote || r.pid <= 0 || !r.status.empty() || r.out >= 0 || r.err >= 0) continue;
      int ws = 0;
      while (waitpid(r.pid, &ws, 0) < 0 && errno == EINTR) {
      }
      r.status = StatusText(ws);
    }
    if (o.kill_on_bad_exit && !stopping) {
      bool bad = std::any_of(tasks.begin(), tasks.end(), [](const Running& r) {
        return !r.status.empty() && r.status != "E0";
      });
      if (bad) {
        stopping = true;
        for (Running& r : tasks) Stop(r, SIGTERM);
      }
    }
  }
  int code = 0;
  for (Running& r : tasks) {
    if (o.label) FlushLabel(r);
    if (!r.remote && r.pid > 0 && r.status.empty()) {
      int ws = 0;
      waitpid(r.pid, &ws, 0);
      r.status = StatusText(ws);
    }
    int value = std::atoi(r.status.c_str() + (r.status.empty() ? 0 : 1));
    if (r.status.starts_with("S")) {
      std::fprintf(stderr, "srun: error: %s: task %d: Killed by signal %d\n", r.node.c_str(),
                   r.task, value);
      code = std::max(code, 128 + value);
    } else if (value != 0) {
      std::fprintf(stderr, "srun: error: %s: task %d: Exited with exit code %d\n", r.node.c_str(),
                   r.task, value);
      code = std::max(code, value);
    }
  }
  std::fflush(stdout);
  return code;
}

int Scontrol(const std::vector<std::string>& args) {
  std::vector<std::string> words;
  for (const std::string& a : args) {
    if (a != "-o" && a != "--oneliner") words.push_back(a);
  }
  bool show = words.size() >= 2 && words[0] == "show";
  if (show && (words[1] == "hostnames" || words[1] == "hostname")) {
    std::string list = words.size() > 2 ? words[2] : "";
    if (list.empty()) {
      const char* v = std::getenv("SLURM_JOB_NODELIST");
      list = v != nullptr ? v : "";
    }
    if (list.empty()) {
      std::fprintf(stderr, "scontrol: error: no host list given and SLURM_JOB_NODELIST unset\n");
      return 1;
    }
    auto names = ExpandHostList(list);
    if (!names) {
      std::fprintf(stderr, "scontrol: error: %s\n", names.error().message().c_str());
      return 1;
    }
    for (const std::string& n : *names) std::printf("%s\n", n.c_str());
    return 0;
  }
  if (show && (words[1] == "hostlist" || words[1] == "hostlistsorted") && words.size() > 2) {
    auto names = ExpandHostList(words[2]);
    if (!names) {
      std::fprintf(stderr, "scontrol: error: %s\n", names.error().message().c_str());
      return 1;
    }
    if (words[1] == "hostlistsorted") std::sort(names->begin(), names->end());
    std::printf("%s\n", CompressHostList(*names).c_str());
    return 0;
  }
  std::string typed;
  for (const std::string& a : args) typed += (typed.empty() ? "" : " ") + a;
  std::fprintf(stderr,
               "scontrol: error: \"%s\": inside a job, Baton's scontrol knows `show hostnames "
               "[LIST]` and `show hostlist LIST`; for jobs and nodes use `baton show ID` and "
               "`baton nodes`\n",
               typed.c_str());
  return 1;
}

}  // namespace baton::slurm
