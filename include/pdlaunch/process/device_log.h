#pragma once

// `<log_dir>/<job_id>.gpu.log` (docs/cli.md, "GPU log"; issue #27 item 4): the devices'
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

/// The program whose answers fill the log (Paddle 3's utils/nvsmi.py): nvidia-smi's queries on
/// NVIDIA GPUs; on DCUs and Ascend NPUs only the utilisation section, from `rocm-smi` and
/// `npu-smi info` (Paddle asks nvidia-smi for the other two, which is absent there: they stay
/// headers).
enum class DeviceLogTool { kNvidiaSmi, kRocmSmi, kNpuSmi };

/// Where and what to sample.
struct DeviceLogSettings {
  std::string path;                 ///< <log_dir>/<job_id>.gpu.log.
  std::vector<std::string> labels;  ///< Physical device indices for --id=.
  double period_seconds = 30;       ///< PDLAUNCH_GPU_LOG_PERIOD.
  double deadline_seconds = 3;      ///< One nvidia-smi call (Paddle's timeout).
  std::string program = "nvidia-smi";
  DeviceLogTool tool = DeviceLogTool::kNvidiaSmi;
  /// kNvidiaSmi: when nvidia-smi is not on PATH but rocm-smi is (a DCU), the sampler uses that.
  bool rocm_fallback = true;
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

/// `rocm-smi`'s table as utilisation rows, by Paddle's rule: each line of exactly 8 blank-separated
/// fields without the word DCU is a device: index = field 0, utilization = field 7 without its
/// last character, memory total 32150 MiB (Paddle's constant), used = total × field 6 (a
/// percentage, its last character dropped) / 100, free = the rest, both truncated to integers;
/// `timestamp` as given. Lines that do not parse are skipped.
std::string RocmSmiRows(const std::string& output, const std::string& timestamp);

/// `npu-smi info`'s table as utilisation rows, by Paddle's rule: each line split at ',', '/', '|'
/// and runs of blanks (Python's re.split, empty pieces kept) into 18 or 19 pieces, none "NPU", is
/// a chip; with the empty pieces dropped, utilization = piece 2, memory total = piece 6, used =
/// piece 5, free = total − used; index = the count of such lines before it.
std::string NpuSmiRows(const std::string& output, const std::string& timestamp);

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
