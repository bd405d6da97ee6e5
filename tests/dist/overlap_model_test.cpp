// The partition and the timeline model of the overlapped multi-rank GEMMs
// (src/dist/overlap_model.hpp): parts cover their range exactly, the emulated link serializes a
// rank's messages, and the chosen split follows what the rates say.
#include <gtest/gtest.h>

#include "dist/overlap_model.hpp"

namespace kforge::dist::overlap {
namespace {

TEST(OverlapModel, PartsAndChunksCoverTheirRangeExactly) {
  for (std::int64_t n : {0, 1, 2, 7, 37, 1000})
    for (int parts : {1, 2, 3, 5}) {
      std::int64_t next = 0;
      for (int i = 0; i < parts; ++i) {
        const Part p = part(n, parts, i);
        EXPECT_EQ(p.begin, next) << n << " " << parts << " " << i;
        EXPECT_GE(p.size, n / parts);
        EXPECT_LE(p.size, n / parts + 1);
        std::int64_t rows = p.begin;
        for (int s = 0; s < 4; ++s) {
          const Part c = chunk(p, 4, s);
          EXPECT_EQ(c.begin, rows);
          rows += c.size;
        }
        EXPECT_EQ(rows, p.begin + p.size);
        next = p.begin + p.size;
      }
      EXPECT_EQ(next, n);
    }
}

TEST(OverlapModel, EmulatedLinkSendsOneMessageAtATime) {
  Link link{1e-6, 1e9};
  EXPECT_DOUBLE_EQ(link.send(0, 1000), 1e-6 + 1e-6);              // 1000 bytes at 1 GB/s, then the latency
  EXPECT_DOUBLE_EQ(link.send(0, 1000), 2e-6 + 1e-6);              // waits for the first to leave
  EXPECT_DOUBLE_EQ(link.send(10e-6, 2000), 10e-6 + 2e-6 + 1e-6);  // an idle link leaves at once
  Link none;
  EXPECT_FALSE(none.emulated());
  EXPECT_EQ(none.send(5, 1e9), 0);
}

TEST(OverlapModel, SplitFollowsTheRates) {
  Rates r;
  r.flops_per_s = 20e9;
  // A link far faster than the compute: nothing to hide, one chunk (fewer calls) is best.
  r.bytes_per_s = 1e15;
  r.latency_s = 0;
  EXPECT_EQ(choose_chunks("ag_gemm", 2, 1024, 1024, 1024, r), 1);
  // A link slower than the local compute can hide: chunks let the compute start early.
  r.bytes_per_s = 0.05e9;
  r.latency_s = 5e-6;
  for (const char* p : {"ag_gemm", "gemm_rs"}) {
    const int c = choose_chunks(p, 2, 1024, 1024, 1024, r);
    EXPECT_GT(c, 1) << p;
    EXPECT_LT(predicted_overlapped_s(p, 2, c, 1024, 1024, 1024, r), predicted_overlapped_s(p, 2, 1, 1024, 1024, 1024, r))
        << p;
  }
  // Never more chunks than a block has rows.
  EXPECT_LE(choose_chunks("gemm_rs", 4, 6, 1024, 1024, r), 1);
}

}  // namespace
}  // namespace kforge::dist::overlap
