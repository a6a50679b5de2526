// Runs a Controller on its own thread: takes commands from any thread, applies them in
// batches, makes each batch durable with one store commit (group commit), and only then
// answers the batch's callers. Parked agent polls are answered when orders appear.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "control/batch.h"
#include "control/clock.h"
#include "control/controller.h"
#include "store/store.h"

namespace baton::control {

struct LoopOptions {
  Duration tick = std::chrono::milliseconds(500);  // how often timeouts are looked at
  int commit_attempts = 3;                         // then the store is declared failed
  size_t max_batch = 4096;                         // commands applied per commit at most
  // Told of every cluster event once its batch is durable (the server logs them); on the loop's
  // thread, so it must be quick.
  std::function<void(const ClusterEvent&)> on_event;
  // Handed each batch's store changes once they are durable and before the batch's replies are
  // sent (a token created in the batch works once its creation is answered); not called for a
  // batch that changed nothing durable. On the loop's thread, so it must be quick.
  std::function<void(const store::Batch&)> on_commit;
  // Handed each call autoscaling makes of its provider once its batch is durable; the
  // provider runner (server/provider_runner.h) makes it elsewhere and posts the answer back.
  // On the loop's thread, so it must be quick. None: the calls are never made, and autoscaling
  // waits for their answers.
  std::function<void(ProviderCall)> on_provider_call;
};

class ControllerLoop {
 public:
  using Done = std::function<void(Reply)>;
  // Called when the store cannot commit: the in-memory state is ahead of the durable state,
  // so the process must stop (the store's state is rebuilt on the next start).
  using Fatal = std::function<void(const Status&)>;

  // `controller`, `store` and `clock` must outlive the loop.
  ControllerLoop(Controller& controller, store::Store& store, Clock& clock, LoopOptions options,
                 Fatal fatal);
  ~ControllerLoop();

  void Start();
  // Stops the thread; commands not yet applied are answered with Unavailable.
  void Stop();

  // Thread-safe. `done` runs on the loop thread once the reply may be sent: keep it short.
  void Post(Command command, Done done);

  // Counters for the metrics and benchmarks.
  struct Stats {
    uint64_t batches = 0;
    uint64_t commands = 0;
    uint64_t commits = 0;
    // How long ending each batch took (the scheduling pass, orders and effects), real time.
    Histogram cycle_seconds{
        {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}};
  };
  Stats stats();

 private:
  void Run();
  // Moves at most max_batch commands from the inbox. REQUIRES: mu_ held.
  void TakeBatch(std::vector<Command>& commands, std::vector<Done>& dones);
  // Makes the batch durable, retrying a failing store; the last failure when it could not.
  Status Commit(const store::Batch& batch);
  // Sends each reply, parks the polls that wait, answers parked polls with their orders.
  void Answer(BatchResult& result, std::vector<Command>& commands, std::vector<Done>& dones);

  Controller& controller_;
  store::Store& store_;
  Clock& clock_;
  LoopOptions options_;
  Fatal fatal_;

  std::mutex mu_;
  std::condition_variable cv_;
  // Commands not yet applied, and who waits for each reply (parallel vectors).
  std::vector<Command> inbox_;
  std::vector<Done> inbox_done_;
  bool stopping_ = false;
  uint64_t next_poll_id_ = 1;
  Stats stats_;

  std::unordered_map<uint64_t, Done> parked_;  // loop thread only
  std::thread thread_;
};

}  // namespace baton::control
