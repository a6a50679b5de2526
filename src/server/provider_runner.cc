#include "server/provider_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "codec/json_codec.h"
#include "core/log.h"

extern char** environ;

namespace baton::server {

namespace {

void CloseAll(std::initializer_list<int*> fds) {
  for (int* fd : fds) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

// The end of `err`, on one line.
std::string Tail(const std::string& err) {
  std::string t = err.size() > kStderrKept ? err.substr(err.size() - kStderrKept) : err;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  for (char& c : t) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return t;
}

}  // namespace

Result<std::string> RunProvider(const ProviderRun& run, const std::function<void(int)>& on_start,
                                const std::function<void(int)>& on_end) {
  if (run.argv.empty()) return Err(InvalidArgument("no provider to run"));
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    CloseAll({&in[0], &in[1], &out[0], &out[1], &err[0], &err[1]});
    return Err(Unavailable("pipe: " + why));
  }
  std::vector<char*> args, vars;
  for (const std::string& a : run.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : run.env) vars.push_back(const_cast<char*>(e.c_str()));
  vars.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    const std::string why = std::strerror(errno);
    CloseAll({&in[0], &in[1], &out[0], &out[1], &err[0], &err[1]});
    return Err(Unavailable("fork: " + why));
  }
  if (pid == 0) {
    // Its own process group: a timeout kills whatever it started with it.
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD}) signal(s, SIG_DFL);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execve(args[0], args.data(), vars.data());
    dprintf(2, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);  // as the child does: whichever runs first
  if (on_start) on_start(pid);
  CloseAll({&in[0], &out[1], &err[1]});
  fcntl(in[1], F_SETFL, O_NONBLOCK);
  const auto deadline = std::chrono::steady_clock::now() + run.timeout;
  std::string answer, stderr_text;
  size_t written = 0;
  bool too_long = false, timed_out = false;
  if (run.input.empty()) CloseAll({&in[1]});
  while (out[0] >= 0 || err[0] >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[3] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}, {in[1], POLLOUT, 0}};
    if (::poll(fds, 3, static_cast<int>(std::min<int64_t>(left.count(), 1000))) < 0 &&
        errno != EINTR)
      break;
    char buf[65536];
    for (int i = 0; i < 2; ++i) {
      int& fd = i == 0 ? out[0] : err[0];
      if (fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        CloseAll({&fd});
        continue;
      }
      std::string& into = i == 0 ? answer : stderr_text;
      into.append(buf, static_cast<size_t>(n));
      if (i == 1 && stderr_text.size() > 4 * kStderrKept)
        stderr_text.erase(0, stderr_text.size() - kStderrKept);
      if (i == 0 && answer.size() > kMaxAnswer) {
        too_long = true;
        break;
      }
    }
    if (too_long) break;
    if (in[1] >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
      const ssize_t n = ::write(in[1], run.input.data() + written, run.input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == run.input.size())
        CloseAll({&in[1]});
    }
  }
  CloseAll({&in[1], &out[0], &err[0]});
  int status = 0;
  if (timed_out || too_long) {
    ::kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  } else {
    // Its stdout is closed; it has until the deadline to exit.
    for (;;) {
      const pid_t done = waitpid(pid, &status, WNOHANG);
      if (done == pid) break;
      if (done < 0 && errno != EINTR) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        timed_out = true;
        ::kill(-pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (on_end) on_end(pid);
  const std::string said = Tail(stderr_text);
  const std::string tail = said.empty() ? "" : ": " + said;
  if (timed_out)
    return Err(Unavailable("did not answer within " + FormatDuration(run.timeout) +
                           "; killed (its process group)" + tail));
  if (too_long)
    return Err(
        InvalidArgument("answered more than " + std::to_string(kMaxAnswer >> 20) + " MiB; killed"));
  if (WIFSIGNALED(status))
    return Err(Unavailable("killed by signal " + std::to_string(WTERMSIG(status)) + tail));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Err(Unavailable("exited " + std::to_string(WEXITSTATUS(status)) + tail));
  return answer;
}

void ProviderRunner::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.clear();
    for (int group : running_) ::kill(-group, SIGKILL);
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void ProviderRunner::Start(std::vector<std::string> extra) {
  std::lock_guard lock(mu_);
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string var(*e);
    const std::string name = var.substr(0, var.find('='));
    bool replaced = false;
    for (const std::string& x : extra) replaced = replaced || x.starts_with(name + "=");
    if (!replaced) env_.push_back(var);
  }
  for (std::string& x : extra) env_.push_back(std::move(x));
  for (int i = 0; i < kWorkers; ++i) workers_.emplace_back([this] { Work(); });
}

void ProviderRunner::Run(control::ProviderCall call) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    queue_.push_back(std::move(call));
  }
  cv_.notify_one();
}

void ProviderRunner::Work() {
  for (;;) {
    control::ProviderCall call;
    std::vector<std::string> env;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      call = std::move(queue_.front());
      queue_.pop_front();
      env = env_;
    }
    const std::string verb(ProviderVerbName(call.request.verb));
    ProviderRun run{.argv = call.argv,
                    .input = codec::EncodeProviderRequest(call.request),
                    .timeout = call.timeout,
                    .env = std::move(env)};
    run.argv.push_back(verb);
    const auto started = std::chrono::steady_clock::now();
    auto out = RunProvider(
        run,
        [this](int group) {
          std::lock_guard lock(mu_);
          running_.insert(group);
        },
        [this](int group) {
          std::lock_guard lock(mu_);
          running_.erase(group);
        });
    control::ProviderAnswer answer{.call = call.id};
    if (out) {
      auto nodes = codec::DecodeProviderAnswer(*out, call.request.verb);
      if (nodes) {
        answer.nodes = std::move(*nodes);
      } else {
        answer.status = InvalidArgument("answered what is not a " + verb +
                                        " answer: " + nodes.error().message());
      }
    } else {
      answer.status = out.error();
    }
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    LogInfo("provider " + verb + " (call " + std::to_string(call.id) + ") " +
                (answer.status.ok() ? "answered " + std::to_string(answer.nodes.size()) + " nodes"
                                    : "failed: " + answer.status.message()) +
                " in " + std::to_string(took.count()) + " ms",
            {.component = "autoscaling"});
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    post_(std::move(answer));
  }
}

}  // namespace baton::server
