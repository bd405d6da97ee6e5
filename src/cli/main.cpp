// kforge: verify, measure and tune compute kernels.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/error.hpp"
#include "kforge/util.hpp"

int main(int argc, char** argv) {
  kforge::keep_freed_memory();
  CLI::App app{"kforge: verify, measure, tune and score compute kernels"};
  app.require_subcommand(1);
  int code = kforge::cli::kExitPassed;
  kforge::cli::add_list(app, code);
  kforge::cli::add_ceilings(app, code);
  kforge::cli::add_suite(app, code);
  kforge::cli::add_report(app, code);
  kforge::cli::add_verify_and_bench(app, code);
  kforge::cli::add_eval(app, code);
  kforge::cli::add_tune(app, code);
  kforge::cli::add_db(app, code);
  kforge::cli::add_agent(app, code);
  kforge::cli::add_mcp(app, code);
  kforge::cli::add_kernelbench(app, code);
  kforge::cli::add_features(app, code);
  kforge::cli::add_predict(app, code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kforge::cli::kExitUsage;
  } catch (const kforge::UsageError& e) {
    fmt::print(stderr, "kforge: error: {}\n", e.what());
    return kforge::cli::kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "kforge: error: {}\n", e.what());
    return kforge::cli::kExitUsage;
  }
  return code;
}
