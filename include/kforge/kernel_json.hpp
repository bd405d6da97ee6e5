#pragma once
// KernelSpec::from_json, a template so any source loader (embedded files, the file system) fits.
#include <nlohmann/json.hpp>

#include "kforge/error.hpp"
#include "kforge/kernel.hpp"

namespace kforge {

template <class Loader>
KernelSpec KernelSpec::from_json(const nlohmann::json& j, Loader&& load_source) {
  if (!j.is_object() || !j.contains("source"))
    throw UsageError("kernel spec needs a \"source\" field naming its source file");
  const std::string path = j.at("source").get<std::string>();
  KernelSpec spec = from_json_with_source(j, load_source(path));
  spec.source_path = path;
  return spec;
}

}  // namespace kforge
