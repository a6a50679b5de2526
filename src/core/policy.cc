#include "core/policy.h"

#include "core/node.h"

namespace baton {

const GpuPrice* Policy::Price(const std::string& model) const {
  const GpuPrice* best = nullptr;
  size_t best_len = 0;
  for (const auto& [name, price] : prices) {
    if (EqualNoCase(name, model)) return &price;
    if (GpuTypeMatches(model, name) && name.size() > best_len) {
      best = &price;
      best_len = name.size();
    }
  }
  return best;
}

std::optional<double> Policy::HourlyPrice(const std::string& model, bool spot) const {
  auto pick = [spot](const GpuPrice& p) { return spot && p.spot >= 0 ? p.spot : p.on_demand; };
  if (const GpuPrice* p = Price(model)) return pick(*p);
  size_t mig = model.find("-MIG-");
  if (mig == std::string::npos) return std::nullopt;
  const GpuPrice* parent = Price(model.substr(0, mig));
  if (parent == nullptr) return std::nullopt;
  std::string_view profile = std::string_view(model).substr(mig + 5);  // "3g.40gb"
  size_t g = profile.find('g');
  // Compute slices of the whole GPU: 4 on an A30, 7 on the A100 and H100.
  int slices = model.rfind("A30", 0) == 0 ? 4 : 7;
  if (g != 1 || profile[0] < '1' || profile[0] - '0' > slices) return std::nullopt;
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
