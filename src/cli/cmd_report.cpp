// `kforge report --input results.json [--out DIR]`: report.html (a roofline plot inline, the
// machine, the suite figures, a table of results), report.md and roofline.svg from the JSON
// of `kforge suite`, `bench` or `tune`.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/measure.hpp"
#include "kforge/report.hpp"
#include "kforge/util.hpp"

namespace kforge::cli {

void add_report(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand(
      "report", "write report.html and report.md, with a roofline plot (SVG), from the JSON of "
                "`kforge suite`, `bench` or `tune`");
  struct Opts { std::string input, out = "kforge-report"; bool no_measure = false; };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--input,-i", o->input, "results JSON (suite, bench or tune --json output)")->required();
  cmd->add_option("--out,-o", o->out, "folder to write into")->capture_default_str();
  cmd->add_flag("--no-measure", o->no_measure,
                "never measure missing ceilings; draw only the roofs the input or the cache has");
  cmd->callback([o, &code] {
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(read_file(o->input));
    } catch (const nlohmann::json::exception& e) {
      throw UsageError(o->input + " is not JSON (" + e.what() + ")");
    }
    // Roofs for backends the document names but carries no ceilings for (bench, tune output):
    // this machine's, cached or measured now.
    nlohmann::json extra = nlohmann::json::array();
    const ReportData first = report_data(doc);
    for (const auto& p : first.points) {
      bool have = false;
      for (const auto& r : first.roofs) have = have || r.backend == p.backend;
      for (const auto& e : extra) have = have || e.value("backend", "") == p.backend;
      if (have || p.backend.empty() || o->no_measure) continue;
      try {
        auto b = make_backend(p.backend);
        if (b->can_run()) extra.push_back(ceilings(*b).to_json());
      } catch (const std::exception&) {
        // a backend this build or machine lacks: its points are drawn without roofs
      }
    }
    const ReportData d = report_data(doc, extra);
    write_report(d, o->out);
    fmt::print("wrote {0}/report.html, {0}/report.md and {0}/roofline.svg ({1} results)\n", o->out,
               d.points.size());
    code = kExitPassed;
  });
}

}  // namespace kforge::cli
