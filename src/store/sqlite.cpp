#include "store/sqlite.hpp"

namespace kforge::sql {

Db::Db(const std::string& path, bool read_only) : path_(path) {
  const int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError("cannot open results database '" + path + "': " + msg +
                     (read_only ? "" : " (check that the folder exists and is writable, or pass --db)"));
  }
  sqlite3_extended_result_codes(db_, 1);
  // Another kforge writing the same file: wait for its transaction instead of failing.
  sqlite3_busy_timeout(db_, 10000);
}

Db::~Db() { sqlite3_close(db_); }

void Db::fail(std::string_view what) const {
  throw StoreError("results database '" + path_ + "': " + std::string(what) + ": " +
                   sqlite3_errmsg(db_));
}

void Db::exec(std::string_view sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw StoreError("results database '" + path_ + "': " + msg + " (in: " +
                     std::string(sql.substr(0, 80)) + ")");
  }
}

std::int64_t Db::last_insert_id() const { return sqlite3_last_insert_rowid(db_); }

std::int64_t Db::scalar_int(std::string_view sql) const {
  Stmt s(*this, sql);
  return s.step() ? s.integer(0) : 0;
}

Stmt::Stmt(const Db& db, std::string_view text) : db_(db) {
  if (sqlite3_prepare_v2(db.handle(), text.data(), static_cast<int>(text.size()), &stmt_, nullptr) !=
      SQLITE_OK)
    db.fail("cannot prepare '" + std::string(text.substr(0, 60)) + "'");
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Stmt& Stmt::bind(int i, std::string_view v) {
  if (sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT) != SQLITE_OK)
    db_.fail("cannot bind a text value");
  return *this;
}

Stmt& Stmt::bind(int i, std::int64_t v) {
  if (sqlite3_bind_int64(stmt_, i, v) != SQLITE_OK) db_.fail("cannot bind an integer");
  return *this;
}

Stmt& Stmt::bind(int i, double v) {
  if (sqlite3_bind_double(stmt_, i, v) != SQLITE_OK) db_.fail("cannot bind a real");
  return *this;
}

Stmt& Stmt::bind(int i, std::nullopt_t) {
  if (sqlite3_bind_null(stmt_, i) != SQLITE_OK) db_.fail("cannot bind NULL");
  return *this;
}

bool Stmt::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail("statement failed");
}

void Stmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Stmt::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

std::string Stmt::text(int col) const {
  const auto* p = sqlite3_column_text(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, col)) : std::string();
}

std::int64_t Stmt::integer(int col) const { return sqlite3_column_int64(stmt_, col); }
double Stmt::real(int col) const { return sqlite3_column_double(stmt_, col); }
std::optional<double> Stmt::opt_real(int col) const {
  if (is_null(col)) return std::nullopt;
  return real(col);
}

Transaction::Transaction(const Db& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace kforge::sql
