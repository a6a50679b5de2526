// A loopback TCP port no one listens on now (bound, read and closed), for servers a test
// starts: the integration harness's FreePort and tests/support/pg_server.h; and ports for a
// job's rendezvous.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>

namespace baton::testing {

inline int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

// A port P such that P and P + 1 are free on every address now, below the kernel's ephemeral
// range, for a job's MASTER_PORT (its step port is the next one): no server bound to port 0 and
// no outgoing connection of a test running beside this one takes either meanwhile.
inline int FreeRendezvousPort() {
  int low = 32768;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d", &low) != 1) low = 32768;
    std::fclose(f);
  }
  auto free_everywhere = [](int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(fd);
    return ok;
  };
  std::random_device seed;
  std::uniform_int_distribution<int> pick(10000, std::max(10002, low) - 2);
  for (int i = 0; i < 1000; ++i) {
    int port = pick(seed);
    if (free_everywhere(port) && free_everywhere(port + 1)) return port;
  }
  return FreeLoopbackPort();
}

}  // namespace baton::testing
