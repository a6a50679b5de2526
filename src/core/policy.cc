#include "core/policy.h"

#include "core/node.h"

namespace baton {

const GpuPrice* Policy::Price(const Gpu& gpu) const {
  const GpuPrice* best = nullptr;
  size_t best_len = 0;
  for (const auto& [name, price] : prices) {
    if (EqualNoCase(name, gpu.model)) return &price;
    if (GpuTypeMatches(gpu, name) && name.size() > best_len) {
      best = &price;
      best_len = name.size();
    }
  }
  return best;
}

std::optional<double> Policy::HourlyPrice(const Gpu& gpu, bool spot) const {
  auto pick = [spot](const GpuPrice& p) { return spot && p.spot >= 0 ? p.spot : p.on_demand; };
  if (const GpuPrice* p = Price(gpu)) return pick(*p);
  // A MIG instance's model is its GPU's followed by "-MIG-" and its profile (MigModel).
  const std::string_view profile = gpu.mig_profile;  // "3g.40gb"
  const std::string suffix = "-MIG-" + gpu.mig_profile;
  if (profile.empty() || !gpu.model.ends_with(suffix)) return std::nullopt;
  const GpuPrice* parent =
      Price(Gpu{.model = gpu.model.substr(0, gpu.model.size() - suffix.size())});
  if (parent == nullptr) return std::nullopt;
  // Compute slices of the whole GPU: 4 on an A30, 7 on the A100 and H100.
  const int slices = gpu.model.rfind("A30", 0) == 0 ? 4 : 7;
  if (profile.size() < 2 || profile[1] != 'g' || profile[0] < '1' || profile[0] - '0' > slices)
    return std::nullopt;
  return pick(*parent) * (profile[0] - '0') / slices;
}

TimePoint PeriodStart(BudgetPeriod period, TimePoint t) {
  using namespace std::chrono;
  sys_days day = floor<days>(t);
  switch (period) {
    case BudgetPeriod::kDay:
      return time_point_cast<Duration>(day);
    case BudgetPeriod::kWeek: {
      weekday wd{day};
      return time_point_cast<Duration>(day - (wd - Monday));
    }
    case BudgetPeriod::kMonth: {
      year_month_day ymd{day};
      return time_point_cast<Duration>(sys_days{ymd.year() / ymd.month() / 1});
    }
    case BudgetPeriod::kTotal:
      return TimePoint{};
  }
  return TimePoint{};
}

TimePoint NextPeriodStart(BudgetPeriod period, TimePoint t) {
  using namespace std::chrono;
  TimePoint start = PeriodStart(period, t);
  switch (period) {
    case BudgetPeriod::kDay:
      return start + days{1};
    case BudgetPeriod::kWeek:
      return start + days{7};
    case BudgetPeriod::kMonth: {
      year_month_day ymd{floor<days>(start)};
      return time_point_cast<Duration>(sys_days{(ymd.year() / ymd.month() / 1) + months{1}});
    }
    case BudgetPeriod::kTotal:
      return TimePoint::max();
  }
  return TimePoint::max();
}

std::string_view BudgetPeriodName(BudgetPeriod period) {
  switch (period) {
    case BudgetPeriod::kDay:
      return "day";
    case BudgetPeriod::kWeek:
      return "week";
    case BudgetPeriod::kMonth:
      return "month";
    case BudgetPeriod::kTotal:
      return "total";
  }
  return "month";
}

}  // namespace baton
