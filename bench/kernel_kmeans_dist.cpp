// kernel_kmeans_dist: kernel k-means (RBF) to convergence over MPI ranks, with a 1D or a 2D
// distribution of the N x N kernel matrix, never stored anywhere (docs/kernel-kmeans.md, "Over
// MPI ranks"). Every word a rank receives is counted (one word = one matrix or vector entry,
// sent as a double) and printed beside the analysis' formula; rank 0 writes the final labels,
// which must equal a one-rank run's.
//
// Points are drawn by a counter-based generator (point i from (seed, i) alone), so a rank draws
// its own block of rows; blocks: the N points cut into P contiguous blocks, rank p owning block
// p (its points and their labels, and it computes their new labels).
//   1d  rank p computes the kernel rows of its block against all N points. Setup: every block
//       to every rank (X all-gathered). Per iteration: the labels all-gathered, then the cluster
//       partial sums (below).
//   2d  a Pr x Pc grid, rank p = (r, c) = (p / Pc, p % Pc): kernel block rows I_r (blocks
//       r Pc .. r Pc + Pc - 1) x columns J_c (blocks c Pr .. c Pr + Pr - 1). Setup: rank (r, c)
//       gets the points of I_r and J_c. Per iteration: the labels of J_c; the partial sums over
//       J_c of each row of I_r go to the row's owner (a reduce-scatter along the grid row,
//       summed in c order), who then holds S for its block as in 1d.
// Then, both: every rank all-gathers K partial cluster sums sum_{i in c} S_ic, K partial counts
// and its number of changed labels (2K + 1 words), finishes DIST and the argmin for its block.
// S and every sum are in double, so the association of the sums (which differs between
// distributions) moves results by ~1e-16 relative: labels equal the one-rank run's unless two
// clusters tie that closely.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kforge/rng.hpp"

namespace {

struct Layout {
  std::int64_t n = 0;
  int ranks = 1, pr = 1, pc = 1;
  bool two_d = false;
  [[nodiscard]] std::int64_t begin(int b) const { return n * b / ranks; }  // block b's first point
  [[nodiscard]] std::int64_t size(int b) const { return begin(b + 1) - begin(b); }
  // Whether rank q computes kernel rows of block b (1d: its own; 2d: its grid row's), and
  // columns of block b (1d: all; 2d: its grid column's).
  [[nodiscard]] bool row_block(int q, int b) const { return two_d ? b / pc == q / pc : b == q; }
  [[nodiscard]] bool col_block(int q, int b) const { return !two_d || b / pr == q % pc; }
};

// Every rank sends its block (`width` words per point) to each rank q != itself with
// needs(q, own block); returns the blocks this rank needs (others empty, its own included),
// and adds the words received to `words`.
std::vector<std::vector<double>> share_blocks(const Layout& l, int rank, const std::vector<double>& mine, int width,
                                              const std::function<bool(int, int)>& needs, std::int64_t& words) {
  std::vector<int> sc(l.ranks, 0), sd(l.ranks, 0), rc(l.ranks, 0), rd(l.ranks, 0);
  int total = 0;
  for (int q = 0; q < l.ranks; ++q) {
    if (q != rank && needs(q, rank)) sc[q] = static_cast<int>(mine.size());
    if (q != rank && needs(rank, q)) rc[q] = static_cast<int>(l.size(q) * width);
    rd[q] = total, total += rc[q];
  }
  std::vector<double> in(static_cast<std::size_t>(total));
  MPI_Alltoallv(mine.data(), sc.data(), sd.data(), MPI_DOUBLE, in.data(), rc.data(), rd.data(), MPI_DOUBLE,
                MPI_COMM_WORLD);
  words += total;
  std::vector<std::vector<double>> blocks(l.ranks);
  for (int q = 0; q < l.ranks; ++q)
    if (rc[q] > 0) blocks[q].assign(in.begin() + rd[q], in.begin() + rd[q] + rc[q]);
  blocks[rank] = mine;
  return blocks;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  CLI::App app{"kernel k-means over MPI ranks, 1D or 2D distribution, words counted"};
  std::int64_t n = 2000, d = 3, k = 8;
  int max_iters = 100, pr = 0;
  double gamma = 0.1;
  std::uint64_t seed = 1;
  std::string dist = "1d", out_path;
  app.add_option("--n", n, "points");
  app.add_option("--d", d, "dimensions");
  app.add_option("--k", k, "clusters");
  app.add_option("--gamma", gamma, "RBF kernel exp(-gamma |x-y|^2)");
  app.add_option("--seed", seed, "seed of the points and initial labels");
  app.add_option("--dist", dist, "1d or 2d")->check(CLI::IsMember({"1d", "2d"}));
  app.add_option("--pr", pr, "2d: grid rows (0: the largest divisor of the ranks up to their square root)");
  app.add_option("--max-iters", max_iters, "stop after this many iterations");
  app.add_option("--out", out_path, "rank 0 writes the final labels here (raw float32)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    MPI_Finalize();
    return code == 0 ? 0 : 2;
  }
  Layout l{n, ranks, 1, ranks, dist == "2d"};
  if (l.two_d) {
    if (pr == 0)
      for (int a = 1; a * a <= ranks; ++a)
        if (ranks % a == 0) pr = a;
    if (pr < 1 || ranks % pr != 0 || n < ranks) {
      if (rank == 0) fmt::print(stderr, "kernel_kmeans_dist: --pr {} must divide the {} ranks, and N >= ranks\n", pr, ranks);
      MPI_Finalize();
      return 2;
    }
    l.pr = pr, l.pc = ranks / pr;
  }
  if (k < 1 || n < k || d < 1) {
    if (rank == 0) fmt::print(stderr, "kernel_kmeans_dist: need 1 <= K <= N and D >= 1\n");
    MPI_Finalize();
    return 2;
  }

  // This rank's block: K blobs (centres uniform in [-4, 4]^D, points within +-1.7 of theirs)
  // and random initial labels with every cluster used, all from (seed, index).
  const std::int64_t b0 = l.begin(rank), nb = l.size(rank);
  std::vector<double> my_x(static_cast<std::size_t>(nb * d)), my_l(static_cast<std::size_t>(nb));
  for (std::int64_t i = b0; i < b0 + nb; ++i) {
    const auto c = static_cast<std::int64_t>(kforge::random_bits(seed, 1, i) % k);
    for (std::int64_t e = 0; e < d; ++e)
      my_x[(i - b0) * d + e] = 8 * kforge::random_unit(seed, 2, c * d + e) - 4 +
                               3.4 * (kforge::random_unit(seed, 3, i * d + e) - 0.5);
    my_l[i - b0] = static_cast<double>(kforge::random_bits(seed, 4, i) % k);
  }
  for (std::int64_t c = 0; c < k; ++c)  // point c N / K starts in cluster c
    if (c * n / k >= b0 && c * n / k < b0 + nb) my_l[c * n / k - b0] = static_cast<double>(c);

  // Setup: the points of the kernel rows and columns this rank computes.
  std::int64_t setup_words = 0, iter_words = 0;
  const auto xb = share_blocks(
      l, rank, my_x, static_cast<int>(d), [&](int q, int b) { return l.row_block(q, b) || l.col_block(q, b); },
      setup_words);
  std::vector<int> row_blocks, col_blocks;
  for (int b = 0; b < ranks; ++b) {
    if (l.row_block(rank, b)) row_blocks.push_back(b);
    if (l.col_block(rank, b)) col_blocks.push_back(b);
  }

  std::vector<std::int64_t> changes;
  bool converged = false;
  int it = 0;
  for (; it < max_iters && !converged; ++it) {
    // The labels of the columns.
    const auto lb = share_blocks(l, rank, my_l, 1, [&](int q, int b) { return l.col_block(q, b); }, iter_words);
    // Partial S over this rank's columns for every row of its row blocks, in double.
    std::vector<std::vector<double>> sp(ranks);
    for (int rb : row_blocks) {
      sp[rb].assign(static_cast<std::size_t>(l.size(rb) * k), 0.0);
      for (std::int64_t i = 0; i < l.size(rb); ++i) {
        const double* xi = &xb[rb][i * d];
        for (int cb : col_blocks)
          for (std::int64_t j = 0; j < l.size(cb); ++j) {
            const double* xj = &xb[cb][j * d];
            double d2 = 0;
            for (std::int64_t e = 0; e < d; ++e) d2 += (xi[e] - xj[e]) * (xi[e] - xj[e]);
            sp[rb][i * k + static_cast<std::int64_t>(lb[cb][j])] += std::exp(-gamma * d2);
          }
      }
    }
    // 2d: each row block's partials to its owner, summed in grid-column order (1d: all local).
    std::vector<double> S = sp[rank];
    if (l.two_d) {
      std::vector<int> sc(ranks, 0), sd(ranks, 0), rc(ranks, 0), rd(ranks, 0);
      std::vector<double> send;
      for (int rb : row_blocks)
        if (rb != rank) sd[rb] = static_cast<int>(send.size()), sc[rb] = static_cast<int>(sp[rb].size()),
                        send.insert(send.end(), sp[rb].begin(), sp[rb].end());
      int total = 0;
      for (int q = 0; q < ranks; ++q)
        if (q != rank && l.row_block(q, rank)) rc[q] = static_cast<int>(nb * k), rd[q] = total, total += rc[q];
      std::vector<double> in(static_cast<std::size_t>(total));
      MPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_DOUBLE, in.data(), rc.data(), rd.data(), MPI_DOUBLE,
                    MPI_COMM_WORLD);
      iter_words += total;
      std::fill(S.begin(), S.end(), 0.0);
      for (int q = 0; q < ranks; ++q) {  // q = (r, 0), (r, 1), ...: the grid row in order
        if (!l.row_block(q, rank)) continue;
        const double* part = q == rank ? sp[rank].data() : in.data() + rd[q];
        for (std::int64_t e = 0; e < nb * k; ++e) S[e] += part[e];
      }
    }
    // Cluster partial sums, counts, and last iteration's changes: 2K + 1 words from each rank.
    std::vector<double> mine(static_cast<std::size_t>(2 * k + 1), 0.0), all(mine.size() * ranks);
    for (std::int64_t i = 0; i < nb; ++i) {
      const auto c = static_cast<std::int64_t>(my_l[i]);
      mine[c] += S[i * k + c], mine[k + c] += 1;
    }
    std::vector<double> next(my_l.size());
    std::vector<double> z(static_cast<std::size_t>(k), 0.0), cnt(z.size(), 0.0);
    MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), static_cast<int>(mine.size()),
                  MPI_DOUBLE, MPI_COMM_WORLD);
    iter_words += static_cast<std::int64_t>(mine.size()) * (ranks - 1);
    for (int q = 0; q < ranks; ++q)
      for (std::int64_t c = 0; c < k; ++c) z[c] += all[q * mine.size() + c], cnt[c] += all[q * mine.size() + k + c];
    double changed = 0;
    for (std::int64_t i = 0; i < nb; ++i) {
      std::int64_t best = 0;
      double best_d = 0;
      for (std::int64_t c = 0; c < k; ++c) {
        const double dist_ic = cnt[c] == 0 ? HUGE_VAL : 1 - 2 * S[i * k + c] / cnt[c] + z[c] / (cnt[c] * cnt[c]);
        if (c == 0 || dist_ic < best_d) best = c, best_d = dist_ic;
      }
      next[i] = static_cast<double>(best);
      changed += next[i] != my_l[i];
    }
    my_l = next;
    // Whether any rank's labels changed: one more word from each (counted).
    std::vector<double> flags(ranks);
    MPI_Allgather(&changed, 1, MPI_DOUBLE, flags.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
    iter_words += ranks - 1;
    double total_changed = 0;
    for (double f : flags) total_changed += f;
    changes.push_back(static_cast<std::int64_t>(total_changed));
    converged = total_changed == 0;
  }

  // The analysis, per rank: what this rank must receive (docs/kernel-kmeans.md).
  std::int64_t need_x = 0, need_labels = 0, need_s = 0;
  for (int b = 0; b < ranks; ++b) {
    if (b == rank) continue;
    if (l.row_block(rank, b) || l.col_block(rank, b)) need_x += l.size(b) * d;
    if (l.col_block(rank, b)) need_labels += l.size(b);
  }
  if (l.two_d) need_s = (l.pc - 1) * nb * k;
  const std::int64_t per_iter = need_labels + need_s + (2 * k + 1) * (ranks - 1) + (ranks - 1);

  // Rank 0 gathers the labels and every rank's counts (outside the counted words).
  std::vector<int> counts(ranks), displs(ranks);
  for (int q = 0; q < ranks; ++q) counts[q] = static_cast<int>(l.size(q)), displs[q] = static_cast<int>(l.begin(q));
  std::vector<double> labels(rank == 0 ? static_cast<std::size_t>(n) : 0);
  MPI_Gatherv(my_l.data(), static_cast<int>(nb), MPI_DOUBLE, labels.data(), counts.data(), displs.data(), MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  const std::int64_t mine_counts[4] = {setup_words, need_x, iter_words, per_iter * it};
  std::vector<std::int64_t> every(static_cast<std::size_t>(4 * ranks));
  MPI_Gather(mine_counts, 4, MPI_INT64_T, every.data(), 4, MPI_INT64_T, 0, MPI_COMM_WORLD);
  int code = 0;
  if (rank == 0) {
    nlohmann::json per_rank = nlohmann::json::array();
    for (int q = 0; q < ranks; ++q) {
      const std::int64_t* v = &every[4 * q];
      per_rank.push_back({{"rank", q}, {"setup_words", v[0]}, {"setup_words_formula", v[1]},
                          {"iteration_words", v[2]}, {"iteration_words_formula", v[3]}});
      if (v[0] != v[1] || v[2] != v[3]) code = 1;
    }
    if (!out_path.empty()) {
      std::vector<float> f(labels.begin(), labels.end());
      std::ofstream(out_path, std::ios::binary).write(reinterpret_cast<const char*>(f.data()),
                                                      static_cast<std::streamsize>(f.size() * 4));
    }
    const nlohmann::json out{{"n", n}, {"d", d}, {"k", k}, {"gamma", gamma}, {"ranks", ranks}, {"dist", dist},
                             {"grid", {l.pr, l.pc}}, {"iterations", it}, {"converged", converged},
                             {"changes", changes}, {"words", per_rank}, {"words_match_formula", code == 0}};
    fmt::print("{}\n", out.dump());
  }
  MPI_Finalize();
  return code;
}
