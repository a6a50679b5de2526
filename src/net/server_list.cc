#include "net/server_list.h"

#include <algorithm>

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

std::string ServerList::ToString() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const std::string& u : urls_) out += (out.empty() ? "" : ",") + u;
  return out;
}

}  // namespace baton::net
