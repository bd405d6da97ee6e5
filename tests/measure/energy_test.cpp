// Energy beside time: the powercap reader on a fake tree (top-level zones only, a counter that
// wraps around), the model where no counter is readable, and `kforge tune --objective` saying
// which of the two its figures are, never both.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "kforge/energy.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

void zone(const fs::path& root, const std::string& id, const std::string& name, std::uint64_t uj, std::uint64_t max_uj) {
  fs::create_directories(root / id);
  std::ofstream(root / id / "name") << name << "\n";
  std::ofstream(root / id / "energy_uj") << uj << "\n";
  std::ofstream(root / id / "max_energy_range_uj") << max_uj << "\n";
}

void set_counter(const fs::path& root, const std::string& id, std::uint64_t uj) {
  std::ofstream(root / id / "energy_uj") << uj << "\n";
}

TEST(Energy, FakePowercapTreeIsMeasuredWithWrapAround) {
  const fs::path root = test::scratch_dir("kforge-energy", "tree");
  const std::uint64_t max = 262143328850;  // a real package zone's range
  zone(root, "intel-rapl:0", "package-0", 1000, max);
  zone(root, "intel-rapl:0:0", "core", 500, max);            // a part of package-0: not counted again
  zone(root, "intel-rapl-mmio:0", "package-0", 1000, max);   // the MMIO copy: not counted again
  zone(root, "intel-rapl:1", "package-1", max - 1'000'000, max);
  const auto reader = EnergyReader::open(root.string());
  ASSERT_TRUE(reader);
  EXPECT_NE(reader->describe().find("package-0"), std::string::npos) << reader->describe();
  EXPECT_NE(reader->describe().find("package-1"), std::string::npos) << reader->describe();
  EXPECT_EQ(reader->describe().find("core"), std::string::npos) << reader->describe();
  const auto before = reader->read();
  ASSERT_EQ(before.size(), 2u);
  EXPECT_EQ(before[0], 1000u);
  set_counter(root, "intel-rapl:0", 2'501'000);  // +2.5 J
  set_counter(root, "intel-rapl:1", 500'000);    // wrapped: +1.0 J to the top, +0.5 J after
  set_counter(root, "intel-rapl:0:0", 99'000'000);
  EXPECT_NEAR(reader->joules_between(before, reader->read()), 2.5 + 1.5, 1e-9);
}

TEST(Energy, NoReadableCounterMeansNoReader) {
  const fs::path root = test::scratch_dir("kforge-energy", "empty");
  EXPECT_FALSE(EnergyReader::open(root.string()));
  fs::create_directories(root / "intel-rapl:0");  // a zone without energy_uj (unreadable)
  EXPECT_FALSE(EnergyReader::open(root.string()));
  EXPECT_FALSE(EnergyReader::open((root / "absent").string()));
}

TEST(Energy, TheModelAddsStaticPowerAndWork) {
  const EnergyModel m{2.0, 10.0, 100.0};
  EXPECT_DOUBLE_EQ(m.joules(1.0, 0, 0, 3), 6.0);
  EXPECT_DOUBLE_EQ(m.joules(0, 1e12, 1e10, 1), 10.0 + 1.0);
  EXPECT_NE(cpu_energy_model().describe().find("assumptions"), std::string::npos);
}

// The same small tune with the fake tree (measured) and with an empty one (model): every
// evaluation and the winner carry the label, and the text output says which.
TEST(Energy, TuneObjectiveLabelsMeasuredOrModel) {
  const fs::path tree = test::scratch_dir("kforge-energy", "tune-tree"), none = test::scratch_dir("kforge-energy", "tune-none");
  zone(tree, "intel-rapl:0", "package-0", 1000, 262143328850);
  // Its own store, so no other test's stored results are resumed.
  const std::string tune = "tune softmax --backend cpu --size M=33,N=70 --budget 2 --threads 1 --strategy random "
                           "--objective energy --db '" + (none / "results.db").string() + "'";
  for (const auto& [root, source] : {std::pair{tree, std::string("measured")}, std::pair{none, std::string("model")}}) {
    setenv("KFORGE_POWERCAP_ROOT", root.c_str(), 1);
    auto r = test::kforge_cli(tune + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = test::parse_or_fail(r);
    ASSERT_EQ(j.size(), 1u);
    EXPECT_EQ(j[0]["objective"], "energy");
    for (const auto& e : j[0]["evaluations"])
      if (e["disposition"] == "passed") EXPECT_EQ(e["energy"]["source"], source) << e["energy"].dump();
    EXPECT_EQ(j[0]["best"]["energy"]["source"], source);
    r = test::kforge_cli(tune);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("minimizing energy (energy " + source), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("J per run"), std::string::npos) << r.out;
  }
  unsetenv("KFORGE_POWERCAP_ROOT");
  const auto r = test::kforge_cli("tune --replay " + test::data_path("tiny_kt_cache.json") + " --objective energy");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("times only"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kforge
