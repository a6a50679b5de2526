#include "control/controller_loop.h"

namespace baton::control {

ControllerLoop::ControllerLoop(Controller& controller, store::Store& store, Clock& clock,
                               LoopOptions options, Fatal fatal)
    : controller_(controller),
      store_(store),
      clock_(clock),
      options_(options),
      fatal_(std::move(fatal)) {}

ControllerLoop::~ControllerLoop() { Stop(); }

void ControllerLoop::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ControllerLoop::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::vector<Done> left;
  {
    std::lock_guard lock(mu_);
    left.swap(inbox_done_);
    inbox_.clear();
  }
  for (Done& done : left) done(ErrorReply(Unavailable("the controller is shutting down")));
  for (auto& [id, done] : parked_) done(Reply{.value = PollAnswer{}});  // no orders
  parked_.clear();
}

void ControllerLoop::Post(Command command, Done done) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      done(ErrorReply(Unavailable("the controller is shutting down")));
      return;
    }
    if (auto* poll = std::get_if<AgentPoll>(&command)) poll->poll_id = next_poll_id_++;
    inbox_.push_back(std::move(command));
    inbox_done_.push_back(std::move(done));
  }
  cv_.notify_one();
}

ControllerLoop::Stats ControllerLoop::stats() {
  std::lock_guard lock(mu_);
  return stats_;
}

void ControllerLoop::TakeBatch(std::vector<Command>& commands, std::vector<Done>& dones) {
  if (inbox_.size() <= options_.max_batch) {
    commands.swap(inbox_);
    dones.swap(inbox_done_);
    return;
  }
  auto n = static_cast<std::ptrdiff_t>(options_.max_batch);
  commands.assign(std::make_move_iterator(inbox_.begin()),
                  std::make_move_iterator(inbox_.begin() + n));
  dones.assign(std::make_move_iterator(inbox_done_.begin()),
               std::make_move_iterator(inbox_done_.begin() + n));
  inbox_.erase(inbox_.begin(), inbox_.begin() + n);
  inbox_done_.erase(inbox_done_.begin(), inbox_done_.begin() + n);
}

Status ControllerLoop::Commit(const store::Batch& batch) {
  if (batch.empty()) return Status::Ok();
  Status st;
  for (int attempt = 0; attempt < options_.commit_attempts; ++attempt) {
    // A busy or briefly failing disk gets a moment: 0, 50, 200 ms...
    if (attempt > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(50 << (2 * (attempt - 1))));
    st = store_.Commit(batch);
    if (st.ok()) return st;
  }
  return st;
}

void ControllerLoop::Answer(BatchResult& result, std::vector<Command>& commands,
                            std::vector<Done>& dones) {
  for (size_t i = 0; i < dones.size(); ++i) {
    Reply& r = result.replies[i];
    if (const auto* poll = std::get_if<PollAnswer>(&r.value); poll != nullptr && poll->parked) {
      parked_[std::get<AgentPoll>(commands[i]).poll_id] = std::move(dones[i]);
    } else {
      dones[i](std::move(r));
    }
  }
  if (options_.on_event) {
    for (const ClusterEvent& e : result.effects.events) options_.on_event(e);
  }
  if (options_.on_provider_call) {
    for (ProviderCall& c : result.effects.provider_calls) options_.on_provider_call(std::move(c));
  }
  for (Delivery& d : result.effects.deliveries) {
    auto it = parked_.find(d.poll_id);
    if (it == parked_.end()) continue;
    it->second(Reply{.value = PollAnswer{.orders = std::move(d.orders)}});
    parked_.erase(it);
  }
}

void ControllerLoop::Run() {
  std::vector<Command> commands;
  std::vector<Done> dones;
  TimePoint next_tick = clock_.Now() + options_.tick;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, options_.tick, [&] { return stopping_ || !inbox_.empty(); });
      if (stopping_) return;
      TakeBatch(commands, dones);
    }
    TimePoint now = clock_.Now();
    bool tick = now >= next_tick;
    if (tick) next_tick = now + options_.tick;
    BatchResult result = RunBatch(controller_, commands, now, {.tick = tick});
    if (Status st = Commit(result.effects.store); !st.ok()) {
      for (size_t i = 0; i < dones.size(); ++i) {
        // A parked poll is answered too: nothing it waited for can be sent.
        dones[i](ErrorReply(Unavailable("the store failed to commit: " + st.message())));
      }
      {
        std::lock_guard lock(mu_);
        stopping_ = true;  // nothing more is accepted: it could not be made durable
      }
      fatal_(st);
      return;
    }
    // After the commit, before the replies: a reader that a reply wakes sees the batch.
    if (options_.on_commit && !result.effects.store.empty())
      options_.on_commit(result.effects.store);
    Answer(result, commands, dones);
    {
      std::lock_guard lock(mu_);
      stats_.batches += 1;
      stats_.cycle_seconds.Observe(result.end_seconds);
      stats_.commands += commands.size();
      stats_.commits += result.effects.store.empty() ? 0 : 1;
    }
    commands.clear();
    dones.clear();
  }
}

}  // namespace baton::control
