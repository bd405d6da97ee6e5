#pragma once
// Each command adds its subcommand to the app; `code` receives the command's exit code.
#include <CLI/CLI.hpp>

namespace kforge::cli {

void add_list(CLI::App& app, int& code);
void add_ceilings(CLI::App& app, int& code);
void add_suite(CLI::App& app, int& code);
void add_report(CLI::App& app, int& code);
void add_verify_and_bench(CLI::App& app, int& code);
void add_eval(CLI::App& app, int& code);
void add_tune(CLI::App& app, int& code);
void add_db(CLI::App& app, int& code);
void add_agent(CLI::App& app, int& code);
void add_mcp(CLI::App& app, int& code);
void add_kernelbench(CLI::App& app, int& code);
void add_schedule(CLI::App& app, int& code);
void add_features(CLI::App& app, int& code);
void add_predict(CLI::App& app, int& code);
void add_overlap(CLI::App& app, int& code);
void add_kmodel(CLI::App& app, int& code);

}  // namespace kforge::cli
