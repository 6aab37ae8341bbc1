#!/usr/bin/env bash
# The shell part of the composite action (action.yml), runnable anywhere: certify a kernel with
# `akc run`, write the JUnit report, append the Markdown summary to the CI step summary, and exit
# with akc's own code (0 conformant or as expected, 1 a new failure, 2 usage error, 3 incomplete).
#
# Inputs (environment):
#   AKC_ADAPTER   the adapter: pkg.module:factory or stdio:CMD (required)
#   AKC_PROFILE   kernel | commonagent | both (default: what the adapter claims)
#   AKC_EXPECT    an expectations file (akc run --write-expectations) to gate on regressions
#   AKC_STRICT    "true": stale expectations and failing SHOULD/MAY fail the run
#   AKC_JUNIT     where to write the JUnit report (default: akc-junit.xml)
#   AKC_ARGS      further `akc run` arguments: one per line, or on one line shell-quoted
#                 (e.g. "--backend trio", or --markdown "my summary.md")
#   AKC           the akc command (default: akc)
#   GITHUB_STEP_SUMMARY  the step summary file (GitHub sets it; elsewhere, unset or any path)
#
# `akc-action.sh --artifact-name` prints the default name of the JUnit artifact instead: unique
# per matrix cell (job, profile, kernel adapter, suite version: AKC_SUITE_REF), in the characters
# upload-artifact accepts.
set -uo pipefail

if [ "${1:-}" = "--artifact-name" ]; then
  raw="akc-junit-${GITHUB_JOB:-job}-${AKC_PROFILE:-claimed}-${AKC_ADAPTER:-kernel}-${AKC_SUITE_REF:-local}"
  # upload-artifact@v4 rejects " : < > | * ? \ / and CR/LF; keep names short and readable
  printf '%s\n' "$raw" | tr -c 'A-Za-z0-9._\n-' '_' | cut -c1-200
  exit 0
fi

if [ -z "${AKC_ADAPTER:-}" ]; then
  echo "akc-action: set AKC_ADAPTER (the action's 'adapter' input): pkg.module:factory or stdio:CMD" >&2
  exit 2
fi

args=(run --adapter "$AKC_ADAPTER" --junit "${AKC_JUNIT:-akc-junit.xml}")
[ -n "${AKC_PROFILE:-}" ] && args+=(--profile "$AKC_PROFILE")
[ -n "${AKC_EXPECT:-}" ] && args+=(--expect "$AKC_EXPECT")
[ "${AKC_STRICT:-false}" = "true" ] && args+=(--strict)
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
args+=(--markdown "$summary")
if [ -n "${AKC_ARGS:-}" ]; then
  # one argument per line, or one shell-quoted line: parsed, never evaluated
  if ! mapfile -d '' -t extra < <(python3 - "$AKC_ARGS" <<'PY'
import shlex, sys
text = sys.argv[1]
parts = [line for line in text.splitlines() if line.strip()] if "\n" in text.strip() else shlex.split(text)
sys.stdout.write("".join(p + "\0" for p in parts))
PY
  ) || [ ${#extra[@]} -eq 0 ]; then
    echo "akc-action: cannot parse AKC_ARGS (the action's 'args' input): one argument per line, or shell quoting" >&2
    exit 2
  fi
  args+=("${extra[@]}")
fi

read -r -a akc <<< "${AKC:-akc}"
"${akc[@]}" "${args[@]}"
code=$?

if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -s "$summary" ]; then
  cat "$summary" >> "$GITHUB_STEP_SUMMARY"
fi
exit "$code"
