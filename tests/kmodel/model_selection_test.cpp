// Model selection around the solver: the lambda grid, deterministic stratified folds, CSV input
// and its errors, cross-validation end to end, and `kforge kmodel` at the command line (exit 2
// with the cause on bad input).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/kmodel.hpp"
#include "kmodel/kmodel_synthetic.hpp"
#include "test_util.hpp"

namespace kforge::kmodel {
namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const auto path = kforge::test::scratch_dir("kforge-kmodel", name) / "data.csv";
  std::ofstream(path) << text;
  return path.string();
}

std::string csv_of(const Dataset& d, bool zero_one) {
  std::string s = "x1";
  for (Eigen::Index j = 1; j < d.x.cols(); ++j) s += ",x" + std::to_string(j + 1);
  s += ",label\n";
  for (Eigen::Index i = 0; i < d.x.rows(); ++i) {
    for (Eigen::Index j = 0; j < d.x.cols(); ++j) s += std::to_string(d.x(i, j)) + ",";
    s += std::to_string(static_cast<int>(zero_one && d.y[i] < 0 ? 0 : d.y[i])) + "\n";
  }
  return s;
}

template <typename F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

TEST(KernelModelGrid, LogGridFromLargestAndLists) {
  const auto g = parse_lambdas("1e-4:1e1:20");
  ASSERT_EQ(g.size(), 20u);
  EXPECT_NEAR(g.front(), 10, 1e-12);
  EXPECT_NEAR(g.back(), 1e-4, 1e-18);
  for (std::size_t i = 1; i < g.size(); ++i) EXPECT_NEAR(g[i - 1] / g[i], std::pow(1e5, 1.0 / 19), 1e-9);
  EXPECT_EQ(parse_lambdas("0.01,1,0.1"), (std::vector<double>{1, 0.1, 0.01}));
  for (const char* bad : {"1e-4:1e1", "0:1:5", "1:x:5", "1:2:0", "a,b", "-1", ""})
    EXPECT_NE(usage_error_of([&] { (void)parse_lambdas(bad); }).find("--lambdas"), std::string::npos) << bad;
}

TEST(KernelModelFolds, DeterministicStratifiedAndBalanced) {
  const Dataset d = test::blobs(/*n=*/101, /*d=*/2, 1, 0.3, /*seed=*/9);
  const auto a = stratified_folds(d.y, 5, 42), b = stratified_folds(d.y, 5, 42), c = stratified_folds(d.y, 5, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<int> size(5, 0), pos(5, 0);
  for (std::size_t i = 0; i < a.size(); ++i) {
    ++size[a[i]];
    pos[a[i]] += d.y[static_cast<Eigen::Index>(i)] > 0;
  }
  EXPECT_LE(*std::max_element(size.begin(), size.end()) - *std::min_element(size.begin(), size.end()), 1);
  for (int f = 0; f < 5; ++f) {
    EXPECT_GT(pos[f], 0);
    EXPECT_LT(pos[f], size[f]);
  }
  Eigen::VectorXd few = Eigen::VectorXd::Ones(11);
  few[0] = few[1] = -1;
  EXPECT_NE(usage_error_of([&] { (void)stratified_folds(few, 5, 1); }).find("only 2 rows"), std::string::npos);
}

TEST(KernelModelData, CsvReadsZeroOneLabelsAndNamesEachError) {
  const Dataset d = test::blobs(/*n=*/23, /*d=*/3, 1, 0.2, /*seed=*/4);
  const Dataset back = read_csv(write_file("ok", csv_of(d, /*zero_one=*/true)));
  EXPECT_EQ(back.y, d.y);
  EXPECT_LE((back.x - d.x).lpNorm<Eigen::Infinity>(), 1e-6);  // std::to_string's 6 decimals
  const std::pair<const char*, const char*> bad[] = {
      {"1,2,1\n3,x,-1\n", "line 2, field 2"},
      {"1,2,1\n3,nan,-1\n", "'nan' is not a finite number"},
      {"1,2,1\n3,-1\n", "line 2 has 2 fields"},
      {"1,2,1\n3,4,2\n", "label 2"},
      {"1,2,1\n3,4,1\n", "only one class"},
      {"a,b\n", "no rows"},
      {"1\n2\n", "one column"}};
  for (const auto& [text, why] : bad)
    EXPECT_NE(usage_error_of([&] { (void)read_csv(write_file("bad", text)); }).find(why), std::string::npos) << why;
  EXPECT_NE(usage_error_of([] { (void)read_csv("/nonexistent/kforge.csv"); }).find("cannot open"),
            std::string::npos);
}

TEST(KernelModelCv, SelectsAnAccurateLambdaAndRepeats) {
  const Dataset d = test::blobs(/*n=*/149, /*d=*/3, 0.8, 0.05, /*seed=*/17);
  CvOptions o;
  o.kernel = {KernelFunction::Kind::rbf, gamma_scale(d.x)};
  o.lambdas = parse_lambdas("1e-4:1:6");
  o.folds = 3;
  const CvResult r = cross_validate(d, o), again = cross_validate(d, o);
  ASSERT_EQ(r.path.size(), 6u);
  for (const auto& s : r.path) {
    ASSERT_EQ(s.accuracy.size(), 3u);
    EXPECT_TRUE(s.converged);
    EXPECT_LE(s.min, s.mean);
    EXPECT_LE(s.mean, s.max);
  }
  EXPECT_GE(r.path[r.best].mean, 0.85);  // 5% of labels flipped, blobs well apart
  for (const auto& s : r.path) EXPECT_LE(s.mean, r.path[r.best].mean);
  for (std::size_t l = 0; l < r.path.size(); ++l) EXPECT_EQ(r.path[l].accuracy, again.path[l].accuracy);
  const auto j = r.to_json();
  EXPECT_EQ(j["best_lambda"], r.path[r.best].lambda);
  EXPECT_EQ(j["path"].size(), 6u);
}

// One decomposition of the whole K for every fold (the default) against one per training fold
// (the old route): the same fits, so the same held-out accuracy at every lambda and fold, for both
// smooth losses; the data are 2-dimensional, so `automatic` takes the low-rank route here.
TEST(KernelModelCv, SharedDecompositionScoresAsPerFold) {
  const Dataset d = test::blobs(/*n=*/163, /*d=*/2, 0.6, 0.1, /*seed=*/19);
  for (const Loss loss : {Loss::logistic, Loss::huber_hinge}) {
    CvOptions o;
    o.kernel = {KernelFunction::Kind::rbf, gamma_scale(d.x)};
    o.lambdas = parse_lambdas("1e-4:1:7");
    o.folds = 4;
    o.solver.loss = loss;
    o.solver.tol = 1e-9;
    const CvResult shared = cross_validate(d, o);
    // --save/--test's refit on every row: from the CV's spectrum, as from a fresh decomposition.
    ASSERT_NE(shared.spectrum, nullptr);
    const double lambda = shared.path[shared.best].lambda;
    const Fit reused = fit_all(d, o, lambda, shared.spectrum.get()), fresh = fit_all(d, o, lambda);
    EXPECT_LE((reused.alpha - fresh.alpha).norm(), 1e-9 * fresh.alpha.norm());
    EXPECT_NEAR(reused.b, fresh.b, 1e-9 * (1 + std::abs(fresh.b)));
    o.shared_decomposition = false;
    o.eigensolver = EigenSolver::lapack;
    const CvResult per_fold = cross_validate(d, o);
    ASSERT_EQ(shared.path.size(), per_fold.path.size());
    for (std::size_t l = 0; l < shared.path.size(); ++l) {
      EXPECT_TRUE(shared.path[l].converged && per_fold.path[l].converged);
      EXPECT_EQ(shared.path[l].accuracy, per_fold.path[l].accuracy) << loss_name(loss) << " lambda " << shared.path[l].lambda;
    }
    EXPECT_EQ(shared.best, per_fold.best);
  }
}

TEST(KernelModelCli, JsonPathAndExitTwoOnBadInput) {
  const Dataset d = test::blobs(/*n=*/61, /*d=*/2, 1.5, 0, /*seed=*/8);
  const std::string good = write_file("cli-good", csv_of(d, /*zero_one=*/false));
  const auto r = kforge::test::kforge_cli("kmodel logreg --data " + good + " --lambdas 1e-3:1e-1:3 --folds 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = kforge::test::parse_or_fail(r);
  EXPECT_EQ(j["path"].size(), 3u);
  EXPECT_EQ(j["data"]["rows"], 61);
  EXPECT_GE(j["best_accuracy"].get<double>(), 0.9);
  const auto table = kforge::test::kforge_cli("kmodel svm --data " + good + " --kernel linear --lambdas 0.1 --folds 3");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("chosen lambda"), std::string::npos);
  // Refit at the chosen lambda: held-out accuracy and the saved model.
  const std::string held_out = write_file("cli-test", csv_of(test::blobs(/*n=*/37, /*d=*/2, 1.5, 0, /*seed=*/9), true));
  const auto model = kforge::test::scratch_dir("kforge-kmodel", "cli-model") / "m.json";
  const auto refit = kforge::test::kforge_cli("kmodel svm --data " + good + " --lambdas 1e-3:1e-1:3 --folds 3 --test " +
                                              held_out + " --save " + model.string() + " --json");
  ASSERT_EQ(refit.exit_code, 0) << refit.err;
  const auto jr = kforge::test::parse_or_fail(refit);
  EXPECT_EQ(jr["final"]["test"]["rows"], 37);
  EXPECT_GE(jr["final"]["test"]["accuracy"].get<double>(), 0.9);
  std::ifstream saved(model);
  const auto m = nlohmann::json::parse(saved);
  EXPECT_EQ(m["alpha"].size(), 61u);
  EXPECT_EQ(m["x"].size(), 61u);
  EXPECT_EQ(m["lambda"], jr["best_lambda"]);
  EXPECT_EQ(m["model"], "svm");
  EXPECT_EQ(m["loss"], "hinge");  // svm's default: the hinge by SMO
  EXPECT_EQ(jr["solver"]["method"], "smo");
  // The Huberized hinge stays available by name, on the spectral path.
  const auto huber = kforge::test::kforge_cli("kmodel svm --loss huberized-hinge --delta 0.3 --data " + good +
                                              " --lambdas 1e-3:1e-1:3 --folds 3 --json");
  ASSERT_EQ(huber.exit_code, 0) << huber.err;
  const auto jh = kforge::test::parse_or_fail(huber);
  EXPECT_EQ(jh["solver"]["loss"], "huberized-hinge");
  EXPECT_EQ(jh["solver"]["delta"], 0.3);
  EXPECT_EQ(jh["rank_per_fold"].size(), 3u);
  EXPECT_GE(jh["best_accuracy"].get<double>(), 0.9);
  const std::pair<std::string, std::string> bad[] = {
      {"svm --data /nonexistent/x.csv", "cannot open"},
      {"svm --data " + good + " --test " + write_file("cli-3d", "1,2,3,1\n2,3,4,-1\n"), "3 features"},
      {"svm --data " + write_file("cli-one", "1,2,1\n2,3,1\n"), "only one class"},
      {"svm --data " + good + " --kernel sigmoid", "--kernel sigmoid"},
      {"svm --data " + good + " --kernel poly --degree 0", "--degree 0"},
      {"svm --data " + good + " --lambdas 1:2", "--lambdas"},
      {"svm --data " + good + " --folds 40", "--folds 40"},
      {"svm --data " + good + " --loss logistic", "--loss logistic is not a loss of svm"},
      {"logreg --data " + good + " --loss hinge", "--loss hinge is not a loss of logreg"},
      {"svm --data " + good + " --loss squared", "--loss squared"},
      {"svm --data " + good + " --tol 0", "--tol 0"},
      {"svm --data " + good + " --delta 0.3", "needs --loss huberized-hinge"},
      {"tree --data " + good, "tree"}};
  for (const auto& [args, why] : bad) {
    const auto e = kforge::test::kforge_cli("kmodel " + args);
    EXPECT_EQ(e.exit_code, 2) << args;
    EXPECT_NE(e.err.find(why), std::string::npos) << args << ": " << e.err;
  }
}

// A saved model scores new rows exactly as the model that was fitted: the same held-out
// accuracy as --test, f(x) recomputed here from the file's coefficients and rows, the labels
// optional, and every way a model or data file can be wrong is exit 2 naming it.
TEST(KernelModelCli, PredictWithASavedModelReproducesTheFit) {
  const Dataset d = test::blobs(/*n=*/53, /*d=*/3, 1.2, 0.05, /*seed=*/21);
  const Dataset fresh = test::blobs(/*n=*/41, /*d=*/3, 1.2, 0.05, /*seed=*/22);
  const std::string train = write_file("pred-train", csv_of(d, false));
  const std::string labelled = write_file("pred-labelled", csv_of(fresh, true));
  const Dataset read_back = read_csv(labelled);  // the values as written (6 decimals)
  std::string unlabelled_text;
  for (Eigen::Index i = 0; i < read_back.x.rows(); ++i)
    unlabelled_text += fmt::format("{},{},{}\n", read_back.x(i, 0), read_back.x(i, 1), read_back.x(i, 2));
  const std::string unlabelled = write_file("pred-unlabelled", unlabelled_text);
  const auto dir = kforge::test::scratch_dir("kforge-kmodel", "pred-model");
  const std::string model = (dir / "m.json").string();
  const auto fit = kforge::test::kforge_cli("kmodel logreg --data " + train + " --lambdas 1e-3:1e-1:3 --folds 3 --test " +
                                            labelled + " --save " + model + " --json");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const double test_accuracy = kforge::test::parse_or_fail(fit)["final"]["test"]["accuracy"];

  const auto scored = kforge::test::kforge_cli("kmodel predict --model " + model + " --data " + labelled + " --json");
  ASSERT_EQ(scored.exit_code, 0) << scored.err;
  const auto j = kforge::test::parse_or_fail(scored);
  EXPECT_EQ(j["accuracy"].get<double>(), test_accuracy);
  ASSERT_EQ(j["predictions"].size(), 41u);

  // f(x) from the file by hand: sum_j alpha_j exp(-gamma |x - x_j|^2) + b.
  const SavedModel m = load_model(model);
  EXPECT_EQ(m.loss, Loss::logistic);
  for (Eigen::Index i = 0; i < read_back.x.rows(); ++i) {
    double f = m.fit.b;
    for (Eigen::Index k = 0; k < m.x.rows(); ++k)
      f += m.fit.alpha[k] * std::exp(-m.kernel.gamma * (read_back.x.row(i) - m.x.row(k)).squaredNorm());
    const auto& p = j["predictions"][static_cast<std::size_t>(i)];
    const double decision = p["decision"];
    EXPECT_NEAR(decision, f, 1e-6 * (1 + std::abs(f))) << "row " << i;  // K by dot products there
    EXPECT_EQ(p["label"].get<int>(), decision >= 0 ? 1 : -1);
    EXPECT_NEAR(p["probability"].get<double>(), 1 / (1 + std::exp(-decision)), 1e-15);
  }

  // Without labels: the same decisions, no accuracy; the CSV on stdout or in --out.
  const auto plain = kforge::test::kforge_cli("kmodel predict --model " + model + " --data " + unlabelled + " --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto jp = kforge::test::parse_or_fail(plain);
  EXPECT_FALSE(jp.contains("accuracy"));
  EXPECT_EQ(jp["predictions"], j["predictions"]);
  const std::string out = (dir / "p.csv").string();
  const auto to_file = kforge::test::kforge_cli("kmodel predict --model " + model + " --data " + unlabelled + " --out " + out);
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  std::ifstream csv(out);
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "decision,label,probability");
  int lines = 0;
  for (std::string l; std::getline(csv, l);) ++lines;
  EXPECT_EQ(lines, 41);

  // A polynomial-kernel SVM saved and read back: its degree and coef0 travel with it.
  const std::string poly_model = (dir / "poly.json").string();
  const auto poly = kforge::test::kforge_cli("kmodel svm --kernel poly --degree 2 --coef0 0.5 --data " + train +
                                             " --lambdas 1e-3:1e-1:3 --folds 3 --test " + labelled + " --save " +
                                             poly_model + " --json");
  ASSERT_EQ(poly.exit_code, 0) << poly.err;
  const auto poly_scored = kforge::test::kforge_cli("kmodel predict --model " + poly_model + " --data " + labelled + " --json");
  ASSERT_EQ(poly_scored.exit_code, 0) << poly_scored.err;
  EXPECT_EQ(kforge::test::parse_or_fail(poly_scored)["accuracy"], kforge::test::parse_or_fail(poly)["final"]["test"]["accuracy"]);
  const SavedModel pm = load_model(poly_model);
  EXPECT_EQ(pm.kernel.kind, KernelFunction::Kind::poly);
  EXPECT_EQ(pm.kernel.degree, 2);
  EXPECT_EQ(pm.kernel.coef0, 0.5);

  const std::string not_json = write_file("pred-bad-json", "{");
  const std::string other = write_file("pred-other", R"({"format":"something-else"})");
  nlohmann::json short_alpha = m.to_json();
  short_alpha["alpha"].erase(0);
  const std::string mismatched = write_file("pred-short", short_alpha.dump());
  const std::pair<std::string, std::string> bad[] = {
      {"predict --data " + labelled, "needs --model"},
      {"predict --model /nonexistent/m.json --data " + labelled, "cannot open"},
      {"predict --model " + not_json + " --data " + labelled, "not JSON"},
      {"predict --model " + other + " --data " + labelled, "kforge-kmodel-1"},
      {"predict --model " + mismatched + " --data " + labelled, "52 coefficients for 53 training rows"},
      {"predict --model " + model + " --data " + write_file("pred-2col", "1,2\n3,4\n"), "the model has 3 features"},
      {"logreg --data " + train + " --model " + model, "--model and --out are for"}};
  for (const auto& [args, why] : bad) {
    const auto e = kforge::test::kforge_cli("kmodel " + args);
    EXPECT_EQ(e.exit_code, 2) << args;
    EXPECT_NE(e.err.find(why), std::string::npos) << args << ": " << e.err;
  }
}

}  // namespace
}  // namespace kforge::kmodel
