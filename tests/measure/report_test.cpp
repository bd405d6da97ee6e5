// Report files: the HTML is well formed (every element closed, in order), the SVG has one
// point per result, roofs come from the ceilings, and every input shape (suite, bench, tune)
// reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "kforge/error.hpp"
#include "kforge/report.hpp"

namespace kforge {
namespace {

nlohmann::json result(const std::string& backend, double gflops, double ai, bool passed = true) {
  return {{"problem", "gemm"},         {"kernel", "gemm." + backend},
          {"backend", backend},        {"dtype", "fp32"},
          {"sizes", {{"M", 64}, {"N", 64}, {"K", 64}}},
          {"disposition", passed ? "passed" : "incorrect"},
          {"median_s", 1e-3},          {"gflops", gflops},
          {"arithmetic_intensity", ai}, {"sol_fraction", 0.25},
          {"bound", "compute"},        {"speedup_vs_baseline", 1.5},
          {"sol_score", 0.6},          {"samples", {1e-3, 1.1e-3}}};
}

nlohmann::json ceilings_json(const std::string& backend) {
  const nlohmann::json bw = {{"read", 20.0}, {"write", 15.0}, {"copy", 14.0}, {"triad", 13.0}};
  return {{"backend", backend}, {"device", "test device"}, {"fingerprint", backend + " test"},
          {"bandwidth_GBs", 20.0}, {"llc_bandwidth_GBs", 80.0},
          {"all_threads", {{"dram_GBs", bw}, {"llc_GBs", bw},
                           {"GFLOPs", {{"fp64", 50.0}, {"fp32", 100.0}, {"fp16", 0.0},
                                       {"bf16", 200.0}, {"int8", 400.0}}}}}};
}

nlohmann::json suite_doc() {
  return {{"context", {{"cpu_model", "Test CPU"}, {"num_cpus", 2}, {"date", "today"},
                       {"ceilings", {ceilings_json("cpu"), ceilings_json("opencl")}}}},
          {"benchmarks", {result("cpu", 30, 40), result("opencl", 20, 40), result("cpu", 1, 2, false)}},
          {"summary", {{"fast_1.0", 0.5}, {"geomean_sol_fraction", 0.25}}}};
}

// Every opened element is closed, in order (void elements and self-closing ones excepted).
bool well_formed(const std::string& html, std::string& why) {
  static const std::set<std::string> kVoid = {"meta", "br", "img", "hr", "link", "input", "!DOCTYPE"};
  std::vector<std::string> open;
  const std::regex tag(R"(<(/?)([A-Za-z!][A-Za-z0-9]*)([^>]*)>)");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), tag); it != std::sregex_iterator(); ++it) {
    const bool closing = (*it)[1] == "/";
    const std::string name = (*it)[2], rest = (*it)[3];
    if (kVoid.count(name) || (!rest.empty() && rest.back() == '/')) continue;
    if (!closing) {
      open.push_back(name);
    } else if (open.empty() || open.back() != name) {
      why = "</" + name + "> closes " + (open.empty() ? std::string("nothing") : "<" + open.back() + ">");
      return false;
    } else {
      open.pop_back();
    }
  }
  if (!open.empty()) why = "<" + open.back() + "> never closed";
  return open.empty();
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(Report, SuiteDocumentGivesRoofsAndPoints) {
  const ReportData d = report_data(suite_doc());
  EXPECT_EQ(d.source, "suite");
  ASSERT_EQ(d.points.size(), 3u);
  ASSERT_EQ(d.roofs.size(), 2u);
  EXPECT_DOUBLE_EQ(d.roofs[0].dram_GBs, 20.0);
  EXPECT_EQ(d.roofs[0].peaks_GFLOPs.size(), 4u);  // fp16 0: not drawn
  EXPECT_FALSE(d.points[2].correct);
  ASSERT_TRUE(d.points[0].score);
  EXPECT_DOUBLE_EQ(*d.points[0].score, 0.6);
}

TEST(Report, SvgHasOnePointPerResult) {
  const std::string svg = roofline_svg(report_data(suite_doc()));
  EXPECT_EQ(count(svg, "<circle class=\"point\""), 3);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("cpu fp32"), std::string::npos);  // a labelled compute roof
  EXPECT_NE(svg.find("DRAM"), std::string::npos);      // the bandwidth slope
  std::string why;
  EXPECT_TRUE(well_formed(svg, why)) << why;
}

TEST(Report, HtmlIsWellFormedAndFilesAreWritten) {
  const ReportData d = report_data(suite_doc());
  const std::string html = report_html(d);
  std::string why;
  EXPECT_TRUE(well_formed(html, why)) << why;
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<circle class=\"point\""), 3);
  const auto dir = std::filesystem::temp_directory_path() / "kforge-report-test";
  std::filesystem::remove_all(dir);
  write_report(d, dir.string());
  for (const char* f : {"report.html", "report.md", "roofline.svg"})
    EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  std::ifstream md(dir / "report.md");
  std::stringstream text;
  text << md.rdbuf();
  EXPECT_NE(text.str().find("![roofline](roofline.svg)"), std::string::npos);
  EXPECT_EQ(count(text.str(), "| gemm.cpu"), 2);
}

// --roof-now results carry a second SOL; the tables show it, "-" where a result has none.
TEST(Report, ShowsTheSolAgainstTheRoofOfTheMinute) {
  nlohmann::json doc = suite_doc();
  doc["benchmarks"][0]["roof_now"] = {{"sol_fraction", 0.8125}, {"GBs", {{"read", 1.0}}}};
  const ReportData d = report_data(doc);
  ASSERT_TRUE(d.points[0].sol_now);
  EXPECT_DOUBLE_EQ(*d.points[0].sol_now, 0.8125);
  EXPECT_FALSE(d.points[1].sol_now);
  const std::string md = report_markdown(d, "roofline.svg");
  EXPECT_NE(md.find("| SOL now % |"), std::string::npos);
  EXPECT_NE(md.find("| 25.0 | 81.2 | compute |"), std::string::npos);
  EXPECT_NE(md.find("| 25.0 | - | compute |"), std::string::npos);
  EXPECT_NE(report_html(d).find("<td>81.2</td>"), std::string::npos);
}

TEST(Report, EscapesText) {
  nlohmann::json doc = result("cpu", 10, 10);
  doc["kernel"] = "<script>&";
  const std::string html = report_html(report_data(doc, nlohmann::json::array({ceilings_json("cpu")})));
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;&amp;"), std::string::npos);
}

TEST(Report, ReadsBenchAndTuneOutput) {
  EXPECT_EQ(result_entries(result("cpu", 1, 1)).size(), 1u);  // bench, one backend
  EXPECT_EQ(result_entries(nlohmann::json::array({result("cpu", 1, 1), result("opencl", 1, 1)})).size(), 2u);
  const nlohmann::json tune = nlohmann::json::array(
      {{{"backend", "cpu"}, {"evaluations", nlohmann::json::array()}, {"best", result("cpu", 1, 1)}}});
  const ReportData d = report_data(tune);
  EXPECT_EQ(d.source, "tune");
  EXPECT_EQ(d.points.size(), 1u);
  EXPECT_THROW((void)result_entries(nlohmann::json{{"hello", 1}}), UsageError);
}

TEST(Report, SiFormatting) {
  EXPECT_EQ(format_si(1234.5), "1.23k");
  EXPECT_EQ(format_si(0.01), "10.0m");
  EXPECT_EQ(format_si(100), "100");
}

}  // namespace
}  // namespace kforge
