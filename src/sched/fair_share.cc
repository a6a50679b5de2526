#include "sched/fair_share.h"

#include <cmath>

namespace baton::sched {
namespace {

double Seconds(Duration d) { return static_cast<double>(d.count()) / 1000.0; }

}  // namespace

UsageLedger::UsageLedger(Duration half_life) : half_life_(half_life) {
  if (half_life_ <= Duration(0)) half_life_ = Duration(1);
}

void UsageLedger::Advance(TimePoint now) {
  if (at_ == TimePoint{}) at_ = now;
  if (now <= at_) return;
  const double dt = Seconds(now - at_);
  const double h = Seconds(half_life_);
  const double keep = std::exp2(-dt / h);
  // A rate r held over dt, decayed to `now`: integral of r * 2^-((dt - s)/h) ds.
  const double per_rate = h / std::log(2.0) * (1.0 - keep);
  total_ = 0;
  // projects_ and users_ hold the same projects (AddRate and AddPast make both) and rates_ some
  // of them, each user of a rate in users_ too: one walk over the three in their common order,
  // without a lookup by name (hundreds of them, every pass).
  auto rate = rates_.begin();
  auto users = users_.begin();
  for (auto& [project, used] : projects_) {
    used *= keep;
    const bool rated = rate != rates_.end() && rate->first == project;
    auto user_rate = rated ? rate->second.begin() : std::map<std::string, int64_t>::iterator{};
    for (auto& [user, user_used] : users->second) {
      user_used *= keep;
      if (!rated || user_rate == rate->second.end() || user_rate->first != user) continue;
      const double add = static_cast<double>(user_rate->second) / 1000.0 * per_rate;
      used += add;
      user_used += add;
      ++user_rate;
    }
    if (rated) ++rate;
    ++users;
    total_ += used;
  }
  at_ = now;
}

void UsageLedger::AddRate(const std::string& project, const std::string& user, int64_t milli) {
  auto& users = rates_[project];
  int64_t& r = users[user];
  r += milli;
  if (r <= 0) users.erase(user);
  if (users.empty()) rates_.erase(project);
  projects_.try_emplace(project, 0.0);
  users_[project].try_emplace(user, 0.0);
}

void UsageLedger::AddPast(const std::string& project, const std::string& user, int64_t milli,
                          TimePoint start, TimePoint end) {
  if (end <= start || milli <= 0) return;
  if (at_ == TimePoint{}) at_ = end;
  const double h = Seconds(half_life_);
  auto weight = [&](TimePoint t) { return std::exp2(-Seconds(at_ - std::min(t, at_)) / h); };
  double add =
      static_cast<double>(milli) / 1000.0 * h / std::log(2.0) * (weight(end) - weight(start));
  projects_[project] += add;
  users_[project][user] += add;
  total_ += add;
}

double UsageLedger::project(const std::string& name) const {
  auto it = projects_.find(name);
  return it == projects_.end() ? 0.0 : it->second;
}

double UsageLedger::user(const std::string& project, const std::string& user) const {
  auto it = users_.find(project);
  if (it == users_.end()) return 0.0;
  auto u = it->second.find(user);
  return u == it->second.end() ? 0.0 : u->second;
}

const std::map<std::string, double>* UsageLedger::users(const std::string& project) const {
  auto it = users_.find(project);
  return it == users_.end() ? nullptr : &it->second;
}

}  // namespace baton::sched
