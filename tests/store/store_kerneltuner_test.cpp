// Kernel Tuner cache files: import keeps every configuration with its time or failure, export
// writes a file Kernel Tuner reads, and export(import(export(x))) == export(x).
#include <gtest/gtest.h>

#include <fstream>

#include "store_fixtures.hpp"

namespace kforge {
namespace {

using nlohmann::json;
using test::fresh_db;

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = fresh_db(name).string() + ".json";
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(KernelTuner, ImportKeepsEveryConfigurationWithItsTimeOrFailure) {
  Store s(fresh_db("kt-import"));
  const auto r = import_kerneltuner(s, test::data_path("kerneltuner_small.json"), "kforge db import");
  EXPECT_EQ(r.entries, 6u);
  EXPECT_EQ(r.failed, 3u);
  EXPECT_EQ(r.kernel, "convolution_kernel");
  EXPECT_EQ(r.device, "NVIDIA RTX A4000");
  const auto es = s.evaluations();
  ASSERT_EQ(es.size(), 6u);
  // In file order, each with its parameters, time in seconds, or failure.
  EXPECT_EQ(es[0].params(), (json{{"block_size_x", 16}, {"block_size_y", 1}, {"tile_size_x", 1}, {"use_shmem", 0}}));
  EXPECT_EQ(es[0].disposition, "passed");
  EXPECT_NEAR(*es[0].median_s, 5.900492995977402e-3, 1e-15);
  ASSERT_EQ(es[0].samples.size(), 3u);
  EXPECT_NEAR(es[0].samples[1], 5.89e-3, 1e-15);
  EXPECT_NEAR(es[0].compile_s, 0.892914007185027, 1e-12);
  EXPECT_NEAR(*es[2].gflops, 1234.5, 1e-9);
  EXPECT_EQ(es[3].disposition, "crashed");
  EXPECT_EQ(es[4].disposition, "compile_error");
  EXPECT_EQ(es[5].disposition, "invalid_config");
  EXPECT_NE(es[5].error.find("InvalidConfig"), std::string::npos);
  EXPECT_FALSE(es[5].median_s);
  // Filed as a recorded space of that device, sizes named as Kernel Tuner's grid names them.
  EXPECT_EQ(es[0].key.backend, "recorded");
  EXPECT_EQ(es[0].key.problem, "convolution_kernel");
  EXPECT_EQ(es[0].sizes(), (json{{"x", 4096}, {"y", 4096}}));
  EXPECT_EQ(es[0].key.fingerprint, machine_fingerprint("recorded", "NVIDIA RTX A4000"));
  // Importing the same file again replaces, never duplicates.
  (void)import_kerneltuner(s, test::data_path("kerneltuner_small.json"), "again");
  EXPECT_EQ(s.evaluations().size(), 6u);
}

TEST(KernelTuner, ExportOfAnImportHasTheOriginalEntries) {
  Store s(fresh_db("kt-reexport"));
  (void)import_kerneltuner(s, test::data_path("kerneltuner_small.json"), "import");
  const json original = json::parse(test::data_file("kerneltuner_small.json"));
  const json exported = json::parse(export_kerneltuner(s, s.evaluations()));
  EXPECT_EQ(exported, original);
}

TEST(KernelTuner, ExportImportExportIsAFixedPointForKforgesOwnResults) {
  const auto path = fresh_db("kt-native");
  Store s(path);
  const auto run = s.begin_run("tune", test::kFingerprint);
  const std::vector<std::pair<ParamValues, Disposition>> configs = {
      {{{"MR", 4}, {"NV", 1}}, Disposition::passed},
      {{{"MR", 8}, {"NV", 1}}, Disposition::passed},
      {{{"MR", 6}, {"NV", 3}}, Disposition::incorrect},
      {{{"MR", 14}, {"NV", 4}}, Disposition::invalid_config},
      {{{"MR", 12}, {"NV", 2}}, Disposition::compile_error}};
  double t = 1e-4;
  for (const auto& [p, d] : configs) {
    const EvalRequest req = test::gemm_request(p);
    s.record(run, StoredEvaluation::from(req, test::fake_result(req, t += 1e-5, d), test::kFingerprint));
  }
  const std::string first = export_kerneltuner(s, s.evaluations());
  const json doc = json::parse(first);
  // A Kernel Tuner cache: every parameter in tune_params_keys, times in ms, failures by name.
  EXPECT_EQ(doc.at("kernel_name"), "gemm.cpu");
  EXPECT_EQ(doc.at("problem_size"), (json{64, 48, 32})) << "M, N, K in the problem's order";
  EXPECT_EQ(doc.at("tune_params_keys").size(), test::gemm_request().kernel.params.size());
  EXPECT_EQ(doc.at("cache").size(), configs.size());
  int failed = 0;
  for (const auto& [key, entry] : doc.at("cache").items()) {
    std::string expect_key;
    for (const auto& k : doc.at("tune_params_keys"))
      expect_key += (expect_key.empty() ? "" : ",") + entry.at(k.get<std::string>()).dump();
    EXPECT_EQ(key, expect_key);
    for (const char* f : {"time", "compile_time", "verification_time", "benchmark_time", "strategy_time",
                          "framework_time", "timestamp"})
      EXPECT_TRUE(entry.contains(f)) << f << " missing in " << entry.dump();
    if (entry.at("time").is_string()) ++failed;
  }
  EXPECT_EQ(failed, 3);
  bool found = false;
  for (const auto& [key, entry] : doc.at("cache").items())
    if (entry.at("MR") == 4 && entry.at("NV") == 1) {
      found = true;
      EXPECT_NEAR(entry.at("time").get<double>(), 0.11, 1e-12) << "the median, in milliseconds";
      EXPECT_EQ(entry.at("times").size(), 3u);
    }
  EXPECT_TRUE(found);

  // Into a second database and out again: the same text.
  const auto file = write_temp("kt-native-export", first);
  Store s2(fresh_db("kt-native-2"));
  (void)import_kerneltuner(s2, file, "import");
  const auto back = s2.evaluations();
  ASSERT_EQ(back.size(), configs.size());
  const auto orig = s.evaluations();
  for (std::size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].key.problem, "gemm") << "the kforge header restores the key";
    EXPECT_EQ(back[i].key.params, orig[i].key.params);
    EXPECT_EQ(back[i].key.sizes, orig[i].key.sizes);
    EXPECT_EQ(back[i].key.source_hash, orig[i].key.source_hash);
    EXPECT_EQ(back[i].key.fingerprint, orig[i].key.fingerprint);
    EXPECT_EQ(back[i].disposition, orig[i].disposition) << "incorrect stays incorrect";
  }
  EXPECT_EQ(export_kerneltuner(s2, back), first);
}

TEST(KernelTuner, AFileCutShortByAKilledTunerStillImports) {
  const std::string text = test::data_file("kerneltuner_small.json");
  // Kernel Tuner appends entries as it goes; killed, the file ends mid-entry with no braces.
  const auto cut = text.find("\"64,4,1,0\"") + 30;
  const auto file = write_temp("kt-cut", text.substr(0, cut));
  Store s(fresh_db("kt-cut"));
  const auto r = import_kerneltuner(s, file, "import");
  EXPECT_EQ(r.entries, 4u) << "the whole entries before the cut";
  // And one closed after a trailing comma, as Kernel Tuner leaves it between entries.
  const auto comma = text.find("\"64,4,1,0\"");
  const auto file2 = write_temp("kt-comma", text.substr(0, comma));
  EXPECT_EQ(import_kerneltuner(s, file2, "import").entries, 4u);
}

TEST(KernelTuner, ExportRefusesASelectionOfSeveralSpacesAndSaysHowToNarrowIt) {
  Store s(fresh_db("kt-mixed"));
  (void)import_kerneltuner(s, test::data_path("kerneltuner_small.json"), "import");
  const EvalRequest req = test::gemm_request();
  s.record(s.begin_run("t", test::kFingerprint),
           StoredEvaluation::from(req, test::fake_result(req, 1e-4), test::kFingerprint));
  try {
    (void)export_kerneltuner(s, s.evaluations());
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("--run"), std::string::npos) << e.what();
  }
  StoreQuery q;
  q.backend = "recorded";
  EXPECT_NO_THROW((void)export_kerneltuner(s, s.evaluations(q)));
}

TEST(KernelTuner, ARealRecordedSpaceRoundTrips) {
  const std::string real = "/work/shared/spaces/convolution_a4000.json";
  if (!std::filesystem::exists(real)) GTEST_SKIP() << real << " is not on this machine";
  Store s(fresh_db("kt-real"));
  const auto r = import_kerneltuner(s, real, "import");
  EXPECT_EQ(r.entries, 4362u);
  EXPECT_EQ(r.failed, 161u);
  std::ifstream in(real);
  const json original = json::parse(in);
  EXPECT_EQ(json::parse(export_kerneltuner(s, s.evaluations())), original);
}

}  // namespace
}  // namespace kforge
