// The best-known configuration of a problem instance on a machine, read back at run time the
// way CLBlast reads its tuning database: only configurations the kernel still accepts count.
#include "kforge/store.hpp"

namespace kforge {
namespace {

// The stored parameters as the kernel's configuration, if its current space accepts them.
std::optional<ParamValues> usable(const StoredEvaluation& e, const EvalRequest& req) {
  ParamValues p;
  const nlohmann::json params = e.params();
  for (const auto& [name, v] : params.items()) {
    if (!v.is_number_integer()) return std::nullopt;
    p[name] = v.get<std::int64_t>();
  }
  try {
    if (req.kernel.resolve(p) != p) return std::nullopt;  // a parameter the store did not set
  } catch (const std::exception&) {
    return std::nullopt;  // a parameter the kernel no longer has
  }
  if (req.kernel.check(p, req.sizes)) return std::nullopt;
  return p;
}

}  // namespace

std::optional<StoredEvaluation> best_known(const Store& s, const EvalRequest& req,
                                           std::string_view fingerprint) {
  const EvalKey k = EvalKey::of(req, fingerprint);
  const auto candidates = s.fastest(k.problem, k.sizes, k.dtype, k.backend, k.fingerprint, 1000);
  const StoredEvaluation* other_source = nullptr;
  for (const auto& e : candidates) {
    if (e.kernel != req.kernel.name || !usable(e, req)) continue;
    if (e.key.source_hash == k.source_hash) return e;
    if (!other_source) other_source = &e;
  }
  if (other_source) return *other_source;
  return std::nullopt;
}

}  // namespace kforge
