// Alert webhooks through the real binary: a small HTTP receiver on loopback gets a JSON POST
// for a failed job and for a failed GPU, after the server retried the first one it refused.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace baton::testing {
namespace {

// Accepts connections one at a time, reads HTTP requests (keep-alive), answers the first
// `refuse` of them 503 and the rest 204, and keeps every body.
class Receiver {
 public:
  explicit Receiver(int refuse) : refuse_(refuse) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd_, 8);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~Receiver() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<std::string> bodies() {
    std::lock_guard lock(mu_);
    return bodies_;
  }
  int refused() const { return refused_; }

 private:
  void Serve() {
    while (!stop_) {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      timeval tv{.tv_sec = 1, .tv_usec = 0};
      setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      std::string buf;
      char chunk[4096];
      while (!stop_) {
        size_t head = buf.find("\r\n\r\n");
        if (head != std::string::npos) {
          size_t cl = buf.find("Content-Length: ");
          if (cl == std::string::npos) cl = buf.find("content-length: ");
          size_t length = cl == std::string::npos ? 0 : std::stoul(buf.substr(cl + 16));
          if (buf.size() >= head + 4 + length) {
            std::string body = buf.substr(head + 4, length);
            buf.erase(0, head + 4 + length);
            bool refuse = refused_ < refuse_;
            if (refuse) {
              ++refused_;
            } else {
              std::lock_guard lock(mu_);
              bodies_.push_back(body);
            }
            std::string answer =
                refuse ? "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
                       : "HTTP/1.1 204 No Content\r\n\r\n";
            (void)!write(c, answer.data(), answer.size());
            continue;
          }
        }
        ssize_t n = read(c, chunk, sizeof chunk);
        if (n <= 0) break;
        buf.append(chunk, static_cast<size_t>(n));
      }
      close(c);
    }
  }

  int fd_ = -1, port_ = 0, refuse_ = 0;
  std::atomic<int> refused_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> bodies_;
  std::thread thread_;
};

TEST(Alerts, WebhooksGetAFailedJobAndAFailedGpuAndARefusedDeliveryIsRetried) {
  Receiver hook(/*refuse=*/1);
  TempDir dir;
  std::string config = dir.path() + "/baton.yaml";
  std::ofstream(config) << "alerts:\n  webhooks: [\"http://127.0.0.1:" << hook.port()
                        << "/baton\"]\n  attempts: 3\n";
  BatonProcess baton(dir.path() + "/server", {"--gpus", "2xH100-80GB", "--config", config});
  auto c = baton.Client();
  int64_t id = Submit(*c, R"({"name": "doomed", "command": ["false"]})");
  EXPECT_EQ(JsonString(WaitForJob(*c, id), "state"), "failed");
  auto received = [&](const std::string& what) {
    return Within(std::chrono::seconds(15), [&] {
      for (const std::string& b : hook.bodies()) {
        if (b.find(what) != std::string::npos) return true;
      }
      return false;
    });
  };
  // The first delivery was refused (503); the retry a second later got through.
  ASSERT_TRUE(received("\"kind\":\"job_failed\"")) << hook.refused();
  EXPECT_EQ(hook.refused(), 1);
  std::string body;
  for (const std::string& b : hook.bodies()) {
    if (b.find("job_failed") != std::string::npos) body = b;
  }
  EXPECT_NE(body.find("\"severity\":\"alert\""), std::string::npos) << body;
  EXPECT_NE(body.find("\"job\":" + std::to_string(id)), std::string::npos) << body;
  EXPECT_NE(body.find("job " + std::to_string(id) + " (doomed) of "), std::string::npos) << body;

  // A GPU falls off the bus.
  auto nodes = c->Request("GET", "/v1/nodes");
  ASSERT_TRUE(nodes.has_value());
  size_t at = nodes->body.find("\"name\":\"") + 8;
  std::string node = nodes->body.substr(at, nodes->body.find('"', at) - at);
  auto injected = c->Request("POST", "/v1/nodes/" + node + "/inject",
                             R"({"gpu": 1, "fault": "xid", "xid": 79})");
  ASSERT_TRUE(injected.has_value());
  ASSERT_EQ(injected->status, 202) << injected->body;
  EXPECT_TRUE(received("\"kind\":\"gpu_failed\""));
  // Information (a node joining) is not an alert: it does not go out.
  for (const std::string& b : hook.bodies())
    EXPECT_EQ(b.find("node_joined"), std::string::npos) << b;
}

TEST(Alerts, ABadWebhookUrlIsRefusedAtStart) {
  TempDir dir;
  std::string config = dir.path() + "/baton.yaml";
  std::ofstream(config) << "alerts:\n  webhooks: [\"ftp://hooks.example/x\"]\n";
  BatonProcess baton(dir.path() + "/server");
  CliResult r = RunCli(baton, {"config", "check", config});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(
      r.out.find("baton.yaml: line 2: alerts.webhooks[0]: must be an https:// or http:// URL"),
      std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace baton::testing
