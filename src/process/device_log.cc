#include "pdlaunch/process/device_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <functional>
#include <utility>

#include "pdlaunch/base/endpoint.h"  // SplitAndStrip
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/plan/training_command.h"  // FindProgram
#include "pdlaunch/process/device_probe.h"

namespace pdlaunch {

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxOutput = 256 * 1024;  // One answer of nvidia-smi; past it: a failure.
constexpr size_t kMaxRows = 64;
constexpr size_t kMaxRowBytes = 512;

constexpr const char* kInfoFields =
    "index,uuid,driver_version,name,gpu_serial,display_active,display_mode";
constexpr const char* kAppFields = "pid,process_name,gpu_uuid,gpu_name,used_memory";
constexpr const char* kUtilFields =
    "index,utilization.gpu,memory.total,memory.used,memory.free,timestamp";

std::optional<double> ToNumber(const std::string& text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::vector<std::string> NvidiaSmiQuery(const std::string& program, const std::string& fields,
                                        const std::vector<std::string>& labels, bool apps) {
  std::vector<std::string> argv = {program, "--format=csv,noheader,nounits",
                                   (apps ? "--query-compute-apps=" : "--query-gpu=") + fields};
  if (!labels.empty()) argv.push_back(fmt::format("--id={}", fmt::join(labels, ",")));
  return argv;
}

std::string CsvRows(const std::string& output) {
  std::string rows;
  size_t count = 0;
  for (const std::string& line : SplitAndStrip(output, '\n')) {
    if (line.empty()) continue;
    if (++count > kMaxRows) break;
    std::string row;
    for (size_t i = 0; i < line.size() && row.size() < kMaxRowBytes; ++i) {
      if (line[i] == ',' && i + 1 < line.size() && line[i + 1] == ' ') {
        row += ',';
        ++i;
      } else {
        row += line[i];
      }
    }
    rows += OneLine(row);
    rows += '\n';
  }
  return rows;
}

namespace {

/// Python's int() of a float: towards zero.
std::string Truncated(double value) { return std::to_string(static_cast<long long>(value)); }

std::optional<double> PercentOf(const std::string& field) {
  if (field.empty()) return std::nullopt;
  return ToNumber(field.substr(0, field.size() - 1));
}

/// re.split(r',|/|\s+|\|', line): the pieces between separators, empty ones kept.
std::vector<std::string> PythonSplit(std::string_view line) {
  std::vector<std::string> pieces;
  std::string piece;
  const auto blank = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  for (size_t i = 0; i < line.size();) {
    const char c = line[i];
    if (c == ',' || c == '/' || c == '|' || blank(c)) {
      pieces.push_back(std::move(piece));
      piece.clear();
      if (blank(c)) {
        while (i < line.size() && blank(line[i])) ++i;
      } else {
        ++i;
      }
      continue;
    }
    piece += c;
    ++i;
  }
  pieces.push_back(std::move(piece));
  return pieces;
}

}  // namespace

std::string RocmSmiRows(const std::string& output, const std::string& timestamp) {
  constexpr double kTotal = 32150;  // Paddle's assumed MiB per DCU.
  std::string rows;
  size_t count = 0;
  for (const std::string& line : SplitAndStrip(output, '\n')) {
    std::vector<std::string> fields;
    for (const std::string& field : SplitAndStrip(line, ' ')) {
      if (!field.empty()) fields.push_back(field);
    }
    if (fields.size() != 8 || std::count(fields.begin(), fields.end(), "DCU") > 0) continue;
    const std::optional<double> memory = PercentOf(fields[6]);
    const std::string utilization = fields[7].substr(0, fields[7].size() - 1);
    if (!memory || !ToNumber(utilization) || !ToNumber(fields[0])) continue;
    if (++count > kMaxRows) break;
    const double used = kTotal * *memory / 100;
    rows += OneLine(fmt::format("{},{},{},{},{},{}", fields[0], utilization, Truncated(kTotal),
                                Truncated(used), Truncated(kTotal - used), timestamp));
    rows += '\n';
  }
  return rows;
}

std::string NpuSmiRows(const std::string& output, const std::string& timestamp) {
  std::string rows;
  size_t index = 0;
  for (const std::string& line : SplitAndStrip(output, '\n')) {
    if (line.empty()) continue;
    std::vector<std::string> pieces = PythonSplit(line);
    if ((pieces.size() != 18 && pieces.size() != 19) ||
        std::count(pieces.begin(), pieces.end(), "NPU") > 0) {
      continue;
    }
    std::erase(pieces, std::string());
    if (pieces.size() < 7) continue;
    const std::optional<double> total = ToNumber(pieces[6]);
    const std::optional<double> used = ToNumber(pieces[5]);
    if (!total || !used || !ToNumber(pieces[2])) continue;
    if (index >= kMaxRows) break;
    rows += OneLine(fmt::format("{},{},{},{},{},{}", index++, pieces[2], Truncated(*total),
                                Truncated(*used), Truncated(*total - *used), timestamp));
    rows += '\n';
  }
  return rows;
}

void AddUtilizationSample(const std::string& rows, std::map<std::string, DeviceUsage>& usage) {
  for (const std::string& row : SplitAndStrip(rows, '\n')) {
    const std::vector<std::string> fields = SplitAndStrip(row, ',');
    if (fields.size() < 5 || fields[0].empty()) continue;
    const std::optional<double> utilization = ToNumber(fields[1]);
    const std::optional<double> used = ToNumber(fields[3]);
    if (!utilization || !used) continue;
    DeviceUsage& device = usage[fields[0]];
    device.peak_memory_used_mib = std::max(device.peak_memory_used_mib, *used);
    device.utilization_sum += *utilization;
    ++device.samples;
  }
}

struct DeviceLogSampler::State : std::enable_shared_from_this<State> {
  State(asio::io_context& io_context, DeviceLogSettings given)
      : io(io_context), settings(std::move(given)), timer(io), deadline(io), out(io), exited(io) {}

  ~State() { Reap(true); }

  asio::io_context& io;
  DeviceLogSettings settings;
  int file = -1;
  asio::steady_timer timer;               // The period.
  asio::steady_timer deadline;            // One sample's.
  asio::posix::stream_descriptor out;     // The sample's stdout.
  asio::posix::stream_descriptor exited;  // Its pidfd.
  pid_t pid = -1;
  bool timed_out = false;
  bool eof = false;
  std::string output;
  std::array<char, 4096> buffer{};
  std::map<std::string, DeviceUsage> usage;

  void Start() {
    const char* env_path = std::getenv("PATH");
    const std::string path = env_path != nullptr ? env_path : "/bin:/usr/bin";
    if (settings.tool == DeviceLogTool::kNvidiaSmi && settings.rocm_fallback &&
        !FindProgram(settings.program, path) && FindProgram("rocm-smi", path)) {
      settings.tool = DeviceLogTool::kRocmSmi;  // A DCU: Paddle's ROCm build asks rocm-smi.
      settings.program = "rocm-smi";
    }
    if (!FindProgram(settings.program, path)) {
      // Once per launcher: an auto-tuner search runs one job per trial, each with its GPU log.
      static std::atomic<bool> said = false;
      if (!said.exchange(true)) {
        PDLOG_INFO("gpu log: {} is not on PATH; {} is not written", settings.program,
                   fs::path(settings.path).filename().string());
      }
      return;
    }
    file =
        ::open(settings.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (file < 0) return Fail(fmt::format("cannot write {}: {}", settings.path, strerror(errno)));
    if (settings.tool != DeviceLogTool::kNvidiaSmi) {
      // Paddle fills these two sections from nvidia-smi, which a DCU or NPU host lacks.
      Write(fmt::format("{}\n\n{}\n\n{}\n", kGpuInfoHeader, kGpuProcessHeader, kGpuUtilHeader));
      return Utilization();
    }
    Sample(NvidiaSmiQuery(settings.program, kInfoFields, settings.labels, false),
           [](State& s, const std::string& answer) {
             s.Write(std::string(kGpuInfoHeader) + "\n" + CsvRows(answer) + "\n");
             s.Sample(NvidiaSmiQuery(s.settings.program, kAppFields, s.settings.labels, true),
                      [](State& s2, const std::string& apps) {
                        s2.Write(std::string(kGpuProcessHeader) + "\n" + CsvRows(apps) + "\n" +
                                 kGpuUtilHeader + "\n");
                        s2.Utilization();
                      });
           });
  }

  // This sample's rows in kGpuUtilHeader's layout, from the tool's answer.
  std::string UtilizationRows(const std::string& answer) const {
    if (settings.tool == DeviceLogTool::kNvidiaSmi) return CsvRows(answer);
    char stamp[32] = {};
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    ::localtime_r(&now, &local);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &local);
    return settings.tool == DeviceLogTool::kRocmSmi ? RocmSmiRows(answer, stamp)
                                                    : NpuSmiRows(answer, stamp);
  }

  std::vector<std::string> UtilizationQuery() const {
    switch (settings.tool) {
      case DeviceLogTool::kRocmSmi:
        return {settings.program};
      case DeviceLogTool::kNpuSmi:
        return {settings.program, "info"};
      case DeviceLogTool::kNvidiaSmi:
        break;
    }
    return NvidiaSmiQuery(settings.program, kUtilFields, settings.labels, false);
  }

  void Utilization() {
    Sample(UtilizationQuery(), [](State& s, const std::string& answer) {
      const std::string rows = s.UtilizationRows(answer);
      s.Write(rows);
      AddUtilizationSample(rows, s.usage);
      s.timer.expires_after(std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::duration<double>(s.settings.period_seconds)));
      std::weak_ptr<State> weak = s.shared_from_this();
      s.timer.async_wait([weak](const boost::system::error_code& ec) {
        auto self = weak.lock();
        if (!ec && self) self->Utilization();
      });
    });
  }

  void Write(const std::string& text) {
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(file, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Fail(fmt::format("cannot write {}: {}", settings.path, strerror(errno)));
      done += static_cast<size_t>(n);
    }
  }

  // Once, then nothing more: Paddle's sampler floods its log with "save gpu log failed" every
  // period (Paddle #56095, #54753).
  void Fail(const std::string& why) {
    PDLOG_WARN("gpu log: {}; no more samples are taken (the training is not affected)",
               OneLine(why));
    timer.cancel();
    settings.period_seconds = -1;
  }

  using Done = void (*)(State&, const std::string&);

  void Sample(std::vector<std::string> argv, Done done) {
    if (settings.period_seconds < 0) return;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return Fail(fmt::format("pipe: {}", strerror(errno)));
    pid = SpawnWithStdout(argv, fds[1]);
    ::close(fds[1]);
    if (pid < 0) {
      ::close(fds[0]);
      return Fail(fmt::format("cannot start {}", argv[0]));
    }
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (pidfd < 0) {
      ::close(fds[0]);
      Reap(true);
      return Fail(fmt::format("pidfd_open: {}", strerror(errno)));
    }
    out.assign(fds[0]);
    exited.assign(pidfd);
    output.clear();
    eof = false;
    timed_out = false;
    std::weak_ptr<State> weak = shared_from_this();
    deadline.expires_after(std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(settings.deadline_seconds)));
    deadline.async_wait([weak](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self || self->pid <= 0) return;
      self->timed_out = true;
      ::kill(-self->pid, SIGKILL);  // Its group: whatever it started too.
    });
    Read(done);
    exited.async_wait(asio::posix::stream_descriptor::wait_read,
                      [weak, done](const boost::system::error_code& ec) {
                        auto self = weak.lock();
                        if (!ec && self) self->Exited(done);
                      });
  }

  void Read(Done done) {
    std::weak_ptr<State> weak = shared_from_this();
    out.async_read_some(asio::buffer(buffer),
                        [weak, done](const boost::system::error_code& ec, size_t n) {
                          auto self = weak.lock();
                          if (!self || ec == asio::error::operation_aborted) return;
                          if (ec || n == 0) {
                            self->eof = true;
                            return;
                          }
                          self->output.append(self->buffer.data(), n);
                          if (self->output.size() > kMaxOutput) {
                            ::kill(-self->pid, SIGKILL);
                            return;
                          }
                          self->Read(done);
                        });
  }

  // The sample's process exited: reap it, drain what its stdout still holds, hand on the rows.
  void Exited(Done done) {
    const std::string program = settings.program;
    const int status = Reap(false);
    // What is left in the pipe, without waiting: a background child the sample left behind
    // may hold its write end open.
    boost::system::error_code ignored;
    out.non_blocking(true, ignored);
    for (;;) {
      boost::system::error_code ec;
      const size_t n = out.read_some(asio::buffer(buffer), ec);
      if (ec || n == 0 || output.size() > kMaxOutput) break;
      output.append(buffer.data(), n);
    }
    out.close();
    exited.close();
    deadline.cancel();
    if (timed_out) {
      return Fail(fmt::format("{} gave no answer within {} s", program, settings.deadline_seconds));
    }
    if (output.size() > kMaxOutput) return Fail(fmt::format("{} wrote more than 256 KiB", program));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return Fail(WIFEXITED(status) && WEXITSTATUS(status) == 127
                      ? fmt::format("{} was not found on PATH", program)
                      : fmt::format("{} failed ({})", program,
                                    WIFEXITED(status)
                                        ? fmt::format("exit status {}", WEXITSTATUS(status))
                                        : fmt::format("signal {}", WTERMSIG(status))));
    }
    done(*this, output);
  }

  // Reaps the sample in flight: kills its group first when `kill_first` (or waits only if it
  // already exited). Returns its wait status.
  int Reap(bool kill_first) {
    if (pid <= 0) return 0;
    if (kill_first) ::kill(-pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    pid = -1;
    return status;
  }
};

DeviceLogSampler::DeviceLogSampler(asio::io_context& io, DeviceLogSettings settings)
    : state_(std::make_shared<State>(io, std::move(settings))) {
  // The first sample a moment after the ranks started, not in their start-up: looking for
  // nvidia-smi and spawning it cost the launcher 70 us of the 8-rank start-up figure
  // (docs/performance.md). A job over before that has no log.
  state_->timer.expires_after(std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(std::min(1.0, state_->settings.period_seconds))));
  std::weak_ptr<State> weak = state_;
  state_->timer.async_wait([weak](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (!ec && self) self->Start();
  });
}

DeviceLogSampler::~DeviceLogSampler() {
  try {
    state_->timer.cancel();
    state_->deadline.cancel();
    state_->Reap(true);
    state_->out.close();
    state_->exited.close();
    if (state_->file >= 0) ::close(state_->file);
  } catch (...) {
  }
}

std::map<std::string, DeviceUsage> DeviceLogSampler::usage() const { return state_->usage; }

}  // namespace pdlaunch
