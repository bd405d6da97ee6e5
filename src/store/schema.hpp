#pragma once
// The database's shape: tables, indexes and pragmas, versioned through PRAGMA user_version
// with a list of migrations. Private to src/store/.
#include "store/sqlite.hpp"

namespace kforge::store {

// 'kfor': marks a SQLite file as a kforge results database.
inline constexpr int kApplicationId = 0x6b666f72;

// Sets the connection's pragmas and brings the schema to Store::kSchemaVersion (creating it in
// an empty file). Throws StoreError for a foreign file or one newer than this kforge.
void prepare(const sql::Db& db, bool read_only);

}  // namespace kforge::store
