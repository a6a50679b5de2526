// The job routes of api::Service: submit, list, show, act on, read the logs and metrics of
// jobs, and the queue.
#include <cctype>

#include "api/service.h"
#include "api/service_internal.h"
#include "codec/job_patch.h"
#include "codec/json_codec.h"
#include "core/node.h"
#include "core/resubmit.h"
#include "core/text.h"

namespace baton::api {

using namespace internal;

// Content-Type application/yaml (or x-yaml, text/yaml), with or without parameters.
static bool IsYaml(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  std::string lower(type);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return lower == "application/yaml" || lower == "application/x-yaml" || lower == "text/yaml";
}

void Service::SubmitOne(Call c) { Submit(std::move(c), false); }

namespace {

// A secret for each batch script, which its srun shows its nodes' step servers (Job::step_key).
void AddStepKeys(control::SubmitJobs* submit) {
  for (const JobSpec& spec : submit->specs)
    submit->step_keys.push_back(spec.batch ? RandomHex(16) : "");
}

// A body refused as written, before the controller sees it: whatever the cluster's state, the
// same body is refused. The error names the field it is about ("field": what the message
// names before its ": ", e.g. "time_limit", "jobs[1].resources.gpus", "body"), so that a client
// can point at its own input (baton-py names its flag).
Response BadBody(const Status& st) {
  std::string_view message = st.message();
  std::string_view field = message.substr(0, message.find(": "));
  if (field.size() == message.size() || field.find(' ') != std::string_view::npos) field = {};
  return Response{.status = HttpStatus(st.code()), .body = codec::EncodeError(st, field)};
}

}  // namespace

void Service::SubmitBatch(Call c) { Submit(std::move(c), true); }

void Service::Submit(Call c, bool batch) {
  if (c.request.idempotency_key.size() > 256) {
    return c.respond(Error(InvalidArgument("Idempotency-Key: longer than 256 bytes")));
  }
  auto dry_run = QueryBool(c.request, "dry_run");
  if (!dry_run) return c.respond(Error(dry_run.error()));
  control::SubmitJobs submit{
      .caller = CallerOf(c.who), .idempotency_key = c.request.idempotency_key, .dry_run = *dry_run};
  if (IsYaml(c.request.content_type)) {
    // A job file as `baton submit job.yaml` reads it (the dashboard's submit form sends one).
    auto json = codec::YamlToJson(c.request.body, "body");
    if (!json) return c.respond(BadBody(json.error()));
    auto specs = codec::DecodeJobFile(*json);
    if (!specs) return c.respond(BadBody(InvalidArgument("body: " + specs.error().message())));
    if (!batch && specs->size() != 1) {
      return c.respond(BadBody(
          InvalidArgument("body: the YAML has " + std::to_string(specs->size()) +
                          " jobs; POST /v1/jobs takes one (POST /v1/jobs/batch takes several)")));
    }
    submit.specs = std::move(*specs);
  } else if (batch) {
    auto specs = codec::DecodeJobBatch(c.request.body);
    if (!specs) return c.respond(BadBody(specs.error()));
    submit.specs = std::move(*specs);
  } else {
    auto spec = codec::DecodeJobSpec(c.request.body);
    if (!spec) return c.respond(BadBody(spec.error()));
    submit.specs.push_back(std::move(*spec));
  }
  for (const JobSpec& spec : submit.specs) {
    if (!spec.code.empty() && IsCodeId(spec.code) && (code_ == nullptr || !code_->Has(spec.code))) {
      return c.respond(Error(
          InvalidArgument("code: no snapshot " + spec.code.substr(0, 12) +
                          " here (upload it with POST /v1/code; baton submit --code DIR does)")));
    }
  }
  if (!submit.dry_run) AddStepKeys(&submit);
  Run(std::move(submit), std::move(c.respond), [batch](control::Submitted& r) {
    if (r.dry_run) {
      std::vector<const Job*> jobs;
      for (const Job& j : r.jobs) jobs.push_back(&j);
      return Json(200, codec::EncodeDryRun(jobs));
    }
    int status = r.created ? 201 : 200;
    if (!batch) return Json(status, codec::EncodeJob(r.jobs.at(0)));
    std::vector<const Job*> jobs;
    for (const Job& j : r.jobs) jobs.push_back(&j);
    return Json(status, codec::EncodeJobList(jobs, std::nullopt));
  });
}

void Service::ListJobs(Call c) {
  const Request& req = c.request;
  control::ListJobs list{.caller = CallerOf(c.who),
                         .user = QueryText(req, "user"),
                         .project = QueryText(req, "project")};
  for (const std::string& name : QueryList(req, "state")) {
    auto st = ParseJobState(name);
    if (!st) return c.respond(Error(st.error()));
    list.states.push_back(*st);
  }
  auto limit = QueryInt(req, "limit", 1, 1000, 100);
  auto after = QueryInt(req, "after", 0, INT64_MAX, 0);
  auto array = QueryInt(req, "array", 0, INT64_MAX, 0);
  if (!array) return c.respond(Error(array.error()));
  list.array = *array;
  if (!limit) return c.respond(Error(limit.error()));
  if (!after) return c.respond(Error(after.error()));
  list.limit = static_cast<int>(*limit);
  list.after = *after;
  Run(std::move(list), std::move(c.respond), [who = c.who](control::JobPage& r) {
    std::vector<const Job*> jobs;
    for (Job& j : r.jobs) {
      Redact(j, who);
      jobs.push_back(&j);
    }
    return Json(200, codec::EncodeJobList(jobs, r.next));
  });
}

void Service::ShowJob(Call c) {
  auto id = JobIdParam(c);
  if (!id) return c.respond(Error(id.error()));
  Run(control::GetJob{CallerOf(c.who), id->id, id->array_index}, std::move(c.respond),
      [who = c.who](control::JobDetail& r) {
        Redact(r.job, who);
        return Json(200, codec::EncodeJobDetail(r.job, r.factors ? &*r.factors : nullptr,
                                                r.queue_position));
      });
}

void Service::JobAction(Call c, control::JobAction::Kind kind) {
  auto id = JobIdParam(c);
  if (!id) return c.respond(Error(id.error()));
  Run(control::JobAction{CallerOf(c.who), id->id, kind, id->array_index}, std::move(c.respond),
      [](control::JobShown& r) { return Json(200, codec::EncodeJob(r.job)); });
}

// PATCH /v1/jobs/{id}: a waiting job's fields, a running job's time limit (`baton update`).
void Service::UpdateJob(Call c) {
  auto id = JobIdParam(c);
  if (!id) return c.respond(Error(id.error()));
  auto patch = codec::DecodeJobPatch(c.request.body);
  if (!patch) return c.respond(Error(patch.error()));
  control::UpdateJob update{.caller = CallerOf(c.who),
                            .id = id->id,
                            .array_index = id->array_index,
                            .fields = std::move(patch->fields),
                            .set = std::move(patch->set)};
  Run(std::move(update), std::move(c.respond),
      [](control::JobShown& r) { return Json(200, codec::EncodeJob(r.job)); });
}

// POST /v1/jobs/{id}/resubmit: the job's spec again as a new job of the caller's, as `baton
// resubmit ID` without flags makes it: not held, a task alone, a run of a recurring job once.
void Service::Resubmit(Call c) {
  auto id = JobIdParam(c);
  if (!id) return c.respond(Error(id.error()));
  if (c.request.idempotency_key.size() > 256) {
    return c.respond(Error(InvalidArgument("Idempotency-Key: longer than 256 bytes")));
  }
  Ask(control::GetJob{CallerOf(c.who), id->id, id->array_index},
      [this, who = c.who, key = c.request.idempotency_key,
       respond = std::move(c.respond)](control::Answered<control::GetJob>& r) mutable {
        if (!r.status.ok()) return respond(Error(r.status));
        const Job& job = r->job;
        if (who.role != Role::kAdmin && job.user != who.user) {
          return respond(
              Error(PermissionDenied("job " + job.id.ToString() + " is " + job.user + "'s: only " +
                                     job.user + " or an admin resubmits it")));
        }
        control::SubmitJobs submit{.caller = CallerOf(who), .idempotency_key = key};
        submit.specs.push_back(ResubmitSpec(job));
        AddStepKeys(&submit);
        Run(std::move(submit), std::move(respond), [](control::Submitted& done) {
          return Json(done.created ? 201 : 200, codec::EncodeJob(done.jobs.at(0)));
        });
      });
}

void Service::ShowJobMetrics(Call c) {
  auto id = JobIdParam(c);
  if (!id) return c.respond(Error(id.error()));
  Run(control::GetJobMetrics{CallerOf(c.who), id->id, id->array_index}, std::move(c.respond),
      [](JobMetrics& m) { return Json(200, codec::EncodeJobMetrics(m)); });
}

// GET /v1/crons[?user=NAME]: the recurring jobs not deleted.
void Service::ListCrons(Call c) {
  control::ListCrons list{.user = QueryText(c.request, "user")};
  Run(std::move(list), std::move(c.respond), [who = c.who](control::CronList& r) {
    for (CronEntry& e : r.crons) {
      Redact(e.current, who);
      if (e.last) Redact(*e.last, who);
    }
    return Json(200, codec::EncodeCronList(r.crons));
  });
}

// DELETE /v1/crons/{id}: no more runs; the waiting one is cancelled, a running one goes on.
void Service::DeleteCron(Call c) {
  auto id = PositiveInt(c.Param("id"));
  if (!id) return c.respond(Error(InvalidArgument("cron id: must be a positive integer")));
  Run(control::DeleteCron{CallerOf(c.who), JobId{*id}}, std::move(c.respond),
      [](control::CronShown& r) { return Json(200, codec::EncodeCron(r.cron)); });
}

void Service::Queue(Call c) {
  auto limit = QueryInt(c.request, "limit", 1, 1000, 100);
  auto offset = QueryInt(c.request, "offset", 0, INT64_MAX, 0);
  if (!limit) return c.respond(Error(limit.error()));
  if (!offset) return c.respond(Error(offset.error()));
  control::GetQueue q{
      .caller = CallerOf(c.who), .limit = static_cast<int>(*limit), .offset = *offset};
  Run(std::move(q), std::move(c.respond), [who = c.who](control::QueuePage& r) {
    for (Job& j : r.jobs) Redact(j, who);
    return Json(200, codec::EncodeQueue(r.jobs, r.factors, r.next));
  });
}

// Whose log of `job` a reader gets: its owner's or an admin's; the log of `node` when given,
// else of the node the job runs on (a gang's rank 0), else of the node that last wrote output
// for it; "" when there is none yet.
Result<std::string> Service::LogSource(const Job& job, const Identity& who,
                                       const std::string& node) const {
  if (who.role != Role::kAdmin && job.user != who.user) {
    return Err(PermissionDenied("job " + job.id.ToString() + " is " + job.user + "'s: only " +
                                job.user + " or an admin reads its logs"));
  }
  if (!node.empty()) return node;
  if (!job.allocation.empty()) return job.allocation.front().node;
  ASSIGN_OR_RETURN(std::vector<std::string> nodes, logs_.Nodes(job.id));
  return nodes.empty() ? std::string() : nodes.front();
}

// The ?node= of a log route: "" or a node name.
static Result<std::string> NodeParam(const Request& req) {
  std::string node = QueryText(req, "node");
  if (!node.empty() && !IsValidNodeName(node)) {
    return Err(InvalidArgument("node: \"" + node.substr(0, 64) + "\" is not a node name"));
  }
  return node;
}

// GET /v1/jobs/{id}/metrics/lines: the lines the job appended to $BATON_METRICS_FILE on a node
// (as LogSource picks it), from ?offset=, whole lines up to 4 MiB at a time, each parsed.
void Service::MetricsLines(Call c) {
  auto id = JobIdParam(c);
  if (!id) return c.respond(Error(id.error()));
  auto offset = QueryInt(c.request, "offset", 0, INT64_MAX, 0);
  if (!offset) return c.respond(Error(offset.error()));
  auto node = NodeParam(c.request);
  if (!node) return c.respond(Error(node.error()));
  Run(control::GetJob{CallerOf(c.who), id->id, id->array_index}, std::move(c.respond),
      [this, who = c.who, node = *node, offset = *offset](control::JobDetail& r) {
        const Job& job = r.job;
        auto from = LogSource(job, who, node);
        if (!from) return Error(from.error());
        LogStore::Chunk chunk;
        if (!from->empty()) {
          auto read = logs_.Read(job.id, *from, offset, kMetricsLinesBytes, LogStream::kMetrics);
          if (!read) return Error(read.error());
          chunk = std::move(*read);
        }
        return Json(200, codec::EncodeMetricsLines(job.id, *from, chunk.data, offset, chunk.size,
                                                   IsTerminal(job.state)));
      });
}

// GET /v1/jobs/{id}/logs: the log LogSource picks, a range of it or followed.
void Service::Logs(Call c) {
  auto id = JobIdParam(c);
  if (!id) return c.respond(Error(id.error()));
  auto offset = QueryInt(c.request, "offset", 0, INT64_MAX, 0);
  auto limit = QueryInt(c.request, "limit", 1, 16 << 20, 1 << 20);
  if (!offset) return c.respond(Error(offset.error()));
  if (!limit) return c.respond(Error(limit.error()));
  bool follow = QueryFlag(c.request, "follow");
  auto node_param = NodeParam(c.request);
  if (!node_param) return c.respond(Error(node_param.error()));
  Run(control::GetJob{CallerOf(c.who), id->id, id->array_index}, std::move(c.respond),
      [this, who = c.who, node = *node_param, follow, offset = *offset,
       limit = *limit](control::JobDetail& r) {
        const Job& job = r.job;
        auto source = LogSource(job, who, node);
        if (!source) return Error(source.error());
        const std::string& from = *source;
        Response res;
        res.content_type = "text/plain; charset=utf-8";
        res.headers.emplace_back("X-Baton-Job-State", std::string(JobStateName(job.state)));
        if (follow) {
          res.stream = FollowLogs(who, job.id, from, !node.empty(), offset);
          return res;
        }
        if (from.empty()) return res;  // no output yet
        auto chunk = logs_.Read(job.id, from, offset, static_cast<size_t>(limit));
        if (!chunk) return Error(chunk.error());
        res.body = std::move(chunk->data);
        res.headers.emplace_back("X-Baton-Log-Size", std::to_string(chunk->size));
        return res;
      });
}

}  // namespace baton::api
