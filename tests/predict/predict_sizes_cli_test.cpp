// `kforge predict PROBLEM --train --space A,B,...` across sizes and `predict PROBLEM --sizes S
// --best` at a size never tuned, end to end through the binary, on recorded spaces that follow
// a law where softmax's best ROWS grows with M; and the clear exit 2 on a record without sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "predict/synthetic_law.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

const std::vector<int> kRows{1, 2, 4, 8, 16, 64}, kSplit{1, 4};

// Best log2(ROWS) = log2(M / 256): 1 row per block at M = 256, 64 at M = 16384.
double law_ms(double m, double rows, double split) {
  return m / 1000 * (1 + 0.3 * std::pow(std::log2(rows) - std::log2(m / 256), 2)) * (split == 4 ? 1.0 : 1.1);
}

nlohmann::json record(std::int64_t m, bool with_sizes) {
  nlohmann::json j{{"device_name", "Synthetic CPU"}, {"kernel_name", "softmax.cpu"}, {"objective", "time"},
                   {"tune_params_keys", {"ROWS", "SPLIT"}}, {"tune_params", {{"ROWS", kRows}, {"SPLIT", kSplit}}}};
  if (with_sizes) j["sizes"] = {{"M", m}, {"N", 1024}};
  nlohmann::json cache = nlohmann::json::object();
  for (int r : kRows)
    for (int s : kSplit)
      cache[std::to_string(r) + "," + std::to_string(s)] = {{"ROWS", r}, {"SPLIT", s}, {"time", law_ms(m, r, s)}};
  j["cache"] = cache;
  return j;
}

TEST(PredictSizesCli, TrainAcrossSizesAndPickTheBestAtAnUntunedSize) {
  if (!test::kHaveXgboost) GTEST_SKIP() << "built without XGBoost";
  const auto dir = test::scratch_dir("kforge-predict-sizes", "train");
  std::string spaces;
  for (std::int64_t m = 256; m <= 16384; m *= 2) {
    const std::string path = (dir / ("softmax_" + std::to_string(m) + ".json")).string();
    std::ofstream(path) << record(m, true).dump();
    spaces += (spaces.empty() ? "" : ",") + path;
  }
  const std::string model = (dir / "model.json").string();
  auto r = test::kforge_cli("predict softmax --train --space '" + spaces + "' --out '" + model + "' --trees 150 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json t = test::parse_or_fail(r);
  EXPECT_EQ(t["info"]["source"]["spaces"].size(), 7u);
  EXPECT_EQ(t["info"]["rows"].get<int>(), 7 * 12);
  // M = 1400 was never tuned: log2(1400 / 256) = 2.45, so ROWS = 4 is the law's best; and
  // M = 5000 (4.29): ROWS = 16. SPLIT = 4 wins everywhere.
  for (const auto& [m, rows] : std::vector<std::pair<int, std::string>>{{1400, "ROWS=4,"}, {5000, "ROWS=16,"}}) {
    r = test::kforge_cli("predict softmax --sizes M=" + std::to_string(m) + ",N=1024 --best --model '" + model + "' --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json b = test::parse_or_fail(r);
    ASSERT_EQ(b.size(), 1u) << b.dump();
    const std::string config = b[0]["config"];
    EXPECT_NE(config.find(rows), std::string::npos) << "M=" << m << ": " << config;
    EXPECT_NE(config.find("SPLIT=4"), std::string::npos) << config;
  }
  // --best without a PROBLEM: exit 2 saying what it needs.
  r = test::kforge_cli("predict --best --model '" + model + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--best needs a PROBLEM"), std::string::npos) << r.err;
  // Human output too.
  r = test::kforge_cli("predict softmax --sizes M=1400,N=1024 --best --model '" + model + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ROWS=4"), std::string::npos) << r.out;
}

TEST(PredictSizesCli, ARecordWithoutSizesOrAMissingModelExits2) {
  const auto dir = test::scratch_dir("kforge-predict-sizes", "bad");
  const std::string a = (dir / "a.json").string(), b = (dir / "b.json").string(), out = (dir / "m.json").string();
  std::ofstream(a) << record(256, false).dump();
  std::ofstream(b) << record(512, true).dump();
  auto r = test::kforge_cli("predict softmax --train --space '" + a + "," + b + "' --out '" + out + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not say its sizes"), std::string::npos) << r.err;
  r = test::kforge_cli("predict --best --model '" + out + "'");  // no model was written
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(out), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kforge
