#include "agent/launcher.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "agent/agent.h"
#include "core/hostlist.h"
#include "core/log.h"
#include "core/quantity.h"

namespace baton::agent {
namespace fs = std::filesystem;
namespace {

// The NVIDIA driver's character devices: /dev/nvidiaN is 195:N.
constexpr int kNvidiaMajor = 195;

std::string GetEnv(const char* key, const char* fallback) {
  const char* v = std::getenv(key);
  return v != nullptr ? v : fallback;
}

// baton-slurm (srun, scontrol, a batch script's step server), installed beside this program.
std::string SlurmTool() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "baton-slurm" : (self.parent_path() / "baton-slurm").string();
}

// DATA/slurm-bin: `srun` and `scontrol` for jobs with slurm_env, links to baton-slurm; the
// agent's, read and entered by all (0755), as the programs it links to.
Status MakeSlurmBin(const std::string& dir) {
  std::string tool = SlurmTool();
  if (access(tool.c_str(), X_OK) != 0)
    return Unavailable(tool + " is missing (it is built and installed beside baton)");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Unavailable(dir + ": " + ec.message());
  fs::permissions(dir, fs::perms(0755), ec);
  for (const char* name : {"srun", "scontrol"}) {
    fs::path link = fs::path(dir) / name;
    if (fs::read_symlink(link, ec) == tool && !ec) continue;
    fs::path staged = fs::path(dir) / (std::string(".") + name + ".new");
    fs::remove(staged, ec);
    fs::create_symlink(tool, staged, ec);
    if (!ec) fs::rename(staged, link, ec);
    if (ec) return Unavailable(link.string() + ": " + ec.message());
  }
  return Status::Ok();
}

// What a job written for Slurm reads (docs/slurm.md): the SLURM_* variables of its job, its
// node and, for the process this node starts, its task.
void AddSlurmEnvironment(const LaunchOrder& order, const std::string& node,
                         std::map<std::string, std::string>* env) {
  auto& e = *env;
  std::vector<std::string> names;
  for (size_t i = 0; i <= order.nodelist.size();) {
    size_t j = std::min(order.nodelist.find(',', i), order.nodelist.size());
    if (j > i) names.push_back(order.nodelist.substr(i, j - i));
    i = j + 1;
  }
  if (names.empty()) names.push_back(node);
  std::string list = CompressHostList(names);
  const int per_node = order.tasks_per_node > 0 ? order.tasks_per_node : order.processes;
  const int nodes = std::max(order.num_nodes, 1);
  const std::string id = order.job.ToString();
  e["SLURM_JOB_ID"] = id;
  e["SLURM_JOBID"] = id;
  e["SLURM_JOB_NAME"] = order.name;
  e["SLURM_JOB_USER"] = order.user;
  e["SLURM_CLUSTER_NAME"] = "baton";
  e["SLURM_JOB_NODELIST"] = list;
  e["SLURM_NODELIST"] = list;
  e["SLURM_NNODES"] = std::to_string(nodes);
  e["SLURM_JOB_NUM_NODES"] = std::to_string(nodes);
  e["SLURM_NODEID"] = std::to_string(order.node_rank);
  e["SLURMD_NODENAME"] = node;
  e["SLURM_NTASKS"] = std::to_string(nodes * per_node);
  e["SLURM_NPROCS"] = e["SLURM_NTASKS"];
  e["SLURM_NTASKS_PER_NODE"] = std::to_string(per_node);
  e["SLURM_TASKS_PER_NODE"] =
      std::to_string(per_node) + (nodes > 1 ? "(x" + std::to_string(nodes) + ")" : "");
  // The script itself (a batch job's first node) is task 0; a job run on each node is one task
  // per node (or per process).
  e["SLURM_PROCID"] = std::to_string(order.batch ? 0 : order.rank_offset);
  e["SLURM_LOCALID"] = "0";
  e["SLURM_GPUS_ON_NODE"] = std::to_string(order.gpus.size());
  e["SLURM_GPUS_PER_NODE"] = std::to_string(order.gpus.size());
  if (!order.gpus.empty()) e["SLURM_JOB_GPUS"] = e["CUDA_VISIBLE_DEVICES"];
  if (order.cpus > 0) {
    e["SLURM_CPUS_ON_NODE"] = std::to_string(order.cpus);
    e["SLURM_CPUS_PER_TASK"] = std::to_string(std::max(1, order.cpus / std::max(1, per_node)));
  }
  if (order.memory_bytes > 0) e["SLURM_MEM_PER_NODE"] = std::to_string(order.memory_bytes >> 20);
  e["SLURM_RESTART_COUNT"] = std::to_string(order.attempt);
  if (order.array_id.value != 0) {
    e["SLURM_ARRAY_JOB_ID"] = order.array_id.ToString();
    e["SLURM_ARRAY_TASK_ID"] = std::to_string(order.array_index);
  }
  if (!order.workdir.empty()) e["SLURM_SUBMIT_DIR"] = order.workdir;
}

}  // namespace

Launcher::Launcher(Deps deps)
    : options_(deps.options),
      env_(deps.env),
      cgroups_(deps.cgroups),
      gpus_(deps.gpus),
      gpu_addresses_(deps.gpu_addresses),
      backend_(deps.backend),
      as_root_(deps.as_root),
      fetch_code_(std::move(deps.fetch_code)) {}

std::string Launcher::JobDir(JobId id) const { return JobDirOf(options_.data_dir, id); }

LogContext Launcher::Context(JobId job) const {
  return LogContext{.component = "agent", .node = options_.name, .job = job.value};
}

tl::expected<ProcessSpec, LaunchRefusal> Launcher::Prepare(const LaunchOrder& order,
                                                           const std::string& cgroup) {
  const std::string dir = JobDir(order.job);
  auto refuse = [](int code, std::string message) {
    return tl::make_unexpected(LaunchRefusal{.exit_code = code, .message = std::move(message)});
  };
  auto here = [&](const Status& st) {
    return refuse(127, "node " + options_.name + ": " + st.message());
  };
  // The job's directory is its user's alone (RunAsUser gives it to the user under root).
  if (Status st = env_.CreateDirs(dir + "/checkpoints"); !st.ok()) return here(st);
  if (Status st = env_.SetMode(dir, 0700); !st.ok()) return here(st);
  if (!order.checkpoint_dir.empty()) {
    if (Status st = env_.CreateDirs(order.checkpoint_dir); !st.ok()) {
      return refuse(127, "node " + options_.name + ": the shared checkpoint root: " + st.message() +
                             " (is it mounted here?)");
    }
  }

  ProcessSpec spec;
  spec.argv =
      order.shell ? std::vector<std::string>{"/bin/sh", "-c", order.command.at(0)} : order.command;
  for (const auto& [k, v] : Environment(order)) spec.env.push_back(k + "=" + v);
  // The user first: its code is unpacked for it.
  std::optional<UnixUser> user;
  if (as_root_) {
    auto found = RunAsUser(order, &spec);
    if (!found) return refuse(126, found.error().message());
    user = *found;
  }
  if (Status st = PlaceLaunch(order, user, &spec); !st.ok()) return here(st);
  if (Status st = PlaceBatch(order, &spec); !st.ok()) return here(st);
  spec.processes = order.processes;
  spec.rank0 = order.rank_offset;
  spec.log_path = dir + "/output.log";
  BindToGpuNuma(order, &spec);
  JoinCgroup(order, cgroup, &spec);
  return spec;
}

// A batch script (LaunchOrder::batch) runs on its first node, through baton-slurm's batch
// host where it writes output files or has other nodes to end; the other nodes run its step
// server. A job with slurm_env finds srun and scontrol in DATA/slurm-bin.
Status Launcher::PlaceBatch(const LaunchOrder& order, ProcessSpec* spec) {
  if (order.slurm_env) {
    if (Status st = MakeSlurmBin(options_.data_dir + "/slurm-bin"); !st.ok()) {
      std::string line = "baton: warning: srun and scontrol are not here: " + st.message() + "\n";
      if (Status a = env_.AppendFile(JobDir(order.job) + "/output.log", line); !a.ok())
        LogWarn(a.message(), Context(order.job));
    }
  }
  if (!order.batch) return Status::Ok();
  bool several = order.num_nodes > 1 && order.step_port > 0;
  if (order.node_rank > 0) {
    if (!several) return Status::Ok();
    spec->argv = {SlurmTool(), "--step-server"};
  } else if (several || order.alloc || !order.output_file.empty() || !order.error_file.empty()) {
    std::vector<std::string> argv = {SlurmTool(), "--batch-host"};
    if (!order.output_file.empty()) argv.insert(argv.end(), {"-o", order.output_file});
    if (!order.error_file.empty()) argv.insert(argv.end(), {"-e", order.error_file});
    argv.push_back("--");
    // An allocation runs no command of its own: its host serves `baton run --in`.
    if (order.alloc) {
      argv.insert(argv.end(), {SlurmTool(), "--alloc-host"});
    } else {
      argv.insert(argv.end(), spec->argv.begin(), spec->argv.end());
    }
    spec->argv = std::move(argv);
  } else {
    return Status::Ok();
  }
  if (access(spec->argv[0].c_str(), X_OK) != 0)
    return Unavailable(spec->argv[0] + " is missing (it is built and installed beside baton)");
  return Status::Ok();
}

// --venv DIR: its bin/ first on PATH and VIRTUAL_ENV set, as `source DIR/bin/activate` does;
// --conda ENV: the command run by `conda run`, with conda from CONDA_EXE or the agent's PATH.
Status Launcher::InPythonEnvironment(const LaunchOrder& order, ProcessSpec* spec) {
  if (!order.venv.empty()) {
    if (!env_.FileSize(order.venv + "/bin/python")) {
      return NotFound("venv " + order.venv + ": not a Python virtual environment here (no " +
                      order.venv + "/bin/python)");
    }
    for (std::string& kv : spec->env) {
      if (kv.starts_with("PATH=")) kv = "PATH=" + order.venv + "/bin:" + kv.substr(5);
    }
    std::erase_if(spec->env, [](const std::string& kv) { return kv.starts_with("PYTHONHOME="); });
    spec->env.push_back("VIRTUAL_ENV=" + order.venv);
  }
  if (!order.conda.empty()) {
    std::string conda = GetEnv("CONDA_EXE", "");
    if (conda.empty() || !env_.FileSize(conda)) {
      conda.clear();
      std::string path = GetEnv("PATH", "/usr/local/bin:/usr/bin:/bin");
      for (size_t i = 0; i <= path.size() && conda.empty();) {
        size_t j = std::min(path.find(':', i), path.size());
        std::string candidate = path.substr(i, j - i) + "/conda";
        if (j > i && env_.FileSize(candidate)) conda = candidate;
        i = j + 1;
      }
    }
    if (conda.empty()) {
      return NotFound("conda " + order.conda +
                      ": conda is not installed here (not on the agent's PATH, no CONDA_EXE)");
    }
    std::vector<std::string> argv = {conda, "run", "--no-capture-output",
                                     order.conda[0] == '/' ? "-p" : "-n", order.conda};
    argv.insert(argv.end(), spec->argv.begin(), spec->argv.end());
    spec->argv = std::move(argv);
  }
  return Status::Ok();
}

std::map<std::string, std::string> Launcher::Environment(const LaunchOrder& order) const {
  std::string dir = JobDir(order.job);
  std::map<std::string, std::string> env;
  env["PATH"] = GetEnv("PATH", "/usr/local/bin:/usr/bin:/bin");
  env["HOME"] = GetEnv("HOME", "/");
  env["LANG"] = GetEnv("LANG", "C.UTF-8");
  env["USER"] = order.user;
  env["LOGNAME"] = order.user;
  for (const auto& [k, v] : order.env) env[k] = v;
  // Whole GPUs by their CUDA index; MIG instances by their UUID, the only way CUDA names them.
  std::string visible;
  for (int g : order.gpus) {
    if (!visible.empty()) visible += ',';
    if (g >= 0 && static_cast<size_t>(g) < gpus_.size() && !gpus_[g].mig_profile.empty()) {
      visible += gpus_[g].uuid;
    } else if (g >= 0 && static_cast<size_t>(g) < gpus_.size() && gpus_[g].physical >= 0) {
      visible += std::to_string(gpus_[g].physical);
    } else {
      visible += std::to_string(g);
    }
  }
  env["CUDA_VISIBLE_DEVICES"] = visible;
  env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  env["BATON_JOB_ID"] = order.job.ToString();
  env["BATON_JOB_NAME"] = order.name;
  env["BATON_RESTART_COUNT"] = std::to_string(order.attempt);
  if (order.array_id.value != 0) {
    env["BATON_ARRAY_JOB_ID"] = order.array_id.ToString();
    env["BATON_ARRAY_INDEX"] = std::to_string(order.array_index);
  }
  env["BATON_CHECKPOINT_DIR"] =
      order.checkpoint_dir.empty() ? dir + "/checkpoints" : order.checkpoint_dir;
  env["BATON_METRICS_FILE"] = dir + "/metrics.jsonl";
  env["BATON_PREEMPT_DEADLINE"] = DeadlineFileOf(options_.data_dir, order.job, order.attempt);
  env["BATON_NODELIST"] = order.nodelist;
  env["BATON_NODE_NAME"] = options_.name;
  if (order.milli_per_gpu < 1000 && !order.gpus.empty()) {
    env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] =
        std::to_string(std::max<int64_t>(1, order.milli_per_gpu / 10));
    if (order.gpu_memory_bytes > 0) {
      env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] =
          "0=" + std::to_string(order.gpu_memory_bytes >> 20) + "M";
    }
  }
  if (order.num_nodes > 1 || order.processes > 1) {
    // torchrun's rendezvous variables; a job that sets MASTER_ADDR or MASTER_PORT itself keeps
    // its own.
    auto set_default = [&](const std::string& k, const std::string& v) {
      if (std::none_of(order.env.begin(), order.env.end(),
                       [&](const auto& kv) { return kv.first == k; }))
        env[k] = v;
    };
    std::string master = order.master_addr;
    if (master.empty()) master = order.nodelist.substr(0, order.nodelist.find(','));
    set_default("MASTER_ADDR", master);
    // A controller always names the port; one too old to do so used 29500 + id mod 10000.
    set_default("MASTER_PORT",
                std::to_string(order.master_port > 0 ? order.master_port
                                                     : 29500 + order.job.value % 10000));
    int world = std::max(order.world_size, order.num_nodes);
    // A batch script's ranks are its srun's tasks' (SLURM_PROCID), as under Slurm: the script
    // passes no rank of its own to what it starts.
    if (!order.batch) {
      env["WORLD_SIZE"] = std::to_string(world);
      env["RANK"] = std::to_string(order.world_size > 1 ? order.rank_offset : order.node_rank);
      env["NODE_RANK"] = std::to_string(order.node_rank);
      env["LOCAL_RANK"] = "0";
      env["LOCAL_WORLD_SIZE"] = std::to_string(order.processes);
      env["GROUP_RANK"] = std::to_string(order.node_rank);
    }
  }
  if (order.batch && order.step_port > 0) {
    // Where srun reaches this job's other nodes (the first node), or listens (the others).
    env["BATON_STEP_PORT"] = std::to_string(order.step_port);
    env["BATON_STEP_KEY"] = order.step_key;
    if (order.node_rank == 0) {
      std::string addrs;
      for (const std::string& a : order.node_addrs) addrs += (addrs.empty() ? "" : ",") + a;
      env["BATON_STEP_ADDRS"] = addrs;
    }
    if ((order.node_rank > 0 || order.alloc) &&
        static_cast<size_t>(order.node_rank) < order.node_addrs.size()) {
      env["BATON_STEP_BIND"] = order.node_addrs[static_cast<size_t>(order.node_rank)];
    }
  }
  if (order.slurm_env) {
    AddSlurmEnvironment(order, options_.name, &env);
    env["PATH"] = options_.data_dir + "/slurm-bin:" + env["PATH"];
    // The notice --signal asks for: srun, a batch script's host and its step servers send it to
    // the script's steps (srun's tasks), or leave it to the shell alone ("B:10").
    if (order.signal != 0)
      env["BATON_NOTICE_SIGNAL"] = (order.signal_shell ? "B:" : "") + std::to_string(order.signal);
  }

  return env;
}

void Launcher::BindToGpuNuma(const LaunchOrder& order, ProcessSpec* spec) {
  // CPUs and memory of the NUMA node(s) the job's GPUs hang off.
  std::set<int> numa_nodes;
  for (int g : order.gpus) {
    if (g >= 0 && static_cast<size_t>(g) < gpus_.size() && gpus_[g].numa_node >= 0)
      numa_nodes.insert(gpus_[g].numa_node);
  }
  if (!numa_nodes.empty()) {
    if (auto cpus = options_.topology.CpuListOf(numa_nodes)) {
      spec->cpus = *cpus;
      if (numa_nodes.size() == 1) spec->memory_node = *numa_nodes.begin();
    } else {
      for (int n : numa_nodes) {
        const HostTopology::Numa* node = options_.topology.NumaNode(n);
        if ((node != nullptr && !node->cpus.empty()) || !numa_warned_.insert(n).second) continue;
        LogWarn("GPUs on NUMA node " + std::to_string(n) +
                    " but this host has no such node (simulated GPUs?): their jobs run without CPU "
                    "binding",
                Context());
      }
    }
  }
}

// Where and in what the job runs: its working directory (its code snapshot's copy, if any)
// and its Python environment.
Status Launcher::PlaceLaunch(const LaunchOrder& order, const std::optional<UnixUser>& user,
                             ProcessSpec* spec) {
  spec->workdir = order.workdir.empty() ? JobDir(order.job) : order.workdir;
  if (!order.code.empty()) {
    auto code = PrepareCode(order, user);
    if (!code) return Unavailable("code snapshot: " + code.error().message());
    spec->workdir = *code;
  }
  if (!order.image.empty()) return InImage(order, spec);
  return InPythonEnvironment(order, spec);
}

// The job's own copy of its code snapshot, JOBDIR/code: an attempt on a node that ran it
// before goes on in the copy it left; else the archive (fetched from the controller once per
// node, DATA/code-cache/ID.tar.gz) is unpacked there. It is unpacked in the agent's own
// code-cache/ (0700), given to the job's user there and then moved into place: never unpacked
// or given away inside the job's directory, where the user may have put links.
Result<std::string> Launcher::PrepareCode(const LaunchOrder& order,
                                          const std::optional<UnixUser>& user) {
  std::string dest = JobDir(order.job) + "/code";
  if (env_.ListDir(dest)) return dest;
  std::string cache = options_.data_dir + "/code-cache";
  std::string archive = cache + "/" + order.code + ".tar.gz";
  if (!env_.FileSize(archive)) {
    ASSIGN_OR_RETURN(std::string body, fetch_code_(order.code));
    RETURN_IF_ERROR(env_.CreateDirs(cache));
    RETURN_IF_ERROR(env_.WriteFileAtomic(archive, body, WriteFileOptions{.mode = 0600}));
  }
  std::string staging =
      cache + "/" + JobAttempt{order.job, order.attempt}.ToString() + ".unpacking";
  RETURN_IF_ERROR(env_.CreateDirs(staging));
  RETURN_IF_ERROR(env_.RunTool(
      {"tar", "-xzf", archive, "-C", staging, "--no-same-owner", "--delay-directory-restore"}));
  if (user) RETURN_IF_ERROR(env_.SetOwnerTree(staging, user->uid, user->gid));
  RETURN_IF_ERROR(env_.RenameFile(staging, dest));
  return dest;
}

Result<UnixUser> Launcher::RunAsUser(const LaunchOrder& order, ProcessSpec* spec) {
  // The job runs as its user, who must exist here and own the job's directory.
  if (order.user == "root" && !options_.allow_root_jobs) {
    return Err(PermissionDenied("jobs do not run as root on node " + options_.name +
                                " (its agent allows it with --allow-root-jobs)"));
  }
  auto user = LookupUnixUser(order.user);
  if (!user) return Err(NotFound("no such user '" + order.user + "' on node " + options_.name));
  spec->run_as = order.user;
  std::string dir = JobDir(order.job);
  if (Status st = Reachable(dir, order.user, *user); !st.ok()) {
    // Its working directory is in its own directory (none given, or its code's copy): it
    // cannot run. Else it runs elsewhere, but $BATON_CHECKPOINT_DIR and $BATON_METRICS_FILE
    // are out of its reach: its log says so.
    if (order.workdir.empty()) return Err(st);
    if (Status a = env_.AppendFile(dir + "/output.log", "baton: warning: " + st.message() + "\n");
        !a.ok())
      LogWarn(a.message(), Context(order.job));
  }
  for (const std::string& path : {dir, dir + "/checkpoints"}) {
    if (Status st = env_.SetOwner(path, user->uid, user->gid); !st.ok())
      return Err(Internal("node " + options_.name + ": " + st.message()));
  }
  if (!order.checkpoint_dir.empty()) ShareCheckpoints(order, *user);
  bool home_given = false;
  for (const auto& [k, v] : order.env) home_given |= k == "HOME";
  if (!home_given) {
    for (std::string& e : spec->env) {
      if (e.rfind("HOME=", 0) == 0) e = "HOME=" + user->home;
    }
  }
  return *user;
}

// Whether `user` may pass through every directory above the job's: a data directory under
// a home that is 0700 (root's ~/.baton) cannot hold other users' jobs.
Status Launcher::Reachable(const std::string& job_dir, const std::string& name,
                           const UnixUser& user) {
  std::error_code ec;
  if (user.uid == 0) return Status::Ok();
  fs::path dir = fs::absolute(job_dir, ec).parent_path();
  for (; !ec && !dir.empty(); dir = dir.parent_path()) {
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) break;
    // The group bit is taken as passing: the user may be in that group by a supplementary one.
    bool passes = st.st_uid == user.uid ? (st.st_mode & S_IXUSR) != 0
                                        : (st.st_mode & (S_IXGRP | S_IXOTH)) != 0;
    if (!passes) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
      return PermissionDenied("node " + options_.name + ": user " + name +
                              " cannot reach its job directory: " + dir.string() + " is mode " +
                              mode +
                              " (give the agent a data directory others may pass "
                              "through, e.g. --data /var/lib/baton)");
    }
    if (dir == dir.root_path()) break;
  }
  return Status::Ok();
}

// A shared checkpoint root holds ROOT/USER/JOB (the controller names it): USER/ is the user's
// alone (0700), so that no other user's job reaches their checkpoints. A root laid out
// otherwise (an older controller's ROOT/JOB) is left as it is but for the job's own directory.
// A project with a checkpoint_group has ROOT/project:NAME/JOB instead: project:NAME/ is root's
// and the group's, 0751 (members list it; anyone else passes only into a directory of their
// own), and JOB/ the user's and the group's, 02750 (members read; the setgid bit gives what
// the job writes the group too). A group this node does not know leaves the job's directory
// its user's alone, and says so in the job's log.
void Launcher::ShareCheckpoints(const LaunchOrder& order, const UnixUser& user) {
  fs::path job_dir(order.checkpoint_dir);
  auto warn = [&](const Status& st, const std::string& what) {
    LogWarn(st.message() + ": " + what, Context(order.job));
  };
  std::optional<gid_t> group;
  if (!order.checkpoint_group.empty()) {
    auto found = LookupUnixGroup(order.checkpoint_group);
    if (found) {
      group = *found;
    } else {
      std::string line = "baton: warning: checkpoint_group: " + found.error().message() +
                         ": the checkpoints are " + order.user + "'s alone\n";
      if (Status st = env_.AppendFile(JobDir(order.job) + "/output.log", line); !st.ok())
        warn(st, "a job's log");
      warn(found.error(), "its checkpoints are its user's alone");
    }
  }
  struct Share {
    std::string dir;
    uid_t uid;
    gid_t gid;
    mode_t mode;
  };
  std::vector<Share> shares;
  if (group) {
    shares.push_back({job_dir.string(), user.uid, *group, 02750});
    if (job_dir.parent_path().filename().string().starts_with("project:"))
      shares.push_back({job_dir.parent_path().string(), 0, *group, 0751});
  } else {
    shares.push_back({job_dir.string(), user.uid, user.gid, 0700});
    if (job_dir.parent_path().filename() == order.user)
      shares.push_back({job_dir.parent_path().string(), user.uid, user.gid, 0700});
  }
  for (const Share& s : shares) {
    Status st = env_.SetOwner(s.dir, s.uid, s.gid);
    if (st.ok()) st = env_.SetMode(s.dir, s.mode);
    if (!st.ok()) warn(st, "the job's user may not write there, or others may read it");
  }
}

std::string Launcher::DmemRegionOf(const LaunchOrder& order) const {
  // A fractional job that asked for GPU memory, on a whole GPU whose PCI address is known.
  if (!cgroups_.Has("dmem") || order.milli_per_gpu >= 1000 || order.gpus.size() != 1 ||
      order.gpu_memory_bytes <= 0)
    return "";
  const int g = order.gpus[0];
  if (g < 0 || static_cast<size_t>(g) >= gpu_addresses_.size() || gpu_addresses_[g].empty())
    return "";
  // The driver's region of the GPU's own memory: its name holds the PCI address
  // ("drm/0000:18:00.0/vram0"); the first such, in the kernel's order.
  const std::string address = "/" + gpu_addresses_[g] + "/";
  for (const DmemRegion& r : cgroups_.DmemRegions()) {
    if (r.name.find(address) != std::string::npos) return r.name;
  }
  return "";
}

void Launcher::JoinCgroup(const LaunchOrder& order, const std::string& name, ProcessSpec* spec) {
  if (!cgroups_.usable()) return;
  CgroupLimits limits{.memory_bytes = order.memory_bytes,
                      .cpu_millis = int64_t{order.cpus} * 1000,
                      .cpus = spec->cpus,
                      .mems = spec->memory_node >= 0 ? std::to_string(spec->memory_node) : "",
                      .pids = options_.job_pids_max};
  // The node's other GPUs: /dev/nvidiaN (major 195) of each physical GPU none of the job's
  // GPUs is on (a device file's minor is the GPU's ordinal, as the NVIDIA driver numbers them).
  auto physical = [](const Gpu& g) { return g.physical >= 0 ? g.physical : g.index; };
  std::set<int> own, others;
  for (const Gpu& g : gpus_) {
    bool mine = std::find(order.gpus.begin(), order.gpus.end(), g.index) != order.gpus.end();
    (mine ? own : others).insert(physical(g));
  }
  for (int minor : others) {
    if (!own.contains(minor)) limits.denied_devices.emplace_back(kNvidiaMajor, minor);
  }
  const std::string region = DmemRegionOf(order);
  if (!region.empty()) limits.device_memory.emplace_back(region, order.gpu_memory_bytes);
  auto group = cgroups_.Create(name, limits);
  if (group) {
    spec->cgroup = *group;
    if (!region.empty()) {
      const std::string line =
          "baton: the kernel holds this job to " + FormatSize(order.gpu_memory_bytes) + " of GPU " +
          std::to_string(order.gpus[0]) + "'s memory (cgroup dmem.max, " + region + ")\n";
      if (Status st = env_.AppendFile(JobDir(order.job) + "/output.log", line); !st.ok())
        LogWarn(st.message(), Context(order.job));
    }
  } else {
    LogWarn("job " + order.job.ToString() + " runs without its cgroup: " + group.error().message(),
            Context(order.job));
  }
}

}  // namespace baton::agent
