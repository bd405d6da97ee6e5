#pragma once
// A thin RAII layer over the SQLite C API: a connection, prepared statements, and a
// transaction guard. Every failure throws StoreError naming the database file and SQLite's
// own message. Private to src/store/.
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kforge/store.hpp"

namespace kforge::sql {

class Db;

// One prepared statement. Parameters bind by 1-based index; columns read by 0-based index.
class Stmt {
 public:
  Stmt(const Db& db, std::string_view text);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, std::string_view v);
  Stmt& bind(int i, std::int64_t v);
  Stmt& bind(int i, double v);
  Stmt& bind(int i, std::nullopt_t);
  Stmt& bind(int i, const std::optional<double>& v) { return v ? bind(i, *v) : bind(i, std::nullopt); }
  // Runs to the next row: true when a row is ready, false when done.
  bool step();
  void reset();

  [[nodiscard]] bool is_null(int col) const;
  [[nodiscard]] std::string text(int col) const;  // "" for NULL
  [[nodiscard]] std::int64_t integer(int col) const;
  [[nodiscard]] double real(int col) const;
  [[nodiscard]] std::optional<double> opt_real(int col) const;

 private:
  const Db& db_;
  sqlite3_stmt* stmt_ = nullptr;
};

class Db {
 public:
  // `read_only` opens an existing file without creating it or taking write locks.
  Db(const std::string& path, bool read_only);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  void exec(std::string_view sql) const;  // one or more statements, no results
  [[nodiscard]] std::int64_t last_insert_id() const;
  [[nodiscard]] std::int64_t scalar_int(std::string_view sql) const;  // first column of first row
  [[noreturn]] void fail(std::string_view what) const;  // throws StoreError with SQLite's message
  [[nodiscard]] sqlite3* handle() const { return db_; }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

// BEGIN IMMEDIATE on construction (the write lock is taken up front, so a concurrent writer
// waits on busy_timeout instead of failing mid-transaction); ROLLBACK unless commit() ran.
class Transaction {
 public:
  explicit Transaction(const Db& db);
  ~Transaction();
  void commit();

 private:
  const Db& db_;
  bool done_ = false;
};

}  // namespace kforge::sql
