#!/usr/bin/env bash
# CI for the third-party adapters: make each kernel's environment (scripts/make_envs.sh, pinned
# requirement files; an unchanged env is reused) and run, inside it, the adapter tests: the smoke
# set without harness or adapter errors, and the verdicts confirmed by reading the framework's
# source (tests/test_adapters_smoke.py). Each install takes about 3 minutes the first time.
#
#   scripts/ci_adapters.sh                       # every kernel with a requirement file
#   scripts/ci_adapters.sh pydantic-ai smolagents
#
# The full matrix (minutes, all requirements) is a separate step: `akc matrix`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
envs="${AKC_ENVS_DIR:-$HOME/.cache/akc/envs}"
export AKC_ENVS_DIR="$envs"
unset PYTHONDONTWRITEBYTECODE
export HYPOTHESIS_STORAGE_DIRECTORY="${TMPDIR:-/tmp}/akc-hypothesis"
kernels=("$@")
if [ ${#kernels[@]} -eq 0 ]; then
  for f in "$here"/requirements/*.txt; do kernels+=("$(basename "$f" .txt)"); done
fi
"$here/make_envs.sh" "${kernels[@]}"
status=0
for k in "${kernels[@]}"; do
  echo "== adapter tests in the $k environment"
  # The checkout's own conformance package, whatever copy the env has installed.
  if ! (cd "$repo" && PYTHONPATH="$repo" "$envs/$k/bin/python" -m pytest tests/test_adapters_smoke.py -q -p no:cacheprovider); then
    echo "ci_adapters: $k: FAILED" >&2
    status=1
  fi
done
if [[ " ${kernels[*]} " == *" hermes "* ]]; then
  # hermes runs over the wire protocol: the harness is this environment's, the adapter the env's.
  echo "== hermes-agent adapter: smoke set and source-confirmed verdicts"
  if ! (cd "$repo" && python -m pytest tests/test_hermes_adapter.py -q -p no:cacheprovider); then
    echo "ci_adapters: hermes: FAILED" >&2
    status=1
  fi
fi
[ $status -eq 0 ] && echo "ci_adapters: all adapter checks passed"
exit $status
