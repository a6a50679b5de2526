// The spec codec's parts the job codec uses too (codec/job_spec_codec.cc): a job object's spec
// fields go through the same decoder as a user's spec, and both write resources alike.
#pragma once

#include <boost/json.hpp>
#include <string_view>

#include "core/job.h"
#include "core/status.h"

namespace baton::codec::internal {

// The fields of a spec object into `spec`; `prefix` ("jobs[3]") starts each error's path.
Status DecodeSpecObject(const boost::json::value& v, std::string_view prefix, JobSpec* spec);
boost::json::object EncodeResources(const Resources& r);
// A spec's `model` (sizing from a model): {"name" | "params", "task", "precision", "seq",
// "batch", "optimizer", "zero", "checkpointing"}; only what differs from the defaults.
boost::json::object EncodeModelSizing(const ModelSizing& m);

}  // namespace baton::codec::internal
