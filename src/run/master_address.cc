// Where the master of a master-rendezvous node is (master_node.h): chosen, resolved, served on
// this host, or found by Paddle's handshake.
#include "run/master_node.h"

namespace pdlaunch::internal::master {

std::optional<int> MasterNode::Plan() {
  if (!settings_.ips.empty()) {
    // This node's address is its entry of the list: its job is planned (and refused if it must
    // be) before it meets, or hosts for, any other node.
    node_ip_ = settings_.host.value_or("127.0.0.1");
    job_->Plan(node_ip_);
    if (const std::optional<int> code = ChooseHost()) return code;
    value_ = job_->Value(pod_, settings_.rank);
    SetOwnKey();
    return std::nullopt;
  }
  if (Solo(settings_)) {
    node_ip_ = settings_.host.value_or("127.0.0.1");
  } else if (const std::optional<int> code = ChooseHost()) {
    return code;
  }
  job_->Plan(node_ip_);
  value_ = job_->Value(pod_, settings_.rank);
  SetOwnKey();
  return std::nullopt;
}

// The address of the master's host into master_.host, resolved (forward only). A host name
// is tried again every 0.5 s until the rendezvous deadline, from the loop (signals handled): a
// Kubernetes service name resolves only once its pod exists. Each try is a blocking
// getaddrinfo, as long as the resolver's own timeout at most. Returns the exit code when a
// signal stopped the wait.
std::optional<int> MasterNode::ResolveMaster(Clock::time_point deadline) {
  const std::string& host = settings_.master_host;
  if (IsIpLiteral(host)) {
    master_.host = host;
    return std::nullopt;
  }
  std::optional<std::string> failure;
  Clock::time_point last_line{};
  bool in_loop = false;           // The waiting line only from the loop, once signals are handled.
  auto attempt = [&]() -> bool {  // True when done: resolved, or failed for good.
    try {
      const std::vector<std::string> addresses = ResolveHostName(host, "--master");
      if (addresses.empty()) return false;
      PDLOG_AT(say_, "master host {} is {}", host, addresses.front());
      master_.host = addresses.front();
      return true;
    } catch (const LaunchError& e) {
      if (Clock::now() >= deadline) {
        failure = fmt::format(
            "cannot resolve the master's host name '{}' before the rendezvous "
            "deadline: {}",
            host, e.what());
        return true;
      }
      if (in_loop && SecondsSince(last_line) >= kStatusInterval) {
        PDLOG_WARN("waiting for the master's host name '{}' to resolve ({})", host, e.what());
        last_line = Clock::now();
      }
      return false;
    }
  };
  if (!attempt()) {
    in_loop = true;
    LoopTimer retry(loop_.get(), 0.5, [&] {
      if (stop_ && master_.host.empty() && !failure && attempt()) stop_();
    });
    const std::optional<int> code =
        WaitIdle(fmt::format("the master's host name '{}' to resolve", host));
    if (code) return code;
  }
  if (failure) throw LaunchError(*failure);
  return std::nullopt;
}

void MasterNode::SetOwnKey() {
  const bool hosting = host_.server != nullptr || Solo(settings_);
  own_key_ =
      keys_.info(hosting && settings_.rank < 0 ? std::string(kHostKeyName) : pod_, settings_.rank);
}

// Serving a master on this host's address: true when this launcher now serves it, false when
// the port is taken. Taken is not proof that another launcher serves it: two sockets bound with
// SO_REUSEADDR can both fail listen() at the same instant (each sees the other already in
// LISTEN state), so Contact() tries again when nobody answers there.
bool MasterNode::TryToServe() {
  try {
    host_.server = std::make_unique<KvHttpServer>(loop_.get(), master_.host, master_.port,
                                                  JobServerLimits(settings_.nnodes));
    return true;
  } catch (const std::system_error& e) {
    if (e.code().value() != EADDRINUSE) {
      throw LaunchError(fmt::format("cannot serve the master at {}: {}", MasterText(), e.what()));
    }
    return false;
  }
}

std::optional<int> MasterNode::ChooseHost() {
  const Clock::time_point deadline =
      start_ + std::chrono::duration_cast<Clock::duration>(
                   std::chrono::duration<double>(settings_.rendezvous_timeout));
  if (!settings_.ips.empty()) return MeetAtIps(deadline);
  if (!settings_.master_given) {
    node_ip_ = AddressWithoutMaster(settings_.host);
    master_.reservation = MakeLockingPortAllocator()->Reserve(1);
    master_.port = master_.reservation->ports().front();
    host_.server = std::make_unique<KvHttpServer>(loop_.get(), node_ip_, master_.port,
                                                  JobServerLimits(settings_.nnodes));
    master_.host = node_ip_;
    settings_.master_host = node_ip_;
    // This node's own --host and --rank would make every node that pastes the command claim
    // them (Paddle copies its whole argv).
    std::string others;
    for (const std::string& arg : WithoutOptions(options_.command_line, {"host", "rank"})) {
      others += " " + arg;
    }
    fmt::print("Copy the following command to other nodes to run.\n{}\n{} --master {}{}\n{}\n",
               std::string(80, '-'), options_.program, Endpoint{node_ip_, master_.port}.ToString(),
               others, std::string(80, '-'));
    std::fflush(stdout);
    if (settings_.rank >= 0) {
      PDLOG_WARN("--rank set in the command may not compatible in auto mode");
      // The command above leaves this node's --rank out, and a world with ranks on some nodes
      // only is refused: say what the others need.
      PDLOG_WARN(
          "the command above has no --rank: give each other node its own (--rank 0..{} "
          "but {}), or drop --rank here",
          settings_.nnodes - 1, settings_.rank);
    }
  } else {
    master_.port = settings_.master_port;
    if (const std::optional<int> code = ResolveMaster(deadline)) return code;
    if (settings_.host) {
      node_ip_ = *settings_.host;
    } else if (auto source = SourceAddressFor(master_.host)) {
      node_ip_ = *source;
    } else {
      throw LaunchError(
          fmt::format("no route from this host to the master {} ({})", MasterText(), master_.host));
    }
    master_.is_local = IsLocalAddress(master_.host);
    // 127.0.0.1 (or ::1) is nobody's --host where nodes are simulated on one host (each has its
    // own 127.x address): any node hosts it at once, as without --host.
    master_.hosting_deferred = master_.is_local && settings_.host &&
                               *settings_.host != master_.host && master_.host != "127.0.0.1" &&
                               master_.host != "::1";
    if (master_.hosting_deferred) {
      PDLOG_AT(
          say_,
          "the master {} is on this host but is not this node's address ({}): the node of that "
          "address hosts it (this node does if none has in {:g} s)",
          MasterText(), *settings_.host, kDeferredHostingSeconds);
    } else if (master_.is_local && !TryToServe()) {
      PDLOG_AT(say_,
               "the master's port {} is taken on this host (by another launcher, serving it, "
               "or by another program); this node contacts it",
               MasterText());
    }
  }
  if (host_.server) {
    PDLOG_AT(say_, "this node ({}) hosts the master at {} for job {} ({} nodes)", node_ip_,
             MasterText(), settings_.job_id, settings_.nnodes);
  } else {
    PDLOG_AT(say_, "this node is {}; master {} for job {} ({} nodes)", node_ip_, MasterText(),
             settings_.job_id, settings_.nnodes);
  }
  return std::nullopt;
}

// A node of an --ips job (docs/multi-node.md, "The nodes meet"): the node at
// ips[master_index] hosts the master, on the port given or on the first of Paddle's handshake
// ports it can bind; the others find that port by Paddle's handshake when none was given. Only
// that node hosts, even where every address of the list is local (nodes simulated on one host).
std::optional<int> MasterNode::MeetAtIps(Clock::time_point deadline) {
  node_ip_ = settings_.host.value_or("127.0.0.1");  // The run set it: this node's entry.
  master_.is_local = settings_.hosting.value_or(false);
  if (const std::optional<int> code = ResolveMaster(deadline)) return code;
  const std::string node = fmt::format("node {} of {} in --ips", settings_.rank, settings_.nnodes);
  if (master_.is_local) {
    if (settings_.handshake) {
      ServeHandshakePorts();
    } else {
      master_.port = settings_.master_port;
      if (!TryToServe()) {
        throw LaunchError(fmt::format(
            "cannot serve the master at {}: the port is taken on this host (another job's master, "
            "or another program)",
            MasterText()));
      }
    }
    PDLOG_AT(say_, "this node ({}, {}) hosts the master at {} for job {}{}", node_ip_, node,
             MasterText(), settings_.job_id,
             settings_.handshake ? "; the other nodes find its port by Paddle's handshake" : "");
    return std::nullopt;
  }
  if (settings_.handshake) {
    if (const std::optional<int> code = FindHandshakePort(deadline)) return code;
  } else {
    master_.port = settings_.master_port;
  }
  PDLOG_AT(say_, "this node is {}, {}; master {} for job {}", node_ip_, node, MasterText(),
           settings_.job_id);
  return std::nullopt;
}

// The master on the first of Paddle's handshake ports that binds, as Paddle 3's host does; it
// answers the handshake on that same socket (http_master.cc).
void MasterNode::ServeHandshakePorts() {
  for (int port = kHandshakeFirstPort; port <= kHandshakeLastPort; ++port) {
    master_.port = port;
    try {
      host_.server = std::make_unique<KvHttpServer>(loop_.get(), master_.host, master_.port,
                                                    JobServerLimits(settings_.nnodes));
      return;
    } catch (const std::system_error& e) {
      PDLOG_AT(say_, "Port {} is not available for listening. ({})", port, e.what());
    }
  }
  throw LaunchError(fmt::format(
      "No available ports between {} and {}. (this node hosts the master of --ips at {}; free "
      "one, or give the port: --master :PORT or PADDLE_PORT)",
      kHandshakeFirstPort, kHandshakeLastPort, master_.host));
}

// The port of the master's node, by Paddle's handshake, waited for in the loop (signals
// handled) until the rendezvous deadline. Returns the exit code when a signal stopped the wait.
std::optional<int> MasterNode::FindHandshakePort(Clock::time_point deadline) {
  master_.port = 0;
  master_.handshake = std::make_unique<HandshakeClient>(
      loop_.get(), master_.host, kHandshakeFirstPort, kHandshakeLastPort, [this](int port) {
        master_.port = port;
        PDLOG_AT(say_, "Success found the master and port: {}, {}", settings_.master_host, port);
        Stop();
      });
  Clock::time_point last_line = Clock::now();
  const LoopTimer tick(loop_.get(), 0.25, [&] {
    if (master_.port != 0) return;
    if (Clock::now() >= deadline) return Stop();
    if (SecondsSince(last_line) < kStatusInterval) return;
    last_line = Clock::now();
    PDLOG_AT(
        say_,
        "waiting for node {} ({}) to answer Paddle's handshake on ports {}-{} ({}); {:.0f} s of "
        "{} s",
        settings_.master_index, settings_.master_host, kHandshakeFirstPort, kHandshakeLastPort,
        master_.handshake->status(), SecondsSince(start_), settings_.rendezvous_timeout);
  });
  const std::optional<int> code =
      WaitIdle(fmt::format("the master's handshake at {} (node {} of --ips)", settings_.master_host,
                           settings_.master_index));
  const std::string last = master_.handshake->status();
  master_.handshake.reset();
  if (code) return code;
  if (master_.port == 0) {
    throw LaunchError(fmt::format(
        "rendezvous timed out after {} s (--rendezvous_timeout): node {} ({}) of --ips never "
        "answered Paddle's handshake on ports {}-{} (last: {}); is its launcher started, with "
        "the same --ips?",
        settings_.rendezvous_timeout, settings_.master_index, settings_.master_host,
        kHandshakeFirstPort, kHandshakeLastPort, last));
  }
  return std::nullopt;
}

}  // namespace pdlaunch::internal::master
