#include "agent/cgroup.h"

#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

namespace baton::agent {
namespace {

// The controllers job groups are limited by, in the order their warnings appear.
constexpr const char* kWanted[] = {"memory", "cpu", "cpuset", "pids"};
// And the devices controller (v1; under v2 a BPF program): a job opens only its own GPUs' device
// files.
constexpr std::string_view kWantedAll[] = {"memory", "cpu", "cpuset", "pids", "devices"};

std::vector<std::string_view> SplitOn(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// cpu.max's period: 100 ms, the kernel's default. A quota below 1 ms is refused (EINVAL).
constexpr int64_t kCpuPeriodMicros = 100000;
constexpr int64_t kMinCpuQuotaMicros = 1000;

// Why a parent refuses with EBUSY: cgroup v2's "no internal processes" rule.
constexpr const char* kBusyParent =
    " (a group that holds processes, such as the agent's own, cannot pass controllers down: "
    "start the agent in a leaf group of its delegated subtree, e.g. with systemd's "
    "DelegateSubgroup=, and give the agent a job root beside it)";

// cgroup v2 has no devices controller: a BPF program of type BPF_PROG_TYPE_CGROUP_DEVICE,
// attached to a group, is asked about every open and mknod of a device file by its processes
// (as runc and systemd do it). Written here as raw instructions through the bpf() system call
// rather than with libbpf: the program is six instructions plus four per denied device, and
// libbpf (with its BTF and ELF loading) would be a new dependency for that alone.
int Bpf(int cmd, union bpf_attr* attr) {
  return static_cast<int>(syscall(__NR_bpf, cmd, attr, sizeof(*attr)));
}

constexpr bpf_insn Insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst;
  i.src_reg = src;
  i.off = off;
  i.imm = imm;
  return i;
}

// The program: the context is struct bpf_cgroup_dev_ctx {access_type, major, minor}, the
// device type in access_type's low 16 bits. A character device in `denied` returns 0 (EPERM to
// the process), everything else 1; with BPF_F_ALLOW_MULTI a parent group's programs are asked
// as well, so this only ever takes away.
std::vector<bpf_insn> DeviceProgram(const std::vector<std::pair<int, int>>& denied) {
  std::vector<bpf_insn> p;
  p.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, 2, 1, 0, 0));       // r2 = ctx->access_type
  p.push_back(Insn(BPF_ALU | BPF_AND | BPF_K, 2, 0, 0, 0xffff));  // r2 &= 0xffff: the type
  p.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, 3, 1, 4, 0));       // r3 = ctx->major
  p.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, 4, 1, 8, 0));       // r4 = ctx->minor
  // Not a character device: past every denial, to the allow.
  p.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, 2, 0, static_cast<int16_t>(4 * denied.size()),
                   BPF_DEVCG_DEV_CHAR));
  for (const auto& [major, minor] : denied) {
    p.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, 3, 0, 3, major));  // another major: next one
    p.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, 4, 0, 2, minor));  // another minor: next one
    p.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0));    // r0 = 0: refused
    p.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  }
  p.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1));  // r0 = 1: allowed
  p.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  return p;
}

// Loads the program; its file descriptor, or -1 with errno set.
int LoadDeviceProgram(const std::vector<std::pair<int, int>>& denied) {
  std::vector<bpf_insn> program = DeviceProgram(denied);
  static const char kLicense[] = "Apache-2.0";  // no GPL-only helper is called
  union bpf_attr attr {};
  attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  attr.insns = reinterpret_cast<uint64_t>(program.data());
  attr.insn_cnt = static_cast<uint32_t>(program.size());
  attr.license = reinterpret_cast<uint64_t>(kLicense);
  int fd = Bpf(BPF_PROG_LOAD, &attr);
  if (fd >= 0) (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
}

// Takes the device programs off a reused group (a job started again under the same name),
// so that the old job's denials do not stay beside the new ones. Best effort: a program that
// cannot be taken off only denies more.
void DetachDevicePrograms(int group_fd) {
  uint32_t ids[64] = {};
  union bpf_attr query {};
  query.query.target_fd = static_cast<uint32_t>(group_fd);
  query.query.attach_type = BPF_CGROUP_DEVICE;
  query.query.prog_ids = reinterpret_cast<uint64_t>(ids);
  query.query.prog_cnt = 64;
  if (Bpf(BPF_PROG_QUERY, &query) != 0) return;
  for (uint32_t i = 0; i < query.query.prog_cnt && i < 64; ++i) {
    union bpf_attr get {};
    get.prog_id = ids[i];
    int prog = Bpf(BPF_PROG_GET_FD_BY_ID, &get);
    if (prog < 0) continue;
    union bpf_attr detach {};
    detach.target_fd = static_cast<uint32_t>(group_fd);
    detach.attach_bpf_fd = static_cast<uint32_t>(prog);
    detach.attach_type = BPF_CGROUP_DEVICE;
    (void)Bpf(BPF_PROG_DETACH, &detach);
    close(prog);
  }
}

// Attaches a program denying `denied` to the group at `path` (after taking off any earlier
// one); 0 or the errno. The attachment lives as long as the group: no descriptor is kept.
int DenyDevices(const std::string& path, const std::vector<std::pair<int, int>>& denied) {
  int group = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (group < 0) return errno;
  DetachDevicePrograms(group);
  int err = 0;
  if (!denied.empty()) {
    int prog = LoadDeviceProgram(denied);
    if (prog < 0) {
      err = errno;
    } else {
      union bpf_attr attach {};
      attach.target_fd = static_cast<uint32_t>(group);
      attach.attach_bpf_fd = static_cast<uint32_t>(prog);
      attach.attach_type = BPF_CGROUP_DEVICE;
      attach.attach_flags = BPF_F_ALLOW_MULTI;
      if (Bpf(BPF_PROG_ATTACH, &attach) != 0) err = errno;
      close(prog);
    }
  }
  close(group);
  return err;
}

// Remove waits this long, at most, for the killed processes to leave the group.
constexpr int kRemoveAttempts = 10;
constexpr auto kRemoveWait = std::chrono::milliseconds(5);

std::string ErrorText(int err) { return std::strerror(err); }

std::string WhatJobsLack(std::string_view controller) {
  if (controller == "memory") return "a memory limit, and OOM kills are not counted";
  if (controller == "devices") return "device isolation (they may open other GPUs' device files)";
  if (controller == "cpu") return "a CPU quota";
  if (controller == "cpuset") return "cpuset pinning (the shim's CPU binding stays)";
  return "a process-count limit";
}

// A whole small file; nothing when it cannot be opened.
std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::set<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::set<std::string> words;
  for (std::string w; in >> w;) words.insert(w);
  return words;
}

// "(only: hugetlb io)" or "(none there)": what a group does offer, for a warning.
std::string Offered(const std::set<std::string>& controllers) {
  if (controllers.empty()) return "(none there)";
  std::string out = "(only:";
  for (const auto& c : controllers) out += " " + c;
  return out + ")";
}

// Writes `value` to a cgroup file; 0 or the errno. O_CREAT: cgroupfs has the file already (and
// the flag is then a no-op), while a test's fake root is a directory of plain files.
int WriteValue(const std::string& path, const std::string& value) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  // cgroupfs takes a value in one write(); its errors (EINVAL, EBUSY, ...) come back here.
  ssize_t written = write(fd, value.data(), value.size());
  int err = written < 0 ? errno : (static_cast<size_t>(written) == value.size() ? 0 : EIO);
  close(fd);
  return err;
}

// The directory that holds `path` ("" when there is none).
std::string ParentOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool IsOctal(char c) { return c >= '0' && c <= '7'; }

// /proc/self/mounts writes a space in a mount point as \040 (and tab, newline, backslash alike).
std::string UnescapeMountField(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && IsOctal(field[i + 1]) &&
        IsOctal(field[i + 2]) && IsOctal(field[i + 3])) {
      out += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                               (field[i + 3] - '0'));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

std::string CpuMax(int64_t cpu_millis) {
  if (cpu_millis > INT64_MAX / (kCpuPeriodMicros / 1000))
    return "max " + std::to_string(kCpuPeriodMicros);
  int64_t quota = std::max(cpu_millis * (kCpuPeriodMicros / 1000), kMinCpuQuotaMicros);
  return std::to_string(quota) + " " + std::to_string(kCpuPeriodMicros);
}

// SIGKILL to every process in the group, for kernels without cgroup.kill. Never this process.
void KillEachProcess(const std::string& group) {
  std::istringstream procs(ReadFile(group + "/cgroup.procs").value_or(""));
  for (long pid; procs >> pid;) {
    if (pid > 1 && pid != getpid()) kill(static_cast<pid_t>(pid), SIGKILL);
  }
}

}  // namespace

Result<std::string> DefaultCgroupRoot(std::string_view mounts, std::string_view self_cgroup) {
  std::string mount;
  std::istringstream mount_lines{std::string(mounts)};
  for (std::string line; std::getline(mount_lines, line);) {
    std::istringstream fields(line);
    std::string device, dir, type;
    if (fields >> device >> dir >> type && type == "cgroup2") {
      mount = UnescapeMountField(dir);
      break;
    }
  }
  if (mount.empty())
    return Err(Unavailable("no cgroup2 file system is mounted (/proc/self/mounts)"));

  std::optional<std::string> group;
  std::istringstream group_lines{std::string(self_cgroup)};
  for (std::string line; std::getline(group_lines, line);) {
    if (line.rfind("0::", 0) == 0) group = line.substr(3);
  }
  if (!group || group->empty() || (*group)[0] != '/') {
    return Err(Unavailable(
        "this process has no cgroup v2 group (no \"0::/...\" line in /proc/self/cgroup)"));
  }
  // In a cgroup namespace whose root is below the mount's, the path climbs out with "..".
  if (group->find("/..") != std::string::npos) {
    return Err(Unavailable("this process's cgroup " + *group + " lies outside the cgroup2 mount " +
                           mount));
  }
  while (mount.size() > 1 && mount.back() == '/') mount.pop_back();
  std::string root = *group == "/" ? mount : mount + *group;
  return root + "/baton-jobs";
}

std::vector<std::pair<std::string, std::string>> V1CgroupRoots(std::string_view mounts,
                                                               std::string_view self_cgroup) {
  std::vector<std::pair<std::string, std::string>> roots;
  // controller -> mount point, from "cgroup DIR cgroup OPTIONS ..." lines.
  std::map<std::string, std::string, std::less<>> mounted;
  std::istringstream mount_lines{std::string(mounts)};
  for (std::string line; std::getline(mount_lines, line);) {
    std::istringstream fields(line);
    std::string device, dir, type, options;
    if (!(fields >> device >> dir >> type >> options) || type != "cgroup") continue;
    for (std::string_view option : SplitOn(options, ',')) {
      for (std::string_view c : kWantedAll) {
        if (option == c && !mounted.contains(c)) mounted.emplace(c, UnescapeMountField(dir));
      }
    }
  }
  if (!mounted.contains("memory")) return roots;
  // controller -> this process's group in its hierarchy, from "N:ctl1,ctl2:/path" lines.
  std::map<std::string, std::string, std::less<>> groups;
  std::istringstream group_lines{std::string(self_cgroup)};
  for (std::string line; std::getline(group_lines, line);) {
    size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string path = line.substr(second + 1);
    std::string controllers = line.substr(first + 1, second - first - 1);
    for (std::string_view c : SplitOn(controllers, ',')) groups.emplace(std::string(c), path);
  }
  for (std::string_view c : kWantedAll) {
    auto m = mounted.find(c);
    auto g = groups.find(c);
    if (m == mounted.end() || g == groups.end() || g->second.find("/..") != std::string::npos)
      continue;
    std::string root = m->second;
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    if (g->second != "/") root += g->second;
    roots.emplace_back(std::string(c), root + "/baton-jobs");
  }
  return roots;
}

CgroupManager CgroupManager::Detect(std::string root_override) {
  std::string root = std::move(root_override);
  if (root.empty()) {
    auto v1 = V1CgroupRoots(ReadFile("/proc/self/mounts").value_or(""),
                            ReadFile("/proc/self/cgroup").value_or(""));
    if (!v1.empty()) {
      CgroupManager manager;
      manager.SetUpV1(v1);
      return manager;
    }
    auto found = DefaultCgroupRoot(ReadFile("/proc/self/mounts").value_or(""),
                                   ReadFile("/proc/self/cgroup").value_or(""));
    if (!found) {
      CgroupManager none;
      none.warnings_.push_back("cgroup v2: " + found.error().message() +
                               ": jobs run without cgroup limits");
      return none;
    }
    root = *found;
  }
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  CgroupManager manager(root);
  manager.SetUp(ParentOf(root));
  return manager;
}

void CgroupManager::SetUp(const std::string& parent) {
  if (mkdir(root_.c_str(), 0755) != 0 && errno != EEXIST) {
    int err = errno;  // EACCES when not root, EROFS when cgroup2 is mounted read-only
    warnings_.push_back("cgroup v2: cannot create " + root_ + ": " + ErrorText(err) +
                        ": jobs run without cgroup limits");
    return;
  }
  struct stat st {};
  if (stat(root_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    warnings_.push_back("cgroup v2: " + root_ +
                        " is not a directory: jobs run without cgroup limits");
    return;
  }
  if (access(root_.c_str(), W_OK) != 0) {
    int err = errno;
    warnings_.push_back("cgroup v2: cannot create groups under " + root_ + ": " + ErrorText(err) +
                        ": jobs run without cgroup limits");
    return;
  }
  usable_ = true;
  EnableControllers(parent);
  // Device isolation, on a real cgroup2 root (a test's plain directory gets none): whether this
  // kernel and this process may load a device program.
  struct statfs fs {};
  if (statfs(root_.c_str(), &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) return;
  if (int prog = LoadDeviceProgram({}); prog >= 0) {
    close(prog);
    enabled_.insert("devices");
  } else {
    int err = errno;  // EPERM without CAP_BPF/CAP_SYS_ADMIN, EINVAL on kernels before 4.15
    warnings_.push_back("cgroup v2: cannot load a BPF device program: " + ErrorText(err) +
                        ": jobs run without " + WhatJobsLack("devices"));
  }
}

// cgroup v1: each hierarchy's root made (and for cpuset given its parent's CPUs and memory
// nodes, which a new v1 cpuset group starts without); a hierarchy that cannot be used is a
// warning, and jobs run without that controller.
void CgroupManager::SetUpV1(const std::vector<std::pair<std::string, std::string>>& roots) {
  version_ = 1;
  for (std::string_view c : kWantedAll) {
    auto it = std::find_if(roots.begin(), roots.end(), [&](const auto& r) { return r.first == c; });
    const std::string without = ": jobs run without " + WhatJobsLack(c);
    if (it == roots.end()) {
      warnings_.push_back("cgroup v1: controller " + std::string(c) +
                          " is not mounted as a hierarchy of its own" + without);
      continue;
    }
    const std::string& root = it->second;
    if (mkdir(root.c_str(), 0755) != 0 && errno != EEXIST) {
      int err = errno;
      warnings_.push_back("cgroup v1: cannot create " + root + ": " + ErrorText(err) + without);
      continue;
    }
    if (access(root.c_str(), W_OK) != 0) {
      int err = errno;
      warnings_.push_back("cgroup v1: cannot create groups under " + root + ": " + ErrorText(err) +
                          without);
      continue;
    }
    if (c == "cpuset") {
      bool ok = true;
      for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
        std::string mine = ReadFile(root + "/" + file).value_or("");
        if (mine.find_first_not_of(" \n") != std::string::npos) continue;
        std::string parents = ReadFile(ParentOf(root) + "/" + file).value_or("");
        while (!parents.empty() && parents.back() == '\n') parents.pop_back();
        if (int err = WriteValue(root + "/" + file, parents); err != 0) {
          warnings_.push_back("cgroup v1: cannot write '" + parents + "' to " + root + "/" + file +
                              ": " + ErrorText(err) + without);
          ok = false;
          break;
        }
      }
      if (!ok) continue;
    }
    if (c == "memory") memsw_ = access((root + "/memory.memsw.limit_in_bytes").c_str(), F_OK) == 0;
    if (root_.empty() || c == "memory") root_ = root;
    v1_roots_.emplace_back(std::string(c), root);
    enabled_.insert(std::string(c));
  }
  usable_ = !v1_roots_.empty();
}

std::string CgroupManager::GroupPath(const std::string& name) const {
  if (version_ == 2) return root_ + "/" + name;
  std::string path;
  for (const auto& [c, root] : v1_roots_) path += (path.empty() ? "" : ":") + root + "/" + name;
  return path;
}

std::string CgroupManager::V1Dir(const std::string& path, std::string_view controller) const {
  for (const auto& [c, root] : v1_roots_) {
    if (c != controller) continue;
    for (std::string_view dir : SplitOn(path, ':')) {
      if (dir.starts_with(root + "/")) return std::string(dir);
    }
  }
  return "";
}

// A job group gets a controller only when the root lists it in cgroup.subtree_control, and the
// root can list only what its parent passes down (the root's cgroup.controllers). So a missing
// controller is asked of the parent first; that fails with EBUSY while the parent holds
// processes (cgroup v2's "no internal processes" rule), which is worth saying plainly.
void CgroupManager::EnableControllers(const std::string& parent) {
  std::set<std::string> root_has = Words(ReadFile(root_ + "/cgroup.controllers").value_or(""));
  // Only a real group (one with a cgroup.controllers file) is asked, never a plain directory.
  std::optional<std::string> parent_text;
  if (!parent.empty()) parent_text = ReadFile(parent + "/cgroup.controllers");
  std::set<std::string> parent_has = Words(parent_text.value_or(""));

  for (std::string c : kWanted) {
    const std::string without = ": jobs run without " + WhatJobsLack(c);
    if (root_has.count(c) == 0 && parent_has.count(c) > 0) {
      const std::string file = parent + "/cgroup.subtree_control";
      if (int err = WriteValue(file, "+" + c); err != 0) {
        std::string why = err == EBUSY ? kBusyParent : "";
        warnings_.push_back("cgroup v2: cannot enable " + c + " in " + file + ": " +
                            ErrorText(err) + why + without);
        continue;
      }
      root_has.insert(c);
    }
    if (root_has.count(c) == 0) {
      bool parent_lacks = parent_text.has_value();  // else the parent was never a candidate
      warnings_.push_back("cgroup v2: controller " + c + " is not available under " +
                          (parent_lacks ? parent : root_) + " " +
                          Offered(parent_lacks ? parent_has : root_has) + without);
      continue;
    }
    const std::string file = root_ + "/cgroup.subtree_control";
    if (int err = WriteValue(file, "+" + c); err != 0) {
      warnings_.push_back("cgroup v2: cannot enable " + c + " in " + file + ": " + ErrorText(err) +
                          without);
      continue;
    }
    enabled_.insert(c);
  }
  // Device memory (dmem, Linux 6.14): enabled where offered, without a word where not (most
  // kernels have none); a fractional job's GPU memory is then held by the kernel too.
  const std::string dmem = "dmem";
  if (root_has.count(dmem) == 0 && parent_has.count(dmem) > 0 &&
      WriteValue(parent + "/cgroup.subtree_control", "+" + dmem) == 0)
    root_has.insert(dmem);
  if (root_has.count(dmem) > 0) {
    const std::string file = root_ + "/cgroup.subtree_control";
    if (int err = WriteValue(file, "+" + dmem); err != 0) {
      warnings_.push_back("cgroup v2: cannot enable dmem in " + file + ": " + ErrorText(err) +
                          ": fractional jobs' GPU memory is held by MPS alone");
    } else {
      enabled_.insert(dmem);
    }
  }
}

std::vector<DmemRegion> CgroupManager::DmemRegions() const {
  std::vector<DmemRegion> out;
  if (!Has("dmem")) return out;
  // dmem.capacity is the root group's alone; the job root lies somewhere below it.
  std::string dir = root_;
  for (int depth = 0; depth < 64 && !dir.empty(); ++depth) {
    if (auto text = ReadFile(dir + "/dmem.capacity")) {
      for (std::string_view line : SplitOn(*text, '\n')) {
        const size_t space = line.rfind(' ');
        if (space == std::string_view::npos || space == 0) continue;
        int64_t bytes = 0;
        std::string_view number = line.substr(space + 1);
        auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), bytes);
        if (ec != std::errc() || end != number.data() + number.size()) continue;
        out.push_back(DmemRegion{.name = std::string(line.substr(0, space)), .bytes = bytes});
      }
      return out;
    }
    const size_t slash = dir.rfind('/');
    dir = slash == std::string::npos || slash == 0 ? "" : dir.substr(0, slash);
  }
  return out;
}

std::string CgroupManager::describe() const {
  if (!usable_) {
    return "job cgroups: off (" + (warnings_.empty() ? std::string("not set up") : warnings_[0]) +
           ")";
  }
  std::string with, without;
  if (version_ == 1) {
    for (std::string_view c : kWantedAll) (Has(c) ? with : without) += " " + std::string(c);
    if (memsw_) with += " (memory with swap)";
    std::string line =
        "job cgroups: cgroup v1, a group in each hierarchy's baton-jobs (memory's: " + root_ +
        "), limiting" + (with.empty() ? " nothing" : with);
    if (!without.empty()) line += "; without" + without;
    return line;
  }
  for (std::string_view c : kWantedAll) (Has(c) ? with : without) += " " + std::string(c);
  if (Has("devices")) with += " (devices by a BPF program)";
  if (Has("dmem")) with += " dmem";
  std::string line =
      "job cgroups: cgroup v2 under " + root_ + ", limiting" + (with.empty() ? " nothing" : with);
  if (!without.empty()) line += "; without" + without;
  return line;
}

Result<std::string> CgroupManager::Create(const std::string& name, const CgroupLimits& limits) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return Err(InvalidArgument("job cgroup name '" + name + "' is not one path component"));
  }
  if (!usable_) {
    return Err(Unavailable("no job cgroups on this node: " +
                           (warnings_.empty() ? std::string("not set up") : warnings_[0])));
  }
  if (version_ == 1) return CreateV1(name, limits);
  const std::string path = GroupPath(name);
  // An existing group (a job started again under the same name) is reused: every limit of an
  // enabled controller is written, "max" where unlimited, so none of the old ones stays.
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    int err = errno;
    return Err(Internal("cannot create " + path + ": " + ErrorText(err)));
  }
  std::vector<std::pair<std::string, std::string>> writes;  // file, value
  if (Has("memory")) {
    writes.emplace_back("memory.max",
                        limits.memory_bytes > 0 ? std::to_string(limits.memory_bytes) : "max");
  }
  if (Has("cpu")) {
    writes.emplace_back("cpu.max", limits.cpu_millis > 0
                                       ? CpuMax(limits.cpu_millis)
                                       : "max " + std::to_string(kCpuPeriodMicros));
  }
  // cpuset.cpus before cpuset.mems, as the kernel documents them; "" leaves the parent's.
  if (Has("cpuset") && !limits.cpus.empty()) writes.emplace_back("cpuset.cpus", limits.cpus);
  if (Has("cpuset") && !limits.mems.empty()) writes.emplace_back("cpuset.mems", limits.mems);
  if (Has("pids")) {
    writes.emplace_back("pids.max", limits.pids > 0 ? std::to_string(limits.pids) : "max");
  }
  // One region a write: newer kernels take no more.
  for (const auto& [region, bytes] : limits.device_memory) {
    if (Has("dmem")) writes.emplace_back("dmem.max", region + " " + std::to_string(bytes));
  }
  for (const auto& [file, value] : writes) {
    const std::string file_path = path + "/" + file;
    if (int err = WriteValue(file_path, value); err != 0) {
      (void)rmdir(path.c_str());  // a group with half its limits must not be used
      return Err(Internal("cannot write '" + value + "' to " + file_path + ": " + ErrorText(err)));
    }
  }
  if (Has("devices")) {
    if (int err = DenyDevices(path, limits.denied_devices); err != 0) {
      (void)rmdir(path.c_str());
      return Err(
          Internal("cannot attach the BPF device program to " + path + ": " + ErrorText(err)));
    }
  }
  return path;
}

Result<std::string> CgroupManager::CreateV1(const std::string& name, const CgroupLimits& limits) {
  std::vector<std::string> made;
  auto undo = [&] {
    for (const std::string& dir : made) (void)rmdir(dir.c_str());
  };
  for (const auto& [c, root] : v1_roots_) {
    const std::string dir = root + "/" + name;
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      int err = errno;
      undo();
      return Err(Internal("cannot create " + dir + ": " + ErrorText(err)));
    }
    made.push_back(dir);
    std::vector<std::pair<std::string, std::string>> writes;  // file, value
    if (c == "memory") {
      std::string limit = limits.memory_bytes > 0 ? std::to_string(limits.memory_bytes) : "-1";
      // memory+swap is never below memory: lift it first, then set both (a reused group).
      if (memsw_) writes.emplace_back("memory.memsw.limit_in_bytes", "-1");
      writes.emplace_back("memory.limit_in_bytes", limit);
      if (memsw_) writes.emplace_back("memory.memsw.limit_in_bytes", limit);
    } else if (c == "cpu") {
      writes.emplace_back("cpu.cfs_period_us", std::to_string(kCpuPeriodMicros));
      writes.emplace_back("cpu.cfs_quota_us", limits.cpu_millis > 0
                                                  ? std::to_string(std::max(limits.cpu_millis * 100,
                                                                            kMinCpuQuotaMicros))
                                                  : "-1");
    } else if (c == "cpuset") {
      // A v1 cpuset group starts with none: the job's, else the root's.
      auto inherit = [&](const char* file) {
        std::string v = ReadFile(root + "/" + file).value_or("");
        while (!v.empty() && v.back() == '\n') v.pop_back();
        return v;
      };
      writes.emplace_back("cpuset.cpus",
                          limits.cpus.empty() ? inherit("cpuset.cpus") : limits.cpus);
      writes.emplace_back("cpuset.mems",
                          limits.mems.empty() ? inherit("cpuset.mems") : limits.mems);
    } else if (c == "pids") {
      writes.emplace_back("pids.max", limits.pids > 0 ? std::to_string(limits.pids) : "max");
    } else if (c == "devices") {
      writes.emplace_back("devices.allow", "a");  // what its parent allows, then the denials
      for (const auto& [major, minor] : limits.denied_devices) {
        writes.emplace_back("devices.deny",
                            "c " + std::to_string(major) + ":" + std::to_string(minor) + " rwm");
      }
    }
    for (const auto& [file, value] : writes) {
      const std::string file_path = dir + "/" + file;
      if (int err = WriteValue(file_path, value); err != 0) {
        undo();  // a group with half its limits must not be used
        return Err(
            Internal("cannot write '" + value + "' to " + file_path + ": " + ErrorText(err)));
      }
    }
  }
  return GroupPath(name);
}

Status CgroupManager::Remove(const std::string& path) {
  if (version_ == 1) {
    // Each directory under its own hierarchy's root; the processes are the same in each, so
    // they are killed through any one that still exists, until every directory is gone.
    std::vector<std::string> dirs;
    for (std::string_view dir : SplitOn(path, ':')) {
      bool under = dir.find("/..") == std::string_view::npos &&
                   std::any_of(v1_roots_.begin(), v1_roots_.end(), [&](const auto& r) {
                     return dir.size() > r.second.size() + 1 && dir.starts_with(r.second + "/");
                   });
      if (!under) return InvalidArgument("job cgroup " + std::string(dir) + " is not under a root");
      dirs.emplace_back(dir);
    }
    int err = 0;
    for (int attempt = 0; attempt < kRemoveAttempts && !dirs.empty(); ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(kRemoveWait);
      for (const std::string& dir : dirs) KillEachProcess(dir);
      err = 0;
      std::erase_if(dirs, [&](const std::string& dir) {
        if (rmdir(dir.c_str()) == 0 || errno == ENOENT) return true;
        err = errno;
        return false;
      });
    }
    if (dirs.empty()) return Status::Ok();
    return Unavailable("cannot remove " + dirs[0] + " yet: " + ErrorText(err));
  }
  // The path comes from the agent's own records; a wrong one must not kill anything else.
  const std::string prefix = root_ + "/";
  if (root_.empty() || path.size() <= prefix.size() ||
      path.compare(0, prefix.size(), prefix) != 0 || path.find("/..") != std::string::npos) {
    return InvalidArgument("job cgroup " + path + " is not under " + root_);
  }
  if (access(path.c_str(), F_OK) != 0 && errno == ENOENT) return Status::Ok();
  const std::string kill_file = path + "/cgroup.kill";
  const bool has_kill = access(kill_file.c_str(), F_OK) == 0;
  int err = 0;
  for (int attempt = 0; attempt < kRemoveAttempts; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(kRemoveWait);
    // Again on each attempt: what was forking at the last kill may have left a child.
    if (has_kill) {
      (void)WriteValue(kill_file, "1");
    } else {
      KillEachProcess(path);
    }
    // rmdir fails with EBUSY until the last process has left the group.
    if (rmdir(path.c_str()) == 0) return Status::Ok();
    err = errno;
    if (err == ENOENT) return Status::Ok();
    if (err != EBUSY) break;
  }
  if (err == EBUSY) {
    return Unavailable("cannot remove " + path + " yet: its processes have not all ended (" +
                       ErrorText(err) + ")");
  }
  return Internal("cannot remove " + path + ": " + ErrorText(err));
}

int64_t CgroupManager::OomKills(const std::string& path) const {
  // "KEY VALUE" lines: v2's memory.events, v1's memory.oom_control (Linux 4.13 and later).
  std::string file = version_ == 2 ? path + "/memory.events" : V1Dir(path, "memory");
  if (file.empty()) return 0;
  if (version_ == 1) file += "/memory.oom_control";
  std::istringstream lines(ReadFile(file).value_or(""));
  std::string key;
  int64_t value = 0;
  while (lines >> key >> value) {
    if (key == "oom_kill") return value;
  }
  return 0;
}

}  // namespace baton::agent
