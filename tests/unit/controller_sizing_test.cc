// `baton submit --model` (issue 17): a job that names its model gets the GPUs and GPU memory
// it does not give from the sizing estimate, on the GPU models its pool has.
#include "controller_fixture.h"

namespace baton::control {
namespace {

class ControllerSizingTest : public ControllerTest {
 protected:
  void SetUp() override {
    ControllerTest::SetUp();
    RegisterNode("n1", 8);  // 8 x H100-80GB
  }

  static JobSpec Sized(const std::string& model, ModelTask task) {
    JobSpec s = SubmittedSpec();
    s.command = {"python3", "train.py"};
    s.model = ModelSizing{.name = model, .task = task};
    return s;
  }

  Answered<SubmitJobs> SubmitSpec(const JobSpec& s) {
    return Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  }

  static SizingRequest RequestFor(const char* model, ModelTask task) {
    return SizingRequest{.model = *FindModel(model), .task = task};
  }
};

TEST_F(ControllerSizingTest, TheFewestGpusThatHoldTheModelAreFilledIn) {
  auto r = SubmitSpec(Sized("Llama-2-7B", ModelTask::kFinetune));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  const Job& job = r->jobs.at(0);
  EXPECT_EQ(job.spec.resources.milli_gpus, 2000);
  int64_t need = EstimateMemory(RequestFor("Llama-2-7B", ModelTask::kFinetune), 2).total();
  EXPECT_EQ(job.spec.resources.gpu_memory_bytes, need);
  EXPECT_EQ(job.spec.resources.nodes, 1);
  EXPECT_NE(job.sized.find("Llama-2-7B finetune in bf16: 2 GPUs of "), std::string::npos)
      << job.sized;
  EXPECT_NE(job.sized.find("(fewest on H100-80GB)"), std::string::npos) << job.sized;
  EXPECT_EQ(State(job.id), JobState::kRunning);
  EXPECT_EQ(c_->FindJob(job.id)->sized, job.sized);  // kept with the job
}

TEST_F(ControllerSizingTest, GivenGpusKeepTheirCountAndGetTheMemoryEachNeeds) {
  JobSpec s = Sized("Llama-2-70B", ModelTask::kInference);
  s.resources.milli_gpus = 4000;
  auto r = SubmitSpec(s);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r->jobs[0].spec.resources.milli_gpus, 4000);
  EXPECT_EQ(r->jobs[0].spec.resources.gpu_memory_bytes,
            EstimateMemory(RequestFor("Llama-2-70B", ModelTask::kInference), 4).total());
  EXPECT_NE(r->jobs[0].sized.find("a GPU on the 4 given"), std::string::npos) << r->jobs[0].sized;
  // A parameter count takes the shape of the nearest Llama.
  s = SubmittedSpec();
  s.command = {"serve"};
  s.model = ModelSizing{.params = 7e9};
  r = SubmitSpec(s);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r->jobs[0].spec.resources.milli_gpus, 1000);
  EXPECT_NE(r->jobs[0].sized.find("7.00B inference in bf16: 1 GPU of "), std::string::npos)
      << r->jobs[0].sized;
}

TEST_F(ControllerSizingTest, WhatCannotBeSizedOrHeldIsRefusedWithWhy) {
  auto r = SubmitSpec(Sized("no-such-model", ModelTask::kInference));
  EXPECT_EQ(r.status.message(),
            "model.name: no model \"no-such-model\" in the catalog (baton size --list); params: 7B "
            "sizes any model");
  // Full fine-tuning of a 70B model: its states shard over 40 GPUs, more than the pool has.
  r = SubmitSpec(Sized("Llama-2-70B", ModelTask::kFinetune));
  EXPECT_EQ(r.status.message(),
            "model: Llama-2-70B finetune in bf16 needs 40 H100-80GB GPUs; pool default has 8");
  // 405B's activations alone, without checkpointing, pass any one GPU's memory.
  r = SubmitSpec(Sized("Llama-3.1-405B", ModelTask::kFinetune));
  EXPECT_EQ(r.status.message(),
            "model: Llama-3.1-405B finetune in bf16 needs more memory than any number of "
            "H100-80GB GPUs hold; pool default has 8");
  JobSpec s = Sized("Llama-2-7B", ModelTask::kInference);
  s.pool = "empty";
  r = SubmitSpec(s);
  EXPECT_EQ(r.status.message(),
            "model: pool empty has no GPUs known to size Llama-2-7B inference in bf16 for; give "
            "the GPUs (--gpus)");
  EXPECT_TRUE(c_->jobs().empty());
}

TEST_F(ControllerSizingTest, ModelsOfTheConfigurationAreFoundFirst) {
  Policy p;
  p.models.push_back(ModelShape{.name = "house-30b",
                                .params = 30e9,
                                .layers = 60,
                                .hidden = 6656,
                                .heads = 52,
                                .kv_heads = 52,
                                .vocab = 32000});
  Run(SetPolicy{p});
  auto r = SubmitSpec(Sized("HOUSE-30B", ModelTask::kInference));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r->jobs[0].spec.resources.milli_gpus, 1000);  // 60 GB of bf16 weights on one 80 GB
  auto models = Run(ListModels{});
  ASSERT_FALSE(models->models.empty());
  EXPECT_EQ(models->models.front().name, "house-30b");
  EXPECT_EQ(models->models.size(), KnownModels().size() + 1);
}

}  // namespace
}  // namespace baton::control
