#pragma once

// `<log_dir>/<job_id>.gpu.log` (paddle-new-launch.md §12; issue #27 item 4): the devices'
// identity, the compute processes, then one utilisation row per device every period, written
// from the supervisor's event loop: each sample is a child with a deadline, no thread, no sleep.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace pdlaunch {

/// Where and what to sample.
struct DeviceLogSettings {
  std::string path;                 ///< <log_dir>/<job_id>.gpu.log.
  std::vector<std::string> labels;  ///< Physical device indices for --id=.
  double period_seconds = 30;       ///< PDLAUNCH_GPU_LOG_PERIOD.
  double deadline_seconds = 3;      ///< One nvidia-smi call (Paddle's timeout).
  std::string program = "nvidia-smi";
};

// --- Pure parts --------------------------------------------------------------------------------

/// The section headers, as Paddle's watcher writes them.
inline constexpr const char* kGpuInfoHeader =
    "index,uuid,driver_version,name,gpu_serial,display_active,display_mode";
inline constexpr const char* kGpuProcessHeader = "pid,process_name,gpu_uuid,gpu_name,used_memory";
inline constexpr const char* kGpuUtilHeader =
    "index,utilization_gpu,memory_total,memory_used,memory_free,timestamp";

/// The nvidia-smi command line of a query: --format=csv,noheader,nounits, --query-gpu=<fields>
/// (or --query-compute-apps= when `apps`), --id=<labels> when there are labels.
std::vector<std::string> NvidiaSmiQuery(const std::string& program, const std::string& fields,
                                        const std::vector<std::string>& labels, bool apps);

/// nvidia-smi's CSV output as the log's rows: each non-empty line with ", " turned into ",", a
/// control character escaped (the output is another program's), at most 64 rows of 512 bytes.
std::string CsvRows(const std::string& output);

/// Per device index: what --report says of it once the log ran.
struct DeviceUsage {
  double peak_memory_used_mib = 0;
  double utilization_sum = 0;  ///< Percent, summed over the samples.
  int samples = 0;
  double mean_utilization() const { return samples ? utilization_sum / samples : 0; }
};

/// Adds one utilisation sample (the rows of kGpuUtilHeader's query) to `usage`; rows that do not
/// parse are skipped.
void AddUtilizationSample(const std::string& rows, std::map<std::string, DeviceUsage>& usage);

// --- The sampler -------------------------------------------------------------------------------

/// Writes the log on `io` until destroyed. The first failure of the program (not found, exit
/// status, no output, past its deadline) is logged once as a warning and ends the sampling; the
/// training is never affected. Destroying it kills and reaps a sample in flight.
class DeviceLogSampler {
 public:
  DeviceLogSampler(boost::asio::io_context& io, DeviceLogSettings settings);
  ~DeviceLogSampler();
  DeviceLogSampler(const DeviceLogSampler&) = delete;
  DeviceLogSampler& operator=(const DeviceLogSampler&) = delete;

  /// Usage per device index so far.
  std::map<std::string, DeviceUsage> usage() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace pdlaunch
