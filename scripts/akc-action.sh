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
#   AKC_ARGS      further `akc run` arguments, split on spaces (e.g. "--backend trio")
#   AKC           the akc command (default: akc)
#   GITHUB_STEP_SUMMARY  the step summary file (GitHub sets it; elsewhere, unset or any path)
set -uo pipefail

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
# shellcheck disable=SC2206  # AKC_ARGS is split on purpose
[ -n "${AKC_ARGS:-}" ] && args+=(${AKC_ARGS})

read -r -a akc <<< "${AKC:-akc}"
"${akc[@]}" "${args[@]}"
code=$?

if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -s "$summary" ]; then
  cat "$summary" >> "$GITHUB_STEP_SUMMARY"
fi
exit "$code"
