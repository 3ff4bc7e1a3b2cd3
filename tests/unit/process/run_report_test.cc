#include "pdlaunch/process/run_report.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

namespace pdlaunch {
namespace {

TEST(RunReportTest, IsoTimeIsUtcWithMilliseconds) {
  EXPECT_EQ(IsoTime(0.5), "1970-01-01T00:00:00.500Z");
  EXPECT_EQ(IsoTime(1795525732.173), "2026-11-24T13:08:52.173Z");
}

TEST(RunReportTest, UnknownsAreNullAndStatusesAreSpelledOut) {
  RunReport report;
  report.version = "1.2.3";
  report.command_line = {"launch", "x.py", "\xff"};  // not UTF-8: escaped, never thrown
  report.exit_code = 3;
  report.reason = "process failure";
  report.processes.push_back(
      {"trainer", 0, 0, 10, "", "", "log/workerlog.0", 1, 2, ExitStatus::Killed(SIGTERM)});
  report.processes.push_back({"worker", 1, 1, 11, "h:1", "0", "", 1, 0, std::nullopt});
  report.root_cause = 0;
  std::string text = FormatRunReport(report);
  // The byte as Python's json.dumps writes a surrogateescaped str (docs/report.md, "Exact
  // bytes"); nlohmann's parser refuses a lone surrogate, so it reads the rest without it.
  const size_t escape = text.find("\"\\udcff\"");
  ASSERT_NE(escape, std::string::npos) << text;
  text.replace(escape, 8, "\"ff\"");
  const auto json = nlohmann::json::parse(text);
  EXPECT_TRUE(json["mode"].is_null());
  EXPECT_TRUE(json["node_rank"].is_null());
  EXPECT_TRUE(json["nodes"].is_null());
  EXPECT_TRUE(json["start_time"].is_null());
  EXPECT_EQ(json["processes"][0]["status"]["signal"], "SIGTERM");
  EXPECT_EQ(json["processes"][0]["status"]["shell_code"], 143);
  EXPECT_TRUE(json["processes"][0]["status"]["exit_code"].is_null());
  EXPECT_TRUE(json["processes"][0]["endpoint"].is_null());
  EXPECT_TRUE(json["processes"][1]["status"].is_null());
  EXPECT_TRUE(json["processes"][1]["end_time"].is_null());
  EXPECT_TRUE(json["processes"][1]["log_path"].is_null());
  EXPECT_EQ(json["root_cause"]["rank"], 0);
  EXPECT_EQ(json["command_line"][2], "ff");
}

}  // namespace
}  // namespace pdlaunch
