// `actrain train` with checkpoints as an operator uses it, in real processes: a run killed with
// SIGKILL and resumed with --resume ends with the parameters of a run never killed; a damaged
// newest checkpoint is refused by name and the previous one used; `actrain eval` scores the model
// file the run wrote.
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include <actrain/checkpoint.hpp>
#include "test/support/processes.hpp"
#include "test/support/temp_dir.hpp"

namespace actrain {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using checkpoint_cli = test::temp_dir_test;

std::string ini() {
  auto* env = std::getenv("ACTRAIN_SOURCE_DIR");
  return std::string(env ? env : ACTRAIN_SOURCE_DEFAULT) + "/test/apps/checkpoint.ini";
}

bool exited_with(const test::child& k, int code) {
  return WIFEXITED(k.status) && WEXITSTATUS(k.status) == code;
}

/// Runs `actrain train` to its end; returns its output.
std::string train(const std::vector<std::string>& extra, int expect_code = 0) {
  test::process_group p;
  std::vector<std::string> args{ACTRAIN_BINARY, "train", "--config", ini()};
  args.insert(args.end(), extra.begin(), extra.end());
  auto k = p.spawn(args);
  EXPECT_TRUE(p.reap_all(120s)) << p.kids[k].text;
  EXPECT_TRUE(exited_with(p.kids[k], expect_code)) << p.kids[k].text;
  return p.kids[k].text;
}

TEST_F(checkpoint_cli, a_killed_sync_run_resumes_to_the_parameters_of_an_uninterrupted_one) {
  auto whole = (dir_ / "whole.model").string();
  auto out = train({"--checkpoint.dir=" + (dir_ / "a").string(), "--checkpoint.model=" + whole});
  EXPECT_NE(out.find("checkpoint written: "), std::string::npos) << out;

  auto ckpt = dir_ / "b";
  auto resumed_model = (dir_ / "resumed.model").string();
  {
    test::process_group p;
    auto k = p.spawn({ACTRAIN_BINARY, "train", "--config", ini(),
                      "--checkpoint.dir=" + ckpt.string(), "--checkpoint.model=" + resumed_model});
    ASSERT_FALSE(p.wait_for_line(k, "checkpoint written: ", 60s).empty()) << p.kids[k].text;
    ::kill(p.kids[k].pid, SIGKILL);
    ASSERT_TRUE(p.reap_all(10s));
    ASSERT_TRUE(WIFSIGNALED(p.kids[k].status)) << p.kids[k].text;
    ASSERT_EQ(p.kids[k].text.find("model written"), std::string::npos)
        << "the run ended before it was killed:\n"
        << p.kids[k].text;
  }
  ASSERT_FALSE(fs::exists(resumed_model));
  auto again = train({"--resume", ckpt.string(), "--checkpoint.model=" + resumed_model});
  EXPECT_NE(again.find("resuming from checkpoint "), std::string::npos) << again;
  EXPECT_NE(again.find("model written: " + resumed_model), std::string::npos) << again;

  auto a = load_model(whole), b = load_model(resumed_model);
  ASSERT_EQ(a.params.size(), b.params.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.params.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(a.params[i] - b.params[i])));
  EXPECT_LE(worst, 1e-5);
}

TEST_F(checkpoint_cli, sigterm_stops_the_run_after_a_last_checkpoint_and_it_resumes_exactly) {
  auto whole = (dir_ / "whole.model").string();
  train({"--checkpoint.model=" + whole});
  auto ckpt = dir_ / "t";
  // No periodic checkpoints: the only one is the one SIGTERM asks for.
  std::vector<std::string> args{ACTRAIN_BINARY,
                                "train",
                                "--config",
                                ini(),
                                "--checkpoint.dir=" + ckpt.string(),
                                "--checkpoint.every-steps=0"};
  {
    test::process_group p;
    auto k = p.spawn(args);
    ASSERT_FALSE(p.wait_for_line(k, "epoch ", 60s).empty()) << p.kids[k].text;
    ::kill(p.kids[k].pid, SIGTERM);
    ASSERT_TRUE(p.reap_all(30s)) << p.kids[k].text;
    auto& out = p.kids[k].text;
    ASSERT_TRUE(exited_with(p.kids[k], 4)) << out;  // stopped, resumable
    EXPECT_NE(out.find("Terminated received, stopping"), std::string::npos) << out;
    EXPECT_NE(out.find("stopped: signal TERM (resume from checkpoint " + ckpt.string()),
              std::string::npos)
        << out;
  }
  auto resumed = (dir_ / "resumed.model").string();
  auto again = train({"--resume", ckpt.string(), "--checkpoint.model=" + resumed});
  auto a = load_model(whole), b = load_model(resumed);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (std::size_t i = 0; i < a.params.size(); ++i)
    EXPECT_NEAR(a.params[i], b.params[i], 1e-5) << i;
}

TEST_F(checkpoint_cli, a_damaged_newest_checkpoint_is_refused_and_the_previous_one_used) {
  auto ckpt = dir_ / "c";
  train({"--checkpoint.dir=" + ckpt.string(), "--job.epochs=12"});
  checkpoint_store store(ckpt.string());
  auto files = store.files();
  ASSERT_GE(files.size(), 2u);
  fs::resize_file(files[0], fs::file_size(files[0]) / 2);
  auto second = load_checkpoint(files[1]);
  auto out = train({"--resume", ckpt.string(), "--job.epochs=12"});
  EXPECT_NE(out.find("refused checkpoint " + files[0] + ": truncated"), std::string::npos) << out;
  EXPECT_NE(out.find("resuming from checkpoint " + std::to_string(second.sequence) + " "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("result: test loss "), std::string::npos) << out;

  // Another job's folder, or one without checkpoints, is nothing to resume from.
  auto refused = train({"--resume", ckpt.string(), "--job.epochs=12", "--optim.lr=0.001"}, 2);
  EXPECT_NE(refused.find("belongs to another job"), std::string::npos) << refused;
  EXPECT_NE(refused.find("no good checkpoint of this job to resume from"), std::string::npos)
      << refused;
  fs::create_directories(dir_ / "empty");
  auto none = train({"--resume", (dir_ / "empty").string()}, 2);
  EXPECT_NE(none.find("no good checkpoint of this job to resume from (0 refused)"),
            std::string::npos)
      << none;
}

TEST_F(checkpoint_cli, eval_scores_the_model_file_as_the_run_did) {
  auto model = (dir_ / "m.model").string();
  auto out = train({"--job.epochs=4", "--checkpoint.model=" + model});
  auto at = out.find("result: test loss ");
  ASSERT_NE(at, std::string::npos) << out;
  auto trained = std::stod(out.substr(at + 18));

  test::process_group p;
  auto k = p.spawn({ACTRAIN_BINARY, "eval", "--model", model, "--config", ini()});
  auto line = p.wait_for_line(k, "test rows: test loss ", 60s);
  ASSERT_TRUE(p.reap_all(30s));
  ASSERT_FALSE(line.empty()) << p.kids[k].text;
  EXPECT_TRUE(exited_with(p.kids[k], 0)) << p.kids[k].text;
  EXPECT_NEAR(std::stod(line), trained, 1e-5 * trained) << p.kids[k].text;  // both 6 digits
  EXPECT_NE(p.kids[k].text.find("model linear 20-1 (job checkpointed-linear) on 2000 test rows"),
            std::string::npos)
      << p.kids[k].text;

  // A damaged model file is named with its damage; no file is named as missing.
  {
    std::ofstream f(model, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(-2, std::ios::end);
    f.put('\x7f');
  }
  test::process_group q;
  auto bad = q.spawn({ACTRAIN_BINARY, "eval", "--model", model, "--config", ini()});
  ASSERT_TRUE(q.reap_all(30s));
  EXPECT_TRUE(exited_with(q.kids[bad], 2)) << q.kids[bad].text;
  EXPECT_NE(q.kids[bad].text.find("m.model: the payload fails its crc32 check"), std::string::npos)
      << q.kids[bad].text;
  auto missing = q.spawn({ACTRAIN_BINARY, "eval", "--config", ini()});
  ASSERT_TRUE(q.reap_all(30s));
  EXPECT_TRUE(exited_with(q.kids[missing], 2));
  EXPECT_NE(q.kids[missing].text.find("give --model FILE"), std::string::npos);
}

// [data] standardize on a CSV whose columns differ by 1000x in scale: the run trains (unscaled,
// the same rate diverges and says so), and `actrain eval` scales the test rows with the
// statistics the model file kept, scoring them as the run did.
TEST_F(checkpoint_cli, a_standardized_csv_model_is_evaluated_with_its_training_statistics) {
  auto csv = (dir_ / "wide.csv").string();
  {
    std::ofstream f(csv);
    f << "big,small,y\n";
    for (int i = 0; i < 400; ++i) {
      double big = 1000.0 * ((i * 37) % 101), small = 0.01 * ((i * 13) % 17);
      f << big << "," << small << "," << 0.003 * big + 50 * small + 7 << "\n";
    }
  }
  auto job = (dir_ / "wide.ini").string();
  std::ofstream(job) << "[job]\nname=\"wide\"\nworkers=2\nshards=1\nbatch=16\nepochs=20\n"
                        "[model]\nkind=\"linear\"\n[optim]\nkind=\"sgd\"\nlr=0.05\n"
                        "[data]\nkind=\"csv\"\npath=\""
                     << csv << "\"\nstandardize=true\n";
  auto model = (dir_ / "wide.model").string();
  auto run = [&](std::vector<std::string> args, int code) {
    test::process_group p;
    auto k = p.spawn(args);
    EXPECT_TRUE(p.reap_all(60s)) << p.kids[k].text;
    EXPECT_TRUE(exited_with(p.kids[k], code)) << p.kids[k].text;
    return p.kids[k].text;
  };
  auto out = run({ACTRAIN_BINARY, "train", "--config", job, "--checkpoint.model=" + model}, 0);
  auto at = out.find("result: test loss ");
  ASSERT_NE(at, std::string::npos) << out;
  auto trained = std::stod(out.substr(at + 18));
  EXPECT_LT(trained, 1e-3) << out;  // y is linear in the columns: near-exact fit once scaled
  auto eval = run({ACTRAIN_BINARY, "eval", "--model", model, "--config", job}, 0);
  at = eval.find("test rows: test loss ");
  ASSERT_NE(at, std::string::npos) << eval;
  EXPECT_NEAR(std::stod(eval.substr(at + 21)), trained, 1e-5 * trained + 1e-12) << eval;
  auto unscaled = run({ACTRAIN_BINARY, "train", "--config", job, "--data.standardize=false"}, 1);
  EXPECT_NE(unscaled.find("training diverged"), std::string::npos) << unscaled;
}

}  // namespace
}  // namespace actrain
