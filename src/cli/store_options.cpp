#include "cli/store_options.hpp"

#include <fstream>
#include <sstream>

#include "kforge/store.hpp"

namespace kforge::cli {

CLI::Option* add_db_option(CLI::App& app, std::string& db) {
  return app.add_option("--db", db,
                        "results database (default: $KFORGE_CACHE_DIR/results.db, else "
                        "~/.cache/kforge/results.db)");
}

std::filesystem::path store_path(const std::string& db) {
  return db.empty() ? default_store_path() : std::filesystem::path(db);
}

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string raw = ss.str();
  std::string line = "kforge";
  std::size_t start = raw.find('\0');  // skip argv[0]: the path the binary was run from
  while (start != std::string::npos && start + 1 < raw.size()) {
    const std::size_t end = raw.find('\0', start + 1);
    const std::string a = raw.substr(start + 1, end == std::string::npos ? std::string::npos : end - start - 1);
    const bool plain = !a.empty() && a.find_first_of(" \t'\"$\\") == std::string::npos;
    line += " " + (plain ? a : "'" + a + "'");
    start = end;
  }
  return line;
}

}  // namespace kforge::cli
