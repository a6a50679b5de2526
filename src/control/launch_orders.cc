#include "control/launch_orders.h"

#include "control/master_ports.h"

namespace baton::control {

std::vector<std::pair<std::string, Order>> LaunchOrders(const Job& job, const NodeTable& nodes,
                                                        const Policy& policy,
                                                        std::optional<size_t> only_rank) {
  std::vector<std::pair<std::string, Order>> orders;
  std::string nodelist;
  for (const auto& part : job.allocation) {
    if (!nodelist.empty()) nodelist += ',';
    nodelist += part.node;
  }
  // Rank 0's node is where the processes meet: its address, else its name.
  std::string master_addr = job.allocation.front().node;
  if (const NodeRecord* first = nodes.Find(job.allocation.front().node);
      first != nullptr && !first->info.address.empty()) {
    master_addr = first->info.address;
  }
  auto processes = [&](const NodeAllocation& part) {
    return job.spec.process_per_gpu && !part.gpus.empty() ? static_cast<int>(part.gpus.size()) : 1;
  };
  // A batch script's nodes: where each one's step server (an allocation's host) listens (its
  // address, else its name).
  std::vector<std::string> node_addrs;
  if (job.spec.batch && (job.allocation.size() > 1 || job.spec.alloc)) {
    for (const NodeAllocation& part : job.allocation) {
      const NodeRecord* node = nodes.Find(part.node);
      node_addrs.push_back(node != nullptr && !node->info.address.empty() ? node->info.address
                                                                          : part.node);
    }
  }
  std::vector<int> offsets;
  int world = 0;
  for (const NodeAllocation& part : job.allocation) {
    offsets.push_back(world);
    world += processes(part);
  }
  for (size_t rank = 0; rank < job.allocation.size(); ++rank) {
    if (only_rank && rank != *only_rank) continue;
    const NodeAllocation& part = job.allocation[rank];
    Order o;
    o.kind = Order::Kind::kLaunch;
    LaunchOrder& l = o.launch;
    l.job = job.id;
    l.attempt = job.restarts;
    l.array_id = job.array_id;
    l.array_index = job.array_index;
    l.name = job.spec.name;
    l.user = job.user;
    l.command = job.spec.command;
    l.shell = job.spec.shell;
    l.env = job.spec.env;
    l.workdir = job.spec.workdir;
    l.venv = job.spec.venv;
    l.best_metric = job.spec.best_metric;
    l.output_limit = policy.OutputLimit(job.spec.output_limit, job.spec.pool);
    if (!policy.checkpoint_root.empty()) {
      // A project whose checkpoints its Unix group reads: ROOT/project:NAME/ID (no user can be
      // called "project:NAME": a Unix name has no ':'). Else the user's own ROOT/USER/ID.
      const std::string& group = policy.Project(job.spec.project).checkpoint_group;
      l.checkpoint_dir = policy.checkpoint_root + "/" +
                         (group.empty() ? job.user : "project:" + job.spec.project) + "/" +
                         job.id.ToString();
      l.checkpoint_group = group;
    }
    l.conda = job.spec.conda;
    l.code = job.spec.code;
    l.image = job.spec.image;
    if (rank == 0) l.interactive = job.spec.interactive;  // stdin or terminal: the first process
    l.gpus = part.gpus;
    l.milli_per_gpu = part.milli_per_gpu;
    l.cpus = job.spec.resources.cpus;
    l.memory_bytes = job.spec.resources.memory_bytes;
    l.gpu_memory_bytes = job.spec.resources.gpu_memory_bytes;
    l.time_limit = job.spec.time_limit;
    l.grace_period = job.spec.grace_period;
    l.signal = job.spec.signal;
    l.signal_before = job.spec.signal_before;
    l.signal_shell = job.spec.signal_shell;
    l.nodelist = nodelist;
    l.node_rank = static_cast<int>(rank);
    l.num_nodes = static_cast<int>(job.allocation.size());
    l.master_addr = master_addr;
    // A job started before master_port was kept got the default port; it keeps it.
    l.master_port = job.master_port > 0 ? job.master_port : DefaultMasterPort(job.id);
    l.processes = processes(job.allocation[rank]);
    l.rank_offset = offsets[rank];
    l.world_size = world;
    l.batch = job.spec.batch;
    const PoolPolicy* pool = policy.Pool(job.spec.pool);
    // An allocation is Slurm's through and through: its srun is what it serves.
    l.slurm_env = job.spec.slurm_env && (pool == nullptr || pool->slurm || job.spec.alloc);
    l.alloc = job.spec.alloc;
    if (rank == 0) {
      l.output_file = job.spec.output_file;
      l.error_file = job.spec.error_file;
    }
    l.tasks_per_node = job.spec.tasks_per_node;
    l.node_addrs = node_addrs;
    l.step_port = job.step_port;
    l.step_key = job.step_key;
    orders.emplace_back(part.node, std::move(o));
  }
  return orders;
}

}  // namespace baton::control
