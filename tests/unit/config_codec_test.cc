// The server's configuration file (codec/config_codec.cc, codec/autoscaling_config.cc): the
// scheduling policy, budgets and the catalog, autoscaling's provider and templates, errors that
// name the file, the line and the key; and the codecs of what autoscaling says (the provider's
// request and answer, GET /v1/usage with the autoscaled nodes' money).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "codec/json_codec.h"

namespace baton::codec {
namespace {

TEST(ServerConfig, ReadsTheSchedulingPolicy) {
  auto cfg = DecodeServerConfig(R"(
listen: 127.0.0.1:9000
scheduling:
  weights: {priority: 100, fairshare: 50, age: 10, size: 1}
  fairshare_half_life: 3d
  max_age: 12h
  backfill: no
  reservations: 4
  preemption: yes
  preempt_grace: 45s
  las_thresholds: [1h, 10h]
  las_preemption: yes
  las_preemption_budget: 3
  mig_window: 10s
defaults:
  project: {share: 1, limit_gpus: 64}
  user: {max_jobs: 50}
projects:
  vision: {share: 3, guaranteed_gpus: 16, limit_gpus: 32}
  nlp: {share: 1}
users:
  alice: {max_gpus: 8, max_jobs: 20}
pools:
  dev: {default_time_limit: 1h, max_time_limit: 4h, max_gpus_per_job: 2, max_gpus_per_user: 0.5}
  lab: {interactive: true, session_time_limit: 3h, max_sessions_per_user: 2, idle_timeout: 20m,
        idle_utilization: 10, idle_warning: 2m, slurm: false}
)",
                                "baton.yaml");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  const Policy& p = cfg->policy;
  EXPECT_EQ(cfg->listen, "127.0.0.1:9000");
  EXPECT_EQ(p.weights.priority, 100);
  EXPECT_EQ(p.weights.size, 1);
  EXPECT_EQ(p.fairshare_half_life, std::chrono::hours(72));
  EXPECT_EQ(p.max_age, std::chrono::hours(12));
  EXPECT_FALSE(p.backfill);
  EXPECT_EQ(p.reservations, 4);
  EXPECT_EQ(p.preempt_grace, std::chrono::seconds(45));
  EXPECT_EQ(p.las_thresholds, (std::vector<double>{3600, 36'000}));  // GPU-seconds
  EXPECT_TRUE(p.las_preemption);
  EXPECT_EQ(p.las_preemption_budget, std::optional<int>(3));
  EXPECT_EQ(p.mig_window, std::chrono::seconds(10));
  EXPECT_EQ(Policy{}.mig_window, std::chrono::seconds(30));
  EXPECT_EQ(p.Project("vision").share, 3);
  EXPECT_EQ(p.Project("vision").guaranteed_milli, 16000);
  EXPECT_EQ(p.Project("vision").limit_milli, 32000);
  EXPECT_EQ(p.Project("nlp").limit_milli, 64000);  // from defaults.project
  EXPECT_EQ(p.Project("other").limit_milli, 64000);
  EXPECT_EQ(p.User("alice").max_milli, 8000);
  EXPECT_EQ(p.User("alice").max_jobs, 20);
  EXPECT_EQ(p.User("bob").max_jobs, 50);
  ASSERT_NE(p.Pool("dev"), nullptr);
  EXPECT_EQ(p.Pool("dev")->default_time_limit, std::chrono::hours(1));
  EXPECT_EQ(p.Pool("dev")->max_milli_per_user, 500);
  EXPECT_FALSE(p.Pool("dev")->interactive);
  ASSERT_NE(p.Pool("lab"), nullptr);
  EXPECT_TRUE(p.Pool("lab")->interactive);
  EXPECT_EQ(p.Pool("lab")->session_time_limit, std::chrono::hours(3));
  EXPECT_EQ(p.Pool("lab")->max_sessions_per_user, 2);
  EXPECT_EQ(p.Pool("lab")->idle_timeout, std::chrono::minutes(20));
  EXPECT_EQ(p.Pool("lab")->idle_utilization_pct, 10);
  EXPECT_EQ(p.Pool("lab")->idle_warning, std::chrono::minutes(2));
  EXPECT_FALSE(p.Pool("lab")->slurm);
  EXPECT_TRUE(p.Pool("dev")->slurm);  // the default: jobs that ask get Slurm's side
  EXPECT_EQ(p.Pool("prod"), nullptr);
}

TEST(ServerConfig, ErrorsNameTheFileTheLineAndTheKey) {
  struct Case {
    const char* yaml;
    const char* message;
  } cases[] = {
      {"listen: x\nschedulng: {}\n", "baton.yaml: line 2: schedulng: unknown key"},
      {"projects:\n  vision:\n    share: lots\n",
       "baton.yaml: line 3: projects.vision.share: must be a number"},
      {"projects:\n  vision: {share: -1}\n", "projects.vision.share: must be a number from"},
      {"projects:\n  v: {guaranteed_gpus: 8, limit_gpus: 4}\n",
       "projects.v: limit_gpus is below guaranteed_gpus"},
      {"users:\n  bob: {max_jobs: 2.5}\n", "users.bob.max_jobs: must be a whole number"},
      {"pools:\n  dev: {max_time_limit: forever}\n", "line 2: pools.dev.max_time_limit"},
      {"pools:\n  dev: {default_time_limit: 5h, max_time_limit: 1h}\n",
       "default_time_limit is longer than max_time_limit"},
      {"pools:\n  dev: {idle_timeout: 1h}\n",
       "line 2: pools.dev.idle_timeout: needs interactive: true in the pool"},
      {"pools:\n  dev: {interactive: true, idle_utilization: 150}\n",
       "pools.dev.idle_utilization: must be a number from 0 to 100"},
      {"pools:\n  dev: {interactive: true, max_sessions_per_user: 1.5}\n",
       "pools.dev.max_sessions_per_user"},
      {"scheduling:\n  backfill: maybe\n", "line 2: scheduling.backfill: must be true or false"},
      {"scheduling:\n  mig_window: 0s\n", "line 2: scheduling.mig_window: must be 1s to 24h"},
      {"scheduling:\n  mig_window: 2d\n", "scheduling.mig_window: must be 1s to 24h"},
      {"scheduling:\n  weights: {priority: 1, luck: 2}\n", "scheduling.weights.luck: unknown key"},
      {"projects:\n  ../x: {}\n", "names are 1-64 of letters"},
      {"projects: [a, b]\n", "projects: must be a mapping"},
      {"listen: [\n", "baton.yaml: line"},
      {"scheduling:\n  las_thresholds: [10h, 1h]\n",
       "line 2: scheduling.las_thresholds[1]: thresholds must be above 0 and ascending"},
      {"scheduling:\n  las_thresholds: 1h\n", "scheduling.las_thresholds: must be a list"},
      {"scheduling:\n  las_thresholds: [soon]\n", "scheduling.las_thresholds[0]"},
      {"scheduling:\n  las_preemption_budget: 0\n",
       "line 2: scheduling.las_preemption_budget: must be a number from"},
      {"scheduling:\n  las_preemption_budget: 1.5\n",
       "scheduling.las_preemption_budget: must be a whole number or none"},
      {"gpu_catalog:\n  prices:\n    H100: cheap\n",
       "line 3: gpu_catalog.prices.H100: must be a number"},
      {"gpu_catalog:\n  prices:\n    H100: {spot: 1}\n",
       "gpu_catalog.prices.H100.on_demand: missing"},
      {"gpu_catalog:\n  prices: [H100]\n", "gpu_catalog.prices: must map GPU models"},
      {"gpu_catalog:\n  currency: EUR\n  price: {}\n", "line 3: gpu_catalog.price: unknown key"},
      {"projects:\n  v: {budget: {amount: -5}}\n",
       "projects.v.budget.amount: must be a number from"},
      {"projects:\n  v: {budget: {amount: 5, period: year}}\n",
       "projects.v.budget.period: must be day, week, month or total"},
      {"projects:\n  v: {budget: {period: week}}\n", "projects.v.budget.amount: missing"},
      {"store:\n  type: postgres\n", "store.url: is required with type postgres"},
      {"store:\n  type: mysql\n", "line 2: store.type: must be sqlite or postgres"},
      {"store: {type: postgres, url: /var/baton.db}\n", "store.url: must be a postgres:// URL"},
      {"store: {url: postgres://db/baton}\n", "store.url: is for type postgres"},
      {"store: {type: postgres, url: postgres://db/b, path: /x.db}\n",
       "store.path: is for type sqlite"},
      {"store: {path: baton.db}\n", "store.path: must be an absolute path"},
      {"shared_dir: shared\n", "line 1: shared_dir: must be an absolute path"},
      {"tls: {cert: /etc/baton/server.crt}\n", "tls: needs both cert and key, or neither"},
      {"tls: {cert: server.crt, key: /k}\n", "tls.cert: must be an absolute path"},
      {"tls: {insecure_http: perhaps}\n", "tls.insecure_http: must be true or false"},
      {"tls: {ca: /x}\n", "tls.ca: unknown key"},
      {"alerts:\n  webhooks: [ftp://hooks.example/x]\n",
       "alerts.webhooks[0]: must be an https:// or http:// URL"},
      {"autoscaling:\n  provider: bin/provider\n  templates: [{name: a, gpus: 8xH100-80GB, max: "
       "1}]\n",
       "line 2: autoscaling.provider: must start with an absolute path"},
      {"autoscaling:\n  templates: [{name: a, gpus: 8xH100-80GB, max: 1}]\n",
       "autoscaling: has templates but no provider to start them"},
      {"autoscaling:\n  provider: /p\n", "autoscaling: has a provider but no templates"},
      {"autoscaling:\n  provider: /p\n  templates: [{name: a, gpus: 8xH100-80GB}]\n",
       "autoscaling.templates[0].max: missing"},
      {"autoscaling:\n  provider: /p\n  templates: [{name: a, max: 2}]\n",
       "autoscaling.templates[0].gpus: missing"},
      {"autoscaling:\n  provider: /p\n  templates: [{name: a, gpus: eight, max: 2}]\n",
       "autoscaling.templates[0].gpus: gpus: missing COUNTx"},
      {"autoscaling:\n  provider: /p\n  templates: [{name: a, gpus: 1xH100-80GB, max: 2, min: "
       "3}]\n",
       "autoscaling.templates[0].min: must be a number from 0 to 2"},
      {"autoscaling:\n  provider: /p\n  templates:\n    - {name: a, gpus: 1xH100-80GB, max: 2}\n"
       "    - {name: a, gpus: 1xH100-80GB, max: 2}\n",
       "line 5: autoscaling.templates[1].name: named twice"},
      {"autoscaling:\n  provider: /p\n  templates: [{name: 'a b', gpus: 1xH100-80GB, max: 2}]\n",
       "autoscaling.templates[0].name: 1-48 of letters"},
      {"autoscaling:\n  provider: /p\n  templates: [{name: a, gpus: 1xH100-80GB, max: 2, "
       "on_demand_price: 9}]\n",
       "autoscaling.templates[0].on_demand_price: only a spot template has one"},
      {"autoscaling:\n  provider: /p\n  templates: [{name: a, gpus: 1xH100-80GB, max: 2, "
       "spot: true, on_demand_price: -1}]\n",
       "autoscaling.templates[0].on_demand_price:"},
      {"autoscaling:\n  provider: /p\n  idle_time: soon\n  templates: [{name: a, gpus: "
       "1xH100-80GB, max: 1}]\n",
       "line 3: autoscaling.idle_time:"},
      {"autoscaling:\n  provider: /p\n  scan_interval: 2h\n  templates: [{name: a, gpus: "
       "1xH100-80GB, max: 1}]\n",
       "autoscaling.scan_interval: must be from 100ms to 1h"},
      {"autoscaling:\n  provider: /p\n  resume_rate: 0\n  templates: [{name: a, gpus: 1xH100-80GB, "
       "max: 1}]\n",
       "autoscaling.resume_rate: must be a number from 1 to 10000"},
      {"autoscaling:\n  provider: /p\n  templates: [{name: a, gpus: 1xH100-80GB, max: 1, size: "
       "3}]\n",
       "autoscaling.templates[0].size: unknown key"},
  };
  for (const auto& c : cases) {
    auto cfg = DecodeServerConfig(c.yaml, "baton.yaml");
    ASSERT_FALSE(cfg.has_value()) << c.yaml;
    EXPECT_NE(cfg.error().message().find(c.message), std::string::npos)
        << "for:\n"
        << c.yaml << "got: " << cfg.error().message();
  }
}

}  // namespace
}  // namespace baton::codec

namespace baton::codec {
namespace {

TEST(ServerConfig, AutoscalingReadsItsProviderAndTemplates) {
  auto cfg = DecodeServerConfig(R"(
autoscaling:
  provider: /usr/local/bin/provider --region us-east-1
  provider_timeout: 30s
  idle_time: 5m
  resume_rate: 4
  templates:
    - {name: h100-spot, pool: train, gpus: 8xH100-80GB, cpus: 96, memory: 1TiB, price: 31.5,
       spot: true, on_demand_price: 98.3, max: 16}
    - {name: a100, gpus: 4xA100-40GB, min: 1, max: 2}
)",
                                "baton.yaml");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  const AutoscalingPolicy& a = cfg->policy.autoscaling;
  EXPECT_TRUE(a.on());
  EXPECT_EQ(a.provider,
            (std::vector<std::string>{"/usr/local/bin/provider", "--region", "us-east-1"}));
  EXPECT_EQ(a.provider_timeout, std::chrono::seconds(30));
  EXPECT_EQ(a.idle_time, std::chrono::minutes(5));
  EXPECT_EQ(a.resume_timeout, std::chrono::minutes(10));  // the default
  EXPECT_EQ(a.resume_rate, 4);
  ASSERT_EQ(a.templates.size(), 2u);
  const NodeTemplate& t = a.templates[0];
  EXPECT_EQ(t.name, "h100-spot");
  EXPECT_EQ(t.pool, "train");
  EXPECT_EQ(t.gpus, 8);
  EXPECT_EQ(t.gpu_model, "H100-80GB");
  EXPECT_EQ(t.gpu_memory_bytes, 80LL << 30);
  EXPECT_EQ(t.cpus, 96);
  EXPECT_EQ(t.memory_bytes, 1LL << 40);
  EXPECT_DOUBLE_EQ(t.price_per_hour, 31.5);
  EXPECT_TRUE(t.spot);
  EXPECT_DOUBLE_EQ(t.on_demand_price, 98.3);
  EXPECT_LT(a.templates[1].on_demand_price, 0);  // none given
  EXPECT_EQ(t.max, 16);
  EXPECT_EQ(a.templates[1].min, 1);
  EXPECT_EQ(a.templates[1].pool, "default");
}

TEST(UsageCodec, TheAutoscaledNodesMoneyGoesThereAndBack) {
  UsageRow row{.project = "vision", .jobs = 2, .cost = 20, .idle_cost = 2.5};
  NodeCosts nodes{.templates = {NodeCostRow{.template_name = "h100-spot",
                                            .spot = true,
                                            .node_seconds = 7200,
                                            .cost = 24,
                                            .idle_cost = 2.5,
                                            .peak_nodes = 2,
                                            .fixed_cost = 196.6}},
                  .window_seconds = 3600,
                  .node_seconds = 7200,
                  .cost = 24,
                  .idle_cost = 2.5,
                  .fixed_cost = 196.6};
  const std::string text = EncodeUsage({row}, {}, nodes, "USD");
  EXPECT_NE(text.find(R"("saved":)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("node_hours":)"), std::string::npos) << text;
  auto back = DecodeUsage(text);
  ASSERT_TRUE(back.has_value()) << back.error().message();
  ASSERT_EQ(back->projects.size(), 1u);
  EXPECT_DOUBLE_EQ(back->projects[0].idle_cost, 2.5);
  ASSERT_TRUE(back->nodes.has_value());
  ASSERT_EQ(back->nodes->templates.size(), 1u);
  EXPECT_EQ(back->nodes->templates[0].template_name, "h100-spot");
  EXPECT_TRUE(back->nodes->templates[0].spot);
  EXPECT_EQ(back->nodes->templates[0].peak_nodes, 2);
  EXPECT_DOUBLE_EQ(back->nodes->fixed_cost, 196.6);
  EXPECT_NEAR(back->nodes->saved(), 172.6, 1e-9);
  // Without autoscaled nodes: no "nodes" at all.
  EXPECT_EQ(EncodeUsage({row}, {}, std::nullopt, "USD").find("nodes"), std::string::npos);
  auto bad = DecodeUsage(R"({"nodes": {"templates": [{"template": 3}]}})");
  ASSERT_FALSE(bad.has_value());
}

TEST(ProviderCodec, TheRequestSaysItsVerbAndTheAnswerNamesItsNodes) {
  ProviderRequest r{.verb = ProviderVerb::kResume,
                    .node_template = NodeTemplate{.name = "h100", .gpu_spec = "8xH100-80GB"},
                    .nodes = {{.name = "h100-1", .template_name = "h100"}},
                    .jobs = {JobId{12}},
                    .reason = "for 1 waiting job (12)"};
  const std::string text = EncodeProviderRequest(r);
  EXPECT_NE(text.find(R"("verb":"resume")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("count":1)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("jobs":[12])"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("gpus":"8xH100-80GB")"), std::string::npos) << text;
  EXPECT_EQ(EncodeProviderRequest(ProviderRequest{}), "{\"verb\":\"list\"}\n");

  auto nodes = DecodeProviderAnswer(
      R"({"nodes": [{"name": "h100-1", "id": "i-1", "template": "h100"}]})", ProviderVerb::kResume);
  ASSERT_TRUE(nodes.has_value()) << nodes.error().message();
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0], (ProvidedNode{.name = "h100-1", .id = "i-1", .template_name = "h100"}));
  // A suspend may answer nothing; a resume or a list must name its nodes.
  EXPECT_TRUE(DecodeProviderAnswer("", ProviderVerb::kSuspend).has_value());
  EXPECT_TRUE(DecodeProviderAnswer("{}", ProviderVerb::kSuspend).has_value());
  EXPECT_FALSE(DecodeProviderAnswer("", ProviderVerb::kResume).has_value());
  EXPECT_FALSE(DecodeProviderAnswer("{}", ProviderVerb::kList).has_value());
  auto bad = DecodeProviderAnswer(R"({"nodes": [{"name": "a b"}]})", ProviderVerb::kList);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message(), "nodes[0].name: 1-64 of letters, digits, '.', '_', '-'");
  EXPECT_FALSE(DecodeProviderAnswer("started!", ProviderVerb::kResume).has_value());
}

TEST(ServerConfig, TheShippedExampleIsValid) {
  std::ifstream in(std::string(BATON_SOURCE_DIR) + "/deploy/baton.example.yaml");
  ASSERT_TRUE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  auto cfg = DecodeServerConfig(ss.str(), "baton.example.yaml");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  EXPECT_EQ(cfg->policy.Project("vision").guaranteed_milli, 16000);
  EXPECT_EQ(cfg->policy.Pool("dev")->max_time_limit, std::chrono::hours(8));
  EXPECT_EQ(cfg->policy.currency, "USD");
  ASSERT_NE(cfg->policy.Price(Gpu{.model = "H100-80GB"}), nullptr);
  EXPECT_GT(cfg->policy.Price(Gpu{.model = "H100-80GB"})->on_demand, 0);
  EXPECT_GT(cfg->policy.Project("vision").budget.amount, 0);
  EXPECT_EQ(cfg->policy.Project("nlp").checkpoint_group, "nlp");
  EXPECT_EQ(cfg->policy.Project("vision").checkpoint_group, "");
}

TEST(LaunchOrders, CarryTheSharedCheckpointDirectoryAndItsGroup) {
  Order o;
  o.seq = 3;
  o.kind = Order::Kind::kLaunch;
  o.launch.job = JobId{41};
  o.launch.command = {"true"};
  o.launch.checkpoint_dir = "/shared/ckpt/project:vision/41";
  o.launch.checkpoint_group = "vision";
  auto back = DecodeOrders(EncodeOrders({o}));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].launch, o.launch);
}

TEST(ServerConfig, ACheckpointGroupIsAUnixGroupNameOfANamedProject) {
  auto good = DecodeServerConfig("projects:\n  vision: {checkpoint_group: ml-vision_2}\n", "f");
  ASSERT_TRUE(good.has_value()) << good.error().message();
  EXPECT_EQ(good->policy.Project("vision").checkpoint_group, "ml-vision_2");
  EXPECT_EQ(good->policy.Project("other").checkpoint_group, "");
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"projects:\n  vision: {checkpoint_group: 'a b'}\n",
            "projects.vision.checkpoint_group: must be a Unix group name"},
           {"projects:\n  vision: {checkpoint_group: -x}\n",
            "projects.vision.checkpoint_group: must be a Unix group name"},
           {"projects:\n  vision: {checkpoint_group: " + std::string(33, 'g') + "}\n",
            "projects.vision.checkpoint_group: longer than 32 bytes"},
           {"defaults:\n  project: {checkpoint_group: all}\n",
            "defaults.project.checkpoint_group: name it for a project of its own"},
           // Its checkpoints' directory is ROOT/project:NAME: a name is one path component.
           {"projects:\n  ..: {checkpoint_group: g}\n", "names are 1-64 of letters"},
       }) {
    auto cfg = DecodeServerConfig(text, "f");
    ASSERT_FALSE(cfg.has_value()) << text;
    EXPECT_NE(cfg.error().message().find(why), std::string::npos) << text << cfg.error().message();
  }
}

TEST(ServerConfig, ACatalogAndBudgetsAreRead) {
  auto cfg = DecodeServerConfig(R"(
gpu_catalog:
  currency: EUR
  prices:
    H100-80GB: {on_demand: 2.5, spot: 1.1}
    A100: 1.2
projects:
  vision: {budget: {amount: 5000, period: week, hard_stop: true}}
  nlp: {budget: 300}
)",
                                "baton.yaml");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  const Policy& p = cfg->policy;
  EXPECT_EQ(p.currency, "EUR");
  EXPECT_EQ(p.prices.at("H100-80GB"), (GpuPrice{.on_demand = 2.5, .spot = 1.1}));
  EXPECT_EQ(p.prices.at("A100"), (GpuPrice{.on_demand = 1.2, .spot = -1}));
  EXPECT_EQ(p.Project("vision").budget,
            (Budget{.amount = 5000, .period = BudgetPeriod::kWeek, .hard_stop = true}));
  EXPECT_EQ(p.Project("nlp").budget,
            (Budget{.amount = 300, .period = BudgetPeriod::kMonth, .hard_stop = false}));
  auto store = DecodeServerConfig("store: {type: sqlite, path: /fast/baton.db}\n", "baton.yaml");
  ASSERT_TRUE(store.has_value()) << store.error().message();
  EXPECT_EQ(store->store_path, "/fast/baton.db");
  auto pg = DecodeServerConfig(
      "shared_dir: /mnt/baton\nstore: {type: postgresql, url: 'postgres://baton:pw@db/baton'}\n",
      "baton.yaml");
  ASSERT_TRUE(pg.has_value()) << pg.error().message();
  EXPECT_EQ(pg->store_url, "postgres://baton:pw@db/baton");
  EXPECT_TRUE(pg->store_path.empty());
  EXPECT_EQ(pg->shared_dir, "/mnt/baton");
  auto tls = DecodeServerConfig(
      "tls: {cert: /etc/baton/server.crt, key: /etc/baton/server.key, insecure_http: yes}\n"
      "alerts: {webhooks: ['https://hooks.example/baton']}\n",
      "baton.yaml");
  ASSERT_TRUE(tls.has_value()) << tls.error().message();
  EXPECT_EQ(tls->tls_cert, "/etc/baton/server.crt");
  EXPECT_EQ(tls->tls_key, "/etc/baton/server.key");
  EXPECT_TRUE(tls->insecure_http);
  EXPECT_EQ(tls->webhooks, std::vector<std::string>{"https://hooks.example/baton"});
  EXPECT_FALSE(pg->insecure_http);
  // A project's budget replaces the default's whole, and `none` opts out of it.
  auto defaults = DecodeServerConfig(R"(
defaults:
  project: {budget: {amount: 100, period: week, hard_stop: true}}
projects:
  a: {budget: 50}
  b: {budget: none}
)",
                                     "baton.yaml");
  ASSERT_TRUE(defaults.has_value()) << defaults.error().message();
  EXPECT_EQ(defaults->policy.Project("a").budget,
            (Budget{.amount = 50, .period = BudgetPeriod::kMonth}));
  EXPECT_LT(defaults->policy.Project("b").budget.amount, 0);
  EXPECT_EQ(defaults->policy.Project("c").budget.amount, 100);
  EXPECT_LT(p.Project("other").budget.amount, 0);
}

}  // namespace
// The default policy has least attained service on, with a budget (issue 41); a file may turn
// it off, or lift the budget.
TEST(ConfigFile, LeastAttainedServiceIsOnByDefaultWithABudgetAndMayBeTurnedOff) {
  const Policy defaults;
  EXPECT_EQ(defaults.las_thresholds, (std::vector<double>{36'000}));  // 10 GPU-hours
  EXPECT_TRUE(defaults.las_preemption);
  EXPECT_EQ(defaults.las_preemption_budget, std::optional<int>(1));
  EXPECT_EQ(defaults.weights.las, 5'000);
  auto cfg = DecodeServerConfig(
      "scheduling:\n  las_thresholds: []\n  las_preemption: false\n"
      "  las_preemption_budget: none\n",
      "baton.yaml");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  EXPECT_TRUE(cfg->policy.las_thresholds.empty());
  EXPECT_FALSE(cfg->policy.las_preemption);
  EXPECT_FALSE(cfg->policy.las_preemption_budget.has_value());
}

}  // namespace baton::codec
