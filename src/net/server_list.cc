#include "net/server_list.h"

#include <algorithm>
#include <condition_variable>
#include <thread>

#include "core/text.h"
#include "net/http_client.h"

namespace baton::net {

Result<std::shared_ptr<ServerList>> ServerList::Parse(std::string_view comma_separated) {
  std::vector<std::string> urls;
  for (std::string_view part : SplitTrimmed(comma_separated, ',')) {
    if (part.empty()) continue;
    if (auto parsed = ParseHttpUrl(part); !parsed) return Err(parsed.error());
    std::string url(part);
    while (!url.empty() && url.back() == '/') url.pop_back();
    if (std::find(urls.begin(), urls.end(), url) == urls.end()) urls.push_back(std::move(url));
  }
  if (urls.empty()) return Err(InvalidArgument("server: no address given"));
  return std::shared_ptr<ServerList>(new ServerList(std::move(urls)));
}

std::string ServerList::Current() const {
  std::lock_guard lock(mu_);
  return urls_[current_];
}

uint64_t ServerList::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

bool ServerList::Failed(const std::string& url) {
  std::lock_guard lock(mu_);
  if (urls_[current_] != url) return false;  // another thread moved on already
  ++failures_;
  if (urls_.size() > 1) {
    current_ = (current_ + 1) % urls_.size();
    ++generation_;
  }
  bool round = failures_ >= urls_.size();
  if (round) failures_ = 0;
  return round;
}

void ServerList::Succeeded(const std::string& url) {
  std::lock_guard lock(mu_);
  if (urls_[current_] == url) failures_ = 0;
}

void ServerList::Leader(const std::string& url) {
  if (url.empty() || !ParseHttpUrl(url)) return;
  std::lock_guard lock(mu_);
  if (urls_[current_] == url) return;
  auto it = std::find(urls_.begin(), urls_.end(), url);
  if (it == urls_.end()) {
    urls_.push_back(url);
    it = urls_.end() - 1;
  }
  current_ = static_cast<size_t>(it - urls_.begin());
  ++generation_;
}

void ServerList::ProbeLeader(const std::string& token, const TlsClientOptions& tls, Duration wait,
                             const std::function<Result<HttpUrl>(const std::string&)>& target) {
  std::vector<std::string> urls = this->urls();
  if (urls.size() < 2) return;
  struct Answers {
    std::mutex mu;
    std::condition_variable cv;
    size_t count = 0;
    std::string leader, named;
  };
  auto answers = std::make_shared<Answers>();
  std::vector<std::unique_ptr<HttpClient>> probes;
  std::vector<std::thread> threads;
  for (const std::string& u : urls) {
    auto url = target ? target(u) : ParseHttpUrl(u);
    if (!url) continue;
    probes.push_back(HttpClient::Create(*url, token, tls));
    threads.emplace_back([answers, http = probes.back().get(), u, wait] {
      auto r = http->Request("GET", "/healthz", {}, {}, wait);
      std::lock_guard lock(answers->mu);
      ++answers->count;
      if (r && !r->standby && answers->leader.empty()) answers->leader = u;
      if (r && r->standby && !r->leader.empty()) answers->named = r->leader;
      answers->cv.notify_all();
    });
  }
  std::string leader;
  {
    std::unique_lock lock(answers->mu);
    answers->cv.wait_for(
        lock, wait, [&] { return !answers->leader.empty() || answers->count == threads.size(); });
    leader = answers->leader.empty() ? answers->named : answers->leader;
  }
  for (auto& p : probes) p->Cancel();  // a stalled one's probe ends now
  for (auto& t : threads) t.join();
  if (!leader.empty()) Leader(leader);
}

std::vector<std::string> ServerList::urls() const {
  std::lock_guard lock(mu_);
  return urls_;
}

std::string ServerList::ToString() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const std::string& u : urls_) out += (out.empty() ? "" : ",") + u;
  return out;
}

}  // namespace baton::net
