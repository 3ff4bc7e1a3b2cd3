#!/usr/bin/env bash
# The habits CI enforces (CONTRIBUTING.md, "Style"), in seconds, before anything is built:
#   - clang-format: every tracked .cc/.h as .clang-format says (fix: clang-format -i FILE);
#   - the shell linter over scripts/, .ci/run and bench/*.sh;
#   - pyflakes over tests/, bench/, examples/ and python/ (unused imports and names, undefined names);
#   - codespell over docs, code and tests (.codespellrc lists the words kept as they are);
#   - the launcher's switches (PDLAUNCH_* variables, pdlaunch/base/switches.h) read nowhere in
#     src/ but src/base/switches.cc.
# Exits non-zero if any finds something; prints each finding.
# Usage: bash scripts/lint.sh
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

failed=()

mapfile -t sources < <(git ls-files '*.cc' '*.h')
drift=()
for file in "${sources[@]}"; do
  clang-format --dry-run --Werror "$file" >/dev/null 2>&1 || drift+=("$file")
done
if ((${#drift[@]})); then
  printf 'lint: clang-format would change %s\n' "${drift[@]}"
  failed+=(clang-format)
fi

mapfile -t shells < <(git ls-files 'scripts/*.sh' 'bench/*.sh' '.ci/run')
shellcheck "${shells[@]}" || failed+=(shellcheck)

mapfile -t pythons < <(git ls-files 'tests/*.py' 'bench/*.py' 'examples/*.py' 'python/*.py')
pyflakes3 "${pythons[@]}" || failed+=(pyflakes)

codespell README.md CHANGELOG.md CONTRIBUTING.md docs src include tests bench scripts examples \
  cmake || failed+=(codespell)

# A switch read with getenv/GetEnv by name, outside the one file that reads them.
if git grep -n -E '(getenv|GetEnv)\("PDLAUNCH_' -- src include ':!src/base/switches.cc'; then
  echo "lint: read the launcher's switches through ReadSwitch (pdlaunch/base/switches.h)"
  failed+=(switches)
fi

if ((${#failed[@]})); then
  echo "lint: FAIL (${failed[*]})"
  exit 1
fi
echo "lint: ok (clang-format ${#sources[@]} files, shellcheck ${#shells[@]}, pyflakes ${#pythons[@]}, codespell)"
