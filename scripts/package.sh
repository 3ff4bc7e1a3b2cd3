#!/usr/bin/env bash
# Builds the Debian package pdlaunch_<version>_amd64.deb with CPack (docs/install.md):
#   1. installs the build's Debian packages that are missing (help2man for the man page);
#   2. configures build-package/ (Release, no tests) and builds the launcher, its man page and
#      its bash and zsh completion;
#   3. cpack -G DEB; the package is build-package/pdlaunch_<version>_amd64.deb;
#   4. lintian on it, when lintian is installed (--lintian installs it first).
# Then: apt install ./build-package/pdlaunch_*.deb
# Usage: bash scripts/package.sh [--lintian]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly PACKAGES=(build-essential cmake ninja-build libcli11-dev libspdlog-dev libfmt-dev libssl-dev
                   libboost1.81-dev nlohmann-json3-dev help2man dpkg-dev)
readonly TREE=build-package

lintian=0
for arg in "$@"; do
  case "${arg}" in
    --lintian) lintian=1 ;;
    -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package.sh: unknown argument: ${arg}" >&2; exit 2 ;;
  esac
done

# shellcheck source=scripts/deps.sh
source scripts/deps.sh

if ((lintian)); then
  install_packages "${PACKAGES[@]}" lintian
else
  install_packages "${PACKAGES[@]}"
fi

# Debian's hardening flags (stack protector, _FORTIFY_SOURCE, RELRO, bind-now), as a package
# built by dpkg-buildpackage would have them.
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
cxxflags="$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CXXFLAGS)"
ldflags=$(dpkg-buildflags --get LDFLAGS)

log "Configuring ${TREE}/"
cmake -S . -B "${TREE}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPDLAUNCH_BUILD_TESTS=OFF \
  -DPDLAUNCH_WARNINGS_AS_ERRORS=ON -DPDLAUNCH_SANITIZE= "-DCMAKE_CXX_FLAGS=${cxxflags}" \
  "-DCMAKE_EXE_LINKER_FLAGS=${ldflags}"
log "Building ${TREE}/"
cmake --build "${TREE}" -j "$(nproc)"
log "Packaging"
(cd "${TREE}" && cpack -G DEB)
deb=$(ls "${TREE}"/pdlaunch_*_amd64.deb)
if command -v lintian >/dev/null; then
  log "lintian ${deb}"
  lintian --tag-display-limit 0 "${deb}" || true
else
  log "lintian is not installed: not run (bash scripts/package.sh --lintian installs it)"
fi
log "Built ${deb}; install it with: apt install ./${deb}"
