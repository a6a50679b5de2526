// Fuzz target: YAML job files (`baton submit -f`), the server config file and sim cluster files.
#include <cstdint>
#include <string_view>

#include "codec/json_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto json = baton::codec::YamlToJson(text, "fuzz.yaml");
  if (json) (void)baton::codec::DecodeJobSpecs(*json);
  (void)baton::codec::DecodeServerConfig(text, "fuzz.yaml");
  (void)baton::codec::DecodeClusterFile(text, "fuzz.yaml");
  return 0;
}
