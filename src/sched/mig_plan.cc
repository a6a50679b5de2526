#include "sched/mig_plan.h"

#include <algorithm>

namespace baton::sched {

namespace {

constexpr int kMemorySlices = kMigMemorySlices;
constexpr int kComputeSlices = kMigComputeSlices;

// What a layout takes: its memory slices (a bit each), compute slices and "+me" instances.
struct Use {
  unsigned slices = 0;
  int compute = 0;
  int media = 0;
};

unsigned Run(int start, int size) { return ((1u << size) - 1u) << start; }

// What `i` takes, or none for an instance the GPU cannot have.
std::optional<std::pair<MigGeometry, unsigned>> Taken(const MigInstance& i, int64_t memory) {
  auto g = MigGeometryOf(i.profile, memory);
  if (!g || std::find(g->starts.begin(), g->starts.end(), i.start) == g->starts.end())
    return std::nullopt;
  return std::make_pair(*g, Run(i.start, g->size));
}

Use UseOf(const std::vector<MigInstance>& layout, int64_t memory) {
  Use u;
  for (const MigInstance& i : layout) {
    auto t = Taken(i, memory);
    if (!t) continue;  // CheckMigLayout says why; a plan only meets layouts a GPU reported
    u.slices |= t->second;
    u.compute += t->first.compute;
    u.media += t->first.media ? 1 : 0;
  }
  return u;
}

bool Overlaps(const MigInstance& i, int start, int size, int64_t memory) {
  auto t = Taken(i, memory);
  return t && (t->second & Run(start, size)) != 0;
}

// Largest first: compute slices, then memory; the queue's order between equals.
bool Larger(const std::string& a, const std::string& b) {
  auto pa = ParseMigProfile(a), pb = ParseMigProfile(b);
  const std::pair<int, int> ka = pa ? std::pair{pa->compute, pa->memory_gb} : std::pair{0, 0};
  const std::pair<int, int> kb = pb ? std::pair{pb->compute, pb->memory_gb} : std::pair{0, 0};
  return ka > kb;
}

// One GPU as the plan changes it: its instances (the original ones not destroyed, and the
// ones created), each original one kept or claimed by a request.
struct Entry {
  MigInstance instance;
  bool original = true;
  bool claimed = false;  // an idle original one a request takes as it is
};
struct Work {
  const MigGpu* gpu = nullptr;
  std::vector<Entry> entries;
  MigChange change;
  std::vector<MigInstance> Layout() const {
    std::vector<MigInstance> out;
    for (const Entry& e : entries) out.push_back(e.instance);
    return out;
  }
  // Destroys entry `k` (an original one): said in the change, gone from the layout.
  void Destroy(size_t k) {
    change.destroy.push_back(e(k));
    if (e(k).busy) change.drain.push_back(e(k));
    entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(k));
  }
  const MigInstance& e(size_t k) const { return entries[k].instance; }
};

// Which original entries of `w` must go for `profile` to start at `start`: those on its slices
// and, while compute slices would be over 7, more of the free ones (largest first). `busy_too`:
// busy ones may go (after their jobs end). None when claimed or busy ones would have to go.
std::optional<std::vector<size_t>> InTheWay(const Work& w, const MigGeometry& g, int start,
                                            bool busy_too) {
  const int64_t memory = w.gpu->memory_bytes;
  std::vector<size_t> out;
  int compute = g.compute, media = g.media ? 1 : 0;
  for (size_t k = 0; k < w.entries.size(); ++k) {
    const Entry& en = w.entries[k];
    if (Overlaps(en.instance, start, g.size, memory)) {
      if (!en.original || en.claimed || (en.instance.busy && !busy_too)) return std::nullopt;
      out.push_back(k);
      continue;
    }
    auto t = Taken(en.instance, memory);
    if (t) compute += t->first.compute;
    if (t && t->first.media) ++media;
  }
  // Compute slices (and a second "+me") past the GPU's: free ones go too, largest first.
  std::vector<size_t> spare;
  for (size_t k = 0; k < w.entries.size(); ++k) {
    const Entry& en = w.entries[k];
    if (std::find(out.begin(), out.end(), k) != out.end()) continue;
    if (en.original && !en.claimed && (!en.instance.busy || busy_too)) spare.push_back(k);
  }
  std::stable_sort(spare.begin(), spare.end(),
                   [&](size_t a, size_t b) { return Larger(w.e(a).profile, w.e(b).profile); });
  for (size_t k : spare) {
    if (compute <= kComputeSlices && media <= 1) break;
    auto t = Taken(w.e(k), memory);
    if (!t) continue;
    compute -= t->first.compute;
    media -= t->first.media ? 1 : 0;
    out.push_back(k);
  }
  if (compute > kComputeSlices || media > 1) return std::nullopt;
  std::sort(out.begin(), out.end());
  return out;
}

// The latest end of the busy instances among `ks` (max when one has no end).
TimePoint EndOf(const Work& w, const std::vector<size_t>& ks) {
  TimePoint latest{};
  for (size_t k : ks) {
    if (w.e(k).busy) latest = std::max(latest, w.e(k).ends);
  }
  return latest;
}

}  // namespace

Status CheckMigLayout(const std::vector<MigInstance>& layout, int64_t memory_bytes) {
  unsigned slices = 0;
  int compute = 0, media = 0;
  for (const MigInstance& i : layout) {
    ASSIGN_OR_RETURN(MigGeometry g, MigGeometryOf(i.profile, memory_bytes));
    if (std::find(g.starts.begin(), g.starts.end(), i.start) == g.starts.end()) {
      return InvalidArgument("MIG instance " + i.profile + " cannot start at memory slice " +
                             std::to_string(i.start));
    }
    const unsigned run = Run(i.start, g.size);
    if ((slices & run) != 0) {
      return InvalidArgument("MIG instance " + i.profile + " at memory slice " +
                             std::to_string(i.start) + " overlaps another instance");
    }
    slices |= run;
    compute += g.compute;
    media += g.media ? 1 : 0;
  }
  if (compute > kComputeSlices)
    return InvalidArgument("MIG layout of " + std::to_string(compute) +
                           " compute slices (7 at most)");
  if (media > 1) return InvalidArgument("MIG layout with more than one +me instance");
  return Status::Ok();
}

std::optional<int> FitMig(const std::vector<MigInstance>& layout, std::string_view profile,
                          int64_t memory_bytes) {
  auto g = MigGeometryOf(profile, memory_bytes);
  if (!g) return std::nullopt;
  const Use u = UseOf(layout, memory_bytes);
  if (u.compute + g->compute > kComputeSlices || (g->media && u.media > 0)) return std::nullopt;
  for (int start : g->starts) {
    if ((u.slices & Run(start, g->size)) == 0) return start;
  }
  return std::nullopt;
}

MigPlan PlanMig(const std::vector<MigGpu>& gpus, const std::vector<std::string>& wanted) {
  MigPlan plan;
  std::vector<Work> work;
  for (const MigGpu& g : gpus) {
    if (g.reconfiguring) continue;
    Work w{.gpu = &g, .change = MigChange{.node = g.node, .gpu = g.gpu}};
    for (const MigInstance& i : g.instances) w.entries.push_back(Entry{.instance = i});
    work.push_back(std::move(w));
  }
  // Idle instances of the profile, as they are.
  std::vector<std::string> rest;
  for (const std::string& p : wanted) {
    bool met = false;
    for (Work& w : work) {
      for (Entry& en : w.entries) {
        if (met || !en.original || en.claimed || en.instance.busy || en.instance.profile != p)
          continue;
        en.claimed = met = true;
      }
      if (met) break;
    }
    if (met) {
      ++plan.reused;
    } else {
      rest.push_back(p);
    }
  }
  std::stable_sort(rest.begin(), rest.end(), Larger);
  for (const std::string& p : rest) {
    // Free memory slices as they are; else idle instances destroyed (the GPU that loses the
    // fewest compute slices); else busy ones that end soonest.
    struct Choice {
      Work* w = nullptr;
      int start = 0;
      std::vector<size_t> away;
      int lost = 0;
      TimePoint after{};
    };
    std::optional<Choice> best;
    for (int pass = 0; pass < 3 && !best; ++pass) {
      for (Work& w : work) {
        auto g = MigGeometryOf(p, w.gpu->memory_bytes);
        if (!g) continue;
        if (pass == 0) {
          if (auto start = FitMig(w.Layout(), p, w.gpu->memory_bytes)) {
            best = Choice{.w = &w, .start = *start};
            break;
          }
          continue;
        }
        for (int start : g->starts) {
          auto away = InTheWay(w, *g, start, /*busy_too=*/pass == 2);
          if (!away) continue;
          int lost = 0;
          for (size_t k : *away) {
            if (auto t = Taken(w.e(k), w.gpu->memory_bytes)) lost += t->first.compute;
          }
          const TimePoint after = EndOf(w, *away);
          if (pass == 2 && after == TimePoint::max())
            continue;  // a job without an end is not waited for
          const bool better = !best || (pass == 2 ? after < best->after : lost < best->lost);
          if (better)
            best = Choice{.w = &w, .start = start, .away = *away, .lost = lost, .after = after};
        }
      }
    }
    if (!best) {
      plan.unmet.push_back(p);
      continue;
    }
    Work& w = *best->w;
    for (auto it = best->away.rbegin(); it != best->away.rend(); ++it) w.Destroy(*it);
    if (best->after != TimePoint{}) {
      w.change.after = std::max(w.change.after.value_or(TimePoint{}), best->after);
    }
    MigInstance made{.profile = p, .start = best->start};
    w.change.create.push_back(made);
    w.entries.push_back(Entry{.instance = made, .original = false});
  }
  for (Work& w : work) {
    if (!w.change.create.empty()) plan.changes.push_back(std::move(w.change));
  }
  return plan;
}

double MigFragmentation(const std::vector<MigInstance>& layout, int64_t memory_bytes) {
  const unsigned taken = UseOf(layout, memory_bytes).slices;
  int free = 0, run = 0, longest = 0;
  for (int s = 0; s < kMemorySlices; ++s) {
    if ((taken & (1u << s)) != 0) {
      run = 0;
      continue;
    }
    ++free;
    longest = std::max(longest, ++run);
  }
  return free == 0 ? 0.0 : 1.0 - static_cast<double>(longest) / free;
}

}  // namespace baton::sched
