// The webhook sender on its own: bad URLs are refused up front, and a delivery that keeps
// failing is given up after its attempts, in the log.
#include <gtest/gtest.h>

#include <mutex>

#include "net/webhook_sender.h"

namespace baton::net {
namespace {

TEST(WebhookSender, RefusesUrlsItCannotUse) {
  EXPECT_FALSE(
      WebhookSender::Create(WebhookOptions{.urls = {"ftp://hooks.example/x"}}).has_value());
  EXPECT_FALSE(WebhookSender::Create(WebhookOptions{.urls = {"http://"}}).has_value());
  EXPECT_TRUE(WebhookSender::Create(WebhookOptions{.urls = {"http://127.0.0.1:9/x"}}).has_value());
  // A chat service's webhook is https://, checked against the system's CAs.
  EXPECT_TRUE(
      WebhookSender::Create(WebhookOptions{.urls = {"https://hooks.example/x"}}).has_value());
}

TEST(WebhookSender, GivesUpAfterItsAttemptsAndSaysSo) {
  std::mutex mu;
  std::vector<std::string> lines;
  auto sender = WebhookSender::Create(
      WebhookOptions{.urls = {"http://127.0.0.1:9/hook"},  // the discard port: nothing listens
                     .attempts = 3,
                     .first_backoff = std::chrono::milliseconds(10),
                     .timeout = std::chrono::seconds(2),
                     .log = [&](const std::string& line) {
                       std::lock_guard lock(mu);
                       lines.push_back(line);
                     }});
  ASSERT_TRUE(sender.has_value());
  (*sender)->Send(R"({"kind":"gpu_failed"})");
  ASSERT_TRUE((*sender)->Flush(std::chrono::seconds(20)));
  std::lock_guard lock(mu);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("webhook http://127.0.0.1:9/hook: gave up after 3 attempts"),
            std::string::npos)
      << lines[0];
}

}  // namespace
}  // namespace baton::net
