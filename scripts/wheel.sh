#!/usr/bin/env bash
# Builds the pip wheel dist/pdlaunch-<version>-py3-none-manylinux_2_<N>_<arch>.whl offline, with
# Debian's own tools (docs/install.md, "The wheel"):
#   1. installs python3-build, python3-wheel and python3-setuptools when they are missing;
#   2. takes the binary the Debian package ships (build-package/launch, built by
#      scripts/package.sh: Release, Debian's hardening flags), unless --bin names one;
#   3. reads the newest glibc symbol the binary needs: that is the tag's floor (manylinux_2_N);
#   4. python3 -m build --no-isolation --wheel over python/ with the stripped binary as the
#      wheel's `pdlaunch` script. Nothing is downloaded.
# Then: python3 -m venv v && v/bin/pip install --no-index dist/pdlaunch-*.whl
# Usage: bash scripts/wheel.sh [--bin PATH] [--out DIR]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
readonly ROOT=$PWD
readonly PACKAGES=(python3-build python3-wheel python3-setuptools binutils)

bin=""
out="${ROOT}/dist"
while (($#)); do
  case "$1" in
    --bin) bin=$(realpath "$2"); shift 2 ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "wheel.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

# shellcheck source=scripts/deps.sh
source scripts/deps.sh
install_packages "${PACKAGES[@]}"

if [[ -z "${bin}" ]]; then
  # The .deb and the wheel ship one binary.
  log "Building the Debian package's binary (scripts/package.sh)"
  bash scripts/package.sh >/dev/null
  bin="${ROOT}/build-package/launch"
fi

# The tag tells the truth: the newest glibc version among the binary's symbols.
floor=$(objdump -T "${bin}" | grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2,2n | tail -1)
floor_minor=${floor#GLIBC_2.}
arch=$(uname -m)
platform="manylinux_2_${floor_minor}_${arch}"
version=$("${bin}" --version | sed -n 's/^launch (pdlaunch) //p')
[[ -n "${version}" ]] || { echo "wheel.sh: ${bin} --version names no version" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "${stage}"' EXIT
cp -r python/. "${stage}/"
mkdir -p "${stage}/scripts"
objcopy --strip-all "${bin}" "${stage}/scripts/pdlaunch"
chmod 0755 "${stage}/scripts/pdlaunch"

log "Building the wheel (${platform}, version ${version})"
mkdir -p "${out}"
PDLAUNCH_WHEEL_VERSION="${version}" PDLAUNCH_WHEEL_PLATFORM="${platform}" \
  /usr/bin/python3 -m build --no-isolation --wheel --outdir "${out}" "${stage}" >/dev/null
wheel="${out}/pdlaunch-${version}-py3-none-${platform}.whl"
[[ -f "${wheel}" ]] || { echo "wheel.sh: ${wheel} was not written" >&2; exit 1; }
echo "${wheel}"
