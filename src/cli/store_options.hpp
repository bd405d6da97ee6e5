#pragma once
// The results database as the commands name it: `--db FILE`, else the default location.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>

namespace kforge::cli {

// Adds `--db FILE` to a command.
CLI::Option* add_db_option(CLI::App& app, std::string& db);
// FILE when given, else $KFORGE_CACHE_DIR/results.db or ~/.cache/kforge/results.db.
[[nodiscard]] std::filesystem::path store_path(const std::string& db);
// The command line as typed, for the runs table.
[[nodiscard]] std::string command_line();

}  // namespace kforge::cli
