#pragma once
// Whether a `kforge verify --json` document shows the index_width check run, not skipped: its
// entry passed with "passed at ..." (a skip passes too, saying why).
#include <nlohmann/json.hpp>

namespace kforge::test {

inline bool index_width_ran(const nlohmann::json& doc) {
  for (const auto& c : doc.at("verify").at("checks"))
    if (c.value("name", "") == "index_width" && c.value("passed", false) &&
        c.value("detail", "").rfind("passed at", 0) == 0)
      return true;
  return false;
}

}  // namespace kforge::test
