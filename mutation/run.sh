#!/usr/bin/env bash
# Mutation testing of reference_kernel/ by machine (docs/selftest.md, "Mutation testing by machine").
#   nice -n 15 bash mutation/run.sh [MODULE.py ...]     (default: every module of mutation/modules.toml)
# Needs the `mutation` extra (pip install -e '.[mutation]'). Mutates a scratch copy of the checkout,
# never the checkout; a rerun resumes the sessions already in $OUT (RETEST=1: and runs their survivors
# again, against the checks as they are now; delete $OUT/checkout first to copy a changed checkout).
# Not a CI step: hours of CPU.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MUTATION_OUT:-/tmp/akc-mutation}
scratch=$OUT/checkout
sessions=$OUT/sessions
mkdir -p "$sessions"
if [ ! -d "$scratch" ]; then
    mkdir -p "$scratch"
    # the checkout's files as they are in the work tree (uncommitted and new files included)
    git -C "$repo" ls-files -z --cached --others --exclude-standard | tar -C "$repo" --null -T - -cf - | tar -C "$scratch" -xf -
fi
cd "$scratch"
export PYTHONPATH=$scratch HYPOTHESIS_STORAGE_DIRECTORY=$OUT/hypothesis
helper() { python "$scratch/mutation/session.py" "$@"; }
if [ $# -eq 0 ]; then mapfile -t targets < <(helper modules); else targets=("$@"); fi
declare -A baseline_ok=()
for module in "${targets[@]}"; do
    name=${module%.py}
    config=$sessions/$name.toml
    session=$sessions/$name.sqlite
    helper config "$module" "$config"
    command=$(python -c 'import sys,tomllib; print(tomllib.load(open(sys.argv[1],"rb"))["cosmic-ray"]["test-command"])' "$config")
    if [ -z "${baseline_ok[$command]:-}" ]; then
        # the unmutated kernel must pass, or every mutant would read as killed
        if ! bash -c "$command" >"$sessions/$name.baseline.log" 2>&1; then
            echo "baseline failed for $module: $command (see $sessions/$name.baseline.log)" >&2; exit 1
        fi
        baseline_ok[$command]=1
    fi
    if [ ! -f "$session" ]; then
        cosmic-ray init "$config" "$session"
        helper sample "$module" "$session"
    elif [ -n "${RETEST:-}" ]; then
        helper retest "$session" >/dev/null   # survivors run again (a check was added since)
    fi
    echo "== $module: $(date -u +%H:%M:%S)" >&2
    cosmic-ray exec "$config" "$session"
done
helper summary "$sessions"
