// A stand-in for a distributed training job's start: every process reads the torchrun variables
// Baton gives it (PRODUCT §4), the others connect to rank 0 at MASTER_ADDR:MASTER_PORT over TCP
// and say who they are, and rank 0 checks that the world is whole: ranks 1..WORLD_SIZE-1 each
// exactly once, and on every node the local ranks 0..LOCAL_WORLD_SIZE-1 each exactly once. Rank
// 0 then tells everyone, and each prints one line. Exit 0 only when all of that held.
//
// With FAIL_RANK=N in the environment, rank N exits 3 at once instead (a rank that fails), and
// the others wait (to be torn down).
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

int EnvInt(const char* key) {
  const char* v = std::getenv(key);
  if (v == nullptr) {
    std::printf("missing %s\n", key);
    std::exit(2);
  }
  return std::atoi(v);
}

std::string Env(const char* key) {
  const char* v = std::getenv(key);
  return v != nullptr ? v : "";
}

sockaddr_in Address(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) {
    std::printf("cannot resolve MASTER_ADDR %s\n", host.c_str());
    std::exit(2);
  }
  sockaddr_in a = *reinterpret_cast<sockaddr_in*>(res->ai_addr);
  freeaddrinfo(res);
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

void WriteLine(int fd, const std::string& s) {
  std::string line = s + "\n";
  (void)!write(fd, line.data(), line.size());
}

}  // namespace

int main() {
  int rank = EnvInt("RANK");
  int world = EnvInt("WORLD_SIZE");
  int local = EnvInt("LOCAL_RANK");
  int local_world = EnvInt("LOCAL_WORLD_SIZE");
  std::string node = Env("BATON_NODE_NAME");
  std::string master = Env("MASTER_ADDR");
  int port = EnvInt("MASTER_PORT");
  if (!Env("FAIL_RANK").empty() && std::atoi(Env("FAIL_RANK").c_str()) == rank) {
    std::printf("rank %d fails on purpose\n", rank);
    return 3;
  }
  sockaddr_in addr = Address(master, port);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);

  if (rank != 0) {
    int fd = -1;
    while (std::chrono::steady_clock::now() < deadline) {
      fd = socket(AF_INET, SOCK_STREAM, 0);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) break;
      close(fd);
      fd = -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (fd < 0) {
      std::printf("rank %d: nobody listens at %s:%d\n", rank, master.c_str(), port);
      return 1;
    }
    WriteLine(fd, std::to_string(rank) + " " + std::to_string(local) + " " +
                      std::to_string(local_world) + " " + node);
    std::string answer = ReadLine(fd);
    close(fd);
    if (answer != "ok " + std::to_string(world)) {
      std::printf("rank %d: rank 0 said '%s'\n", rank, answer.c_str());
      return 1;
    }
    std::printf("rank %d of %d (local %d of %d on %s) ok\n", rank, world, local, local_world,
                node.c_str());
    return 0;
  }

  int listener = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener, 256) != 0) {
    std::printf("rank 0: cannot listen at %s:%d: %s\n", master.c_str(), port, std::strerror(errno));
    return 1;
  }
  std::vector<int> peers;
  std::set<int> ranks;
  std::map<std::string, std::set<int>> locals;  // node -> local ranks
  locals[node].insert(local);
  std::string problem;
  while (static_cast<int>(peers.size()) < world - 1) {
    int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) continue;
    peers.push_back(fd);
    int r = -1, l = -1, lw = -1;
    char name[256] = {};
    std::string line = ReadLine(fd);
    if (std::sscanf(line.c_str(), "%d %d %d %255s", &r, &l, &lw, name) != 4)
      problem = "bad hello: " + line;
    if (r <= 0 || r >= world || !ranks.insert(r).second)
      problem = "rank " + std::to_string(r) + " twice or out of range";
    if (lw != local_world || l < 0 || l >= lw || !locals[name].insert(l).second) {
      problem = "local rank " + std::to_string(l) + " of " + std::to_string(lw) + " on " + name;
    }
  }
  for (const auto& [n, ls] : locals) {
    if (static_cast<int>(ls.size()) != local_world)
      problem = "node " + n + " has " + std::to_string(ls.size()) + " local ranks";
  }
  for (int fd : peers) {
    WriteLine(fd, problem.empty() ? "ok " + std::to_string(world) : "bad");
    close(fd);
  }
  if (!problem.empty()) {
    std::printf("rendezvous failed: %s\n", problem.c_str());
    return 1;
  }
  std::printf("rendezvous ok: world %d, %zu nodes, master %s:%d\n", world, locals.size(),
              master.c_str(), port);
  return 0;
}
