// The auto tuner's driver across two nodes, with the job runner and the exchange given as
// functions (driver.h): which jobs it runs and which exchanges it makes, in which order.
#include "pdlaunch/tuner/driver.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "pdlaunch/tuner/auto_tuner.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

namespace fs = std::filesystem;

// Two nodes of a search through etcd; node b's half of every exchange is this node's value,
// under another name in the plan's (the nodes' names must differ), without rank 0 in an
// outcome's.
class TwoNodeDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.master = "etcd://127.0.0.1:2379";
    options_.nnodes = "2";
    options_.auto_tuner_json = dir_.File("tuner.json");
    options_.training_script = "train.py";
  }

  void WriteConfig(const std::string& json) { std::ofstream(*options_.auto_tuner_json) << json; }

  // Runs the search; returns its exit code. calls_: "job <id>" and "exchange <name>" in order,
  // the exchange's end "exchange (close)".
  int Search() {
    const DeviceResolver devices = [] {
      DevicePlan plan;
      plan.mode = DeviceMode::kGpu;
      plan.devices_per_proc = {{0, 1, 2, 3}};
      return plan;
    };
    const JobRunner run_job = [this](const LaunchOptions& job, const JobControls&) {
      calls_.push_back("job " + job.job_id.value_or(""));
      fs::create_directories(job.log_dir);
      std::ofstream log(fs::path(job.log_dir) / "workerlog.0");
      for (int step = 0; step < 12; ++step) {
        log << "global step " << step << ", interval_samples_per_second: 110\n";
      }
      RunResult result;
      result.record.processes.push_back(ProcessRecord{});  // Rank 0 ran here.
      return result;
    };
    const TunerExchange exchange = [this](const std::string& job_id, const std::string& value, bool,
                                          const std::string&, double) {
      calls_.push_back(job_id.empty() ? "exchange (close)" : "exchange " + job_id);
      ExchangeResult told;
      if (job_id.empty()) return told;
      std::string b = value;
      if (std::optional<NodeOutcome> outcome = DecodeNodeOutcome(value)) {
        outcome->rank0 = false;  // One node ran rank 0: this one.
        b = EncodeNodeOutcome(*outcome);
      } else if (const size_t newline = value.find('\n'); newline != std::string::npos) {
        b = value.substr(0, newline) + "\nnode-b";  // The plan's: b's own name.
      }
      told.values = {value, b};
      return told;
    };
    const std::function<void()> announce = [] {};
    RunReport report;
    return RunAutoTuner(options_, devices, run_job, exchange, announce, report);
  }

  testutil::ScopedTempDir dir_;
  LaunchOptions options_;
  std::vector<std::string> calls_;
};

constexpr char kGrid[] = R"({
  "dp_degree": [1], "mp_degree": [4], "pp_degree": [2], "micro_batch_size": [1],
  "sharding_degree": [1],
  "model_cfg": {"global_batch_size": 16, "num_layers": 4, "hidden_size": 64,
                "num_attention_heads": 4, "vocab_size": 128},
  "metric_cfg": {"name": "interval_samples_per_second", "OptimizationDirection": "Maximize"},
  "run_cmd": {}, "max_time_per_task": 30)";

// The best run is a job of every node: after it, every node is past the last exchange, and its
// key may go at once.
TEST_F(TwoNodeDriverTest, TheExchangeIsClosedAfterTheBestRunAJobOfEveryNode) {
  WriteConfig(std::string(kGrid) + "}");
  ASSERT_EQ(Search(), 0);
  ASSERT_GE(calls_.size(), 2u);
  EXPECT_EQ(calls_[calls_.size() - 2], "job best_cfg");
  EXPECT_EQ(calls_.back(), "exchange (close)");
}

// dp_estimation runs no best, nor does run_best false: a node done with the last outcome cannot
// know that the others have read it, so its key is left to its lease (a node that dropped it
// at once left a slower node waiting for a record that was gone).
TEST_F(TwoNodeDriverTest, TheLastOutcomeIsLeftToItsLeaseWhenNoBestRuns) {
  for (const std::string extra :
       {R"(, "run_best": false})",
        R"(, "search_algo": {"name": "dp_estimation", "estimated_num_gpus": 16},
             "sharding_degree": "auto", "schedule_mode": "memory"})"}) {
    calls_.clear();
    fs::remove(dir_.path() / "tuner_history.csv");
    WriteConfig(kGrid + extra);
    ASSERT_EQ(Search(), 0) << extra;
    ASSERT_FALSE(calls_.empty());
    EXPECT_EQ(calls_.back(), "exchange auto_tuner_1_outcome") << extra;
  }
}

}  // namespace
}  // namespace pdlaunch
