// Jobs in a container image (`--image`): the launch's command becomes `podman run ...` (where
// the job's PATH has podman and the image is not a .sif file) or `apptainer exec ...`, with the
// job's directory, working directory and checkpoint directory mounted at the same paths, its
// environment passed in, its GPUs passed through (CDI devices with podman, --nv with
// apptainer) when they are real, and the host's network (the rendezvous). The runtimes found on
// the agent's PATH at start are told to the controller (NodeInfo::runtimes).
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string_view>

#include "agent/agent.h"
#include "agent/launcher.h"

namespace baton::agent {

namespace {

std::string PathOf(const std::vector<std::string>& env) {
  for (const std::string& e : env) {
    if (e.starts_with("PATH=")) return e.substr(5);
  }
  return "";
}

}  // namespace

std::vector<std::string> Launcher::FindRuntimes() {
  const char* path = std::getenv("PATH");
  std::vector<std::string> found;
  for (const char* runtime : {"podman", "apptainer", "singularity"}) {
    if (path != nullptr && !FindExecutable(path, runtime).empty()) found.emplace_back(runtime);
  }
  return found;
}

Status Launcher::InImage(const LaunchOrder& order, ProcessSpec* spec) {
  std::string path = PathOf(spec->env);
  bool sif = order.image.ends_with(".sif") || order.image[0] == '/';
  std::string podman = sif ? "" : FindExecutable(path, "podman");
  std::string apptainer = FindExecutable(path, "apptainer");
  if (apptainer.empty()) apptainer = FindExecutable(path, "singularity");
  if (podman.empty() && apptainer.empty()) {
    return Unavailable("no container runtime for image " + order.image + " (" +
                       (sif ? "apptainer" : "podman or apptainer") + " on the job's PATH)");
  }
  std::set<std::string> mounts = {JobDir(order.job), spec->workdir};
  if (!order.checkpoint_dir.empty()) mounts.insert(order.checkpoint_dir);
  bool real_gpus = backend_ != GpuBackendKind::kSimulated && !order.gpus.empty();
  // Where the agent writes its $BATON_PREEMPT_DEADLINE, read-only at the same path.
  const std::string deadlines = options_.data_dir + "/deadlines";
  std::vector<std::string> argv;
  if (!podman.empty()) {
    argv = {podman,
            "run",
            "--rm",
            "--name",
            "baton-" + options_.name + "-" + JobAttempt{order.job, order.attempt}.ToString(),
            "--network",
            "host",
            "--ipc",
            "host",
            "-w",
            spec->workdir};
    if (order.interactive != Interactive::kNone) argv.push_back("-i");
    if (order.interactive == Interactive::kTty) argv.push_back("-t");
    for (const std::string& m : mounts) argv.insert(argv.end(), {"-v", m + ":" + m});
    argv.insert(argv.end(), {"-v", deadlines + ":" + deadlines + ":ro"});
    // The job's variables, their values from podman's own environment (the job's); the image
    // keeps its PATH and HOME.
    for (const std::string& e : spec->env) {
      std::string key = e.substr(0, e.find('='));
      if (key != "PATH" && key != "HOME") argv.insert(argv.end(), {"-e", key});
    }
    for (int g : real_gpus ? order.gpus : std::vector<int>{}) {
      if (g >= 0 && static_cast<size_t>(g) < gpus_.size())
        argv.insert(argv.end(), {"--device", "nvidia.com/gpu=" + gpus_[g].uuid});
    }
    argv.push_back(order.image);
  } else {
    std::string binds;
    for (const std::string& m : mounts) binds += (binds.empty() ? "" : ",") + m;
    binds += "," + deadlines + ":" + deadlines + ":ro";
    argv = {apptainer, "exec", "--pwd", spec->workdir, "--bind", binds};
    if (real_gpus) argv.push_back("--nv");
    bool uri = order.image.find("://") != std::string::npos;
    argv.push_back(sif || uri ? order.image : "docker://" + order.image);
  }
  argv.insert(argv.end(), spec->argv.begin(), spec->argv.end());
  spec->argv = std::move(argv);
  return Status::Ok();
}

}  // namespace baton::agent
