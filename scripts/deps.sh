# shellcheck shell=bash
# Sourced by scripts/demo.sh and scripts/test.sh: installs the Debian packages that are missing,
# and says how build/ is compiled.
# Nothing is downloaded when everything is present, so reruns are fast.

# A step's line, with the seconds since the script started: CI's log says what each step took.
log() { printf '\n==> [%d s] %s\n' "${SECONDS}" "$*"; }

# build/'s compiler flags, the same in both scripts so that neither rebuilds the other's tree.
# -g1: line tables and function names, enough for a backtrace; full -g made the build a third
# longer (the templates' debug info), and the package strips it anyway.
# shellcheck disable=SC2034  # Read by the scripts that source this one.
readonly RELEASE_FLAGS='-O2 -g1 -DNDEBUG'

# missing_packages <pkg...>: prints the packages dpkg does not have installed.
missing_packages() {
  local pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}\n' "${pkg}" 2>/dev/null | grep -qx 'install ok installed' ||
      echo "${pkg}"
  done
}

# install_packages <pkg...>: apt-get update + install of the missing ones (sudo when not root).
install_packages() {
  local missing
  mapfile -t missing < <(missing_packages "$@")
  if ((${#missing[@]} == 0)); then
    log "Debian packages: all $# present"
    return
  fi
  log "Installing missing Debian packages: ${missing[*]}"
  local sudo=()
  if ((EUID != 0)); then sudo=(sudo); fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
}
