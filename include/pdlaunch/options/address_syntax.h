#pragma once

#include <string_view>

#include "pdlaunch/options/options.h"

namespace pdlaunch {

/// Usage checks of the host and endpoint arguments, before anything is resolved or started
/// (pure: inet_pton only). A token made of digits and dots must be an IPv4 address
/// (`10.0.0.300`, `1.2.3` and `12345` are refused, not handed to the resolver, which reads
/// `1.2.3` as 1.2.0.3); one with a colon where a host goes must be an IPv6 address (`::gg`);
/// anything else must be a host name (letters, digits, `-`, `_`, dots between non-empty
/// labels, at most 253 characters). Endpoints are `host:port` or `[ipv6]:port`; more than one
/// colon without brackets (`host:port:port`, `fd00::1:80`) is refused.

/// A character a host name may hold: a letter, a digit, '-', '_' or '.' (a --job_id is made of
/// the same).
bool IsHostNameChar(char c);

/// One host (an --ips entry, --host). Throws UsageError "<flag>: '<token>' is not ...".
void CheckHostToken(std::string_view token, std::string_view flag);

/// One endpoint; `port_required` false also takes a bare host (--servers entries may omit it).
void CheckEndpointToken(std::string_view token, std::string_view flag, bool port_required);

/// Every host and endpoint argument of `options` (after the environment twins): --ips, --host,
/// --servers, --workers, --heter_workers, --master (http:// and etcd:// stripped; one without a
/// port is SelectLaunchPath's error) and --elastic_server (http:// and a trailing / stripped).
/// Throws the first UsageError.
void CheckAddressArguments(const LaunchOptions& options);

/// Every non-empty entry of `list` split at `separator`: an endpoint (CheckEndpointToken) when
/// `endpoints`, else a host (CheckHostToken). Throws the first UsageError, naming `flag`.
void CheckAddressList(std::string_view list, char separator, std::string_view flag, bool endpoints,
                      bool port_required);

}  // namespace pdlaunch
