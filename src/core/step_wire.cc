#include "core/step_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "core/splice.h"

extern char** environ;

namespace baton::slurm {

namespace {

void PutLength(std::string* out, size_t n) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out->push_back(static_cast<char>((n >> shift) & 0xff));
}

void PutString(std::string* out, const std::string& s) {
  PutLength(out, s.size());
  *out += s;
}

std::optional<size_t> GetLength(int fd) {
  unsigned char b[4];
  if (!ReadExactFrom(fd, b, 4)) return std::nullopt;
  return (size_t{b[0]} << 24) | (size_t{b[1]} << 16) | (size_t{b[2]} << 8) | size_t{b[3]};
}

Result<std::string> GetString(int fd, const char* what, size_t* budget = nullptr) {
  std::optional<size_t> n = GetLength(fd);
  if (!n) return Err(InvalidArgument(std::string(what) + ": the request ended early"));
  if (*n > kMaxString) return Err(InvalidArgument(std::string(what) + ": longer than 1 MiB"));
  if (budget != nullptr) {
    if (*n > *budget) return Err(InvalidArgument("the request is longer than 64 MiB"));
    *budget -= *n;
  }
  std::string s(*n, '\0');
  if (!ReadExactFrom(fd, s.data(), s.size()))
    return Err(InvalidArgument(std::string(what) + ": the request ended early"));
  return s;
}

Result<std::vector<std::string>> GetList(int fd, const char* what, size_t* budget) {
  ASSIGN_OR_RETURN(std::string count, GetString(fd, what, budget));
  char* end = nullptr;
  unsigned long n = std::strtoul(count.c_str(), &end, 10);
  if (count.empty() || *end != '\0' || n > kMaxStrings)
    return Err(InvalidArgument(std::string(what) + ": a bad count"));
  std::vector<std::string> list;
  for (unsigned long i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(std::string s, GetString(fd, what, budget));
    list.push_back(std::move(s));
  }
  return list;
}

}  // namespace

std::string RequestHead(const std::string& key) {
  std::string out = kMagic;
  PutString(&out, key);
  return out;
}

std::string RequestTail(const StepRequest& r) {
  std::string out;
  PutString(&out, r.verb);
  if (r.verb == "run" || r.verb == "srun") {
    PutString(&out, r.cwd);
    PutString(&out, std::to_string(r.argv.size()));
    for (const std::string& a : r.argv) PutString(&out, a);
    PutString(&out, std::to_string(r.env.size()));
    for (const std::string& e : r.env) PutString(&out, e);
  }
  return out;
}

bool SendRequest(int fd, const StepRequest& r) {
  std::string out = RequestHead(r.key) + RequestTail(r);
  return WriteAllTo(fd, out);
}

Result<StepRequest> ReadRequest(int fd, const std::string* key) {
  char magic[sizeof kMagic - 1];
  if (!ReadExactFrom(fd, magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof magic) != 0)
    return Err(InvalidArgument("not a step request"));
  size_t budget = kMaxRequest;
  StepRequest r;
  ASSIGN_OR_RETURN(r.key, GetString(fd, "key", &budget));
  if (key != nullptr && !SameKey(r.key, *key)) return Err(PermissionDenied("a wrong step key"));
  ASSIGN_OR_RETURN(r.verb, GetString(fd, "verb", &budget));
  if (r.verb == "exit") return r;
  if (r.verb != "run" && r.verb != "srun") return Err(InvalidArgument("verb: run, srun or exit"));
  ASSIGN_OR_RETURN(r.cwd, GetString(fd, "cwd", &budget));
  ASSIGN_OR_RETURN(r.argv, GetList(fd, "argv", &budget));
  if (r.argv.empty() || r.argv[0].empty()) return Err(InvalidArgument("argv: no program"));
  ASSIGN_OR_RETURN(r.env, GetList(fd, "env", &budget));
  return r;
}

bool SendFrame(int fd, char type, const std::string& data) {
  std::string out(1, type);
  PutString(&out, data);
  return WriteAllTo(fd, out);
}

std::optional<std::pair<char, std::string>> ReadFrame(int fd) {
  char type = 0;
  if (!ReadExactFrom(fd, &type, 1)) return std::nullopt;
  auto data = GetString(fd, "frame");
  if (!data) return std::nullopt;
  return std::pair{type, std::move(*data)};
}

bool SameKey(const std::string& a, const std::string& b) {
  if (a.size() != b.size() || a.empty()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

int ConnectTo(const std::string& host, int port, int patience_s, std::string* error) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(patience_s);
  for (int attempt = 0;; ++attempt) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (rc != 0) {
      *error = host + ": " + gai_strerror(rc);
    } else {
      for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          int one = 1;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          freeaddrinfo(found);
          return fd;
        }
        *error = host + ":" + std::to_string(port) + ": " + std::strerror(errno);
        ::close(fd);
      }
      freeaddrinfo(found);
    }
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(attempt < 10 ? 100 : 500));
  }
}

Result<Task> StartTask(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       const std::string& cwd) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Err(Unavailable(std::string("pipe: ") + strerror(errno)));
  if (pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return Err(Unavailable(std::string("pipe: ") + strerror(errno)));
  }
  std::vector<char*> args, vars;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env) vars.push_back(const_cast<char*>(e.c_str()));
  vars.push_back(nullptr);
  std::string path = GetVar(env, "PATH");
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  pid_t pid = fork();
  if (pid < 0) return Err(Unavailable(std::string("fork: ") + strerror(errno)));
  if (pid == 0) {
    setpgid(0, 0);
    // Every signal as a new process has it, whatever srun or its step server ignores (a job's
    // notice, SIGPIPE).
    for (int s = 1; s < 32; ++s) {
      if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(out[1], 1);
    dup2(err[1], 2);
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
      char here[4096] = "?";
      if (getcwd(here, sizeof here) == nullptr) std::strcpy(here, "?");
      dprintf(2, "srun: warning: cannot enter %s (%s): running in %s\n", cwd.c_str(),
              strerror(errno), here);
    }
    const std::string& program = argv[0];
    if (program.find('/') != std::string::npos) {
      execve(program.c_str(), args.data(), vars.data());
    } else {
      for (size_t i = 0; i <= path.size();) {
        size_t j = path.find(':', i);
        if (j == std::string::npos) j = path.size();
        std::string dir = j > i ? path.substr(i, j - i) : ".";
        std::string candidate = dir + "/" + program;
        execve(candidate.c_str(), args.data(), vars.data());
        i = j + 1;
      }
    }
    dprintf(2, "srun: error: cannot run %s: %s\n", program.c_str(), strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  ::close(out[1]);
  ::close(err[1]);
  return Task{.pid = pid, .out = out[0], .err = err[0]};
}

std::string StatusText(int wait_status) {
  if (WIFSIGNALED(wait_status)) return "S" + std::to_string(WTERMSIG(wait_status));
  return "E" + std::to_string(WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 1);
}

std::vector<std::string> OwnEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

void SetVar(std::vector<std::string>* env, const std::string& k, const std::string& v) {
  for (std::string& e : *env) {
    if (e.size() > k.size() && e.compare(0, k.size(), k) == 0 && e[k.size()] == '=') {
      e = k + "=" + v;
      return;
    }
  }
  env->push_back(k + "=" + v);
}

std::string GetVar(const std::vector<std::string>& env, const std::string& k) {
  for (const std::string& e : env) {
    if (e.size() > k.size() && e.compare(0, k.size(), k) == 0 && e[k.size()] == '=')
      return e.substr(k.size() + 1);
  }
  return "";
}

}  // namespace baton::slurm
