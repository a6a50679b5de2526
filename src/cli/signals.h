// Signals a command reads itself (Ctrl-C while attached or forwarding, window changes) from a
// signalfd, so that one poll wakes for them with its sockets; blocked while the object lives.
#pragma once

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <initializer_list>

namespace baton::cli {

// Threads started while one exists do not get them.
class Signals {
 public:
  explicit Signals(std::initializer_list<int> signals) {
    sigemptyset(&set_);
    for (int s : signals) sigaddset(&set_, s);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    fd_ = signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK);
  }
  ~Signals() {
    if (fd_ >= 0) close(fd_);
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  int fd() const { return fd_; }
  // The next signal that came; 0 when none.
  int Next() const {
    signalfd_siginfo info;
    return read(fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)
               ? static_cast<int>(info.ssi_signo)
               : 0;
  }

 private:
  sigset_t set_, old_;
  int fd_ = -1;
};

}  // namespace baton::cli
