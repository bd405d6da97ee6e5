// kforge: verify, measure and tune compute kernels.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/dist.hpp"
#include "kforge/error.hpp"
#include "kforge/util.hpp"

namespace {

int run_command(int argc, char** argv) {
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
  kforge::cli::add_schedule(app, code);
  kforge::cli::add_features(app, code);
  kforge::cli::add_predict(app, code);
  kforge::cli::add_overlap(app, code);
  kforge::cli::add_kmodel(app, code);
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

}  // namespace

int main(int argc, char** argv) {
  kforge::keep_freed_memory();
  // Under mpirun every rank but 0 only evaluates what rank 0 hands out (kforge/dist.hpp).
  kforge::dist::Session mpi(argc, argv);
  if (mpi.rank() > 0) return mpi.serve();
  return mpi.finish(run_command(argc, argv));
}
