#pragma once
// What the files of src/store/ share and nobody else needs.
#include <string>

#include "kforge/store.hpp"
#include "store/sqlite.hpp"

namespace kforge {
struct Store::Impl {
  sql::Db db;
  Impl(const std::string& path, bool read_only) : db(path, read_only) {}
};
}  // namespace kforge

namespace kforge::store {

inline std::string utc_now() { return utc_timestamp(); }

// The columns of `evaluations` in the order read_evaluation() expects them.
extern const char* const kEvaluationColumns;
[[nodiscard]] StoredEvaluation read_evaluation(const sql::Stmt& s);

}  // namespace kforge::store
