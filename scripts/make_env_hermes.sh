#!/usr/bin/env bash
# Create the hermes-agent virtualenv from the pinned set (scripts/requirements/hermes.txt), with
# this checkout installed editable and without dependencies (hermes pins exact versions of openai
# and others; the pinned file already holds what the suite needs).
#
#   scripts/make_env_hermes.sh                 # → /work/venv-hermes (or $AKC_HERMES_VENV)
#   scripts/make_env_hermes.sh /path/to/venv
#
# Then: akc run --adapter 'stdio:/path/to/venv/bin/python -m conformance.adapters.hermes'
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
env="${1:-${AKC_HERMES_VENV:-/work/venv-hermes}}"
python="${AKC_PYTHON:-python3}"
"$python" -m venv "$env"
"$env/bin/pip" install -q --disable-pip-version-check -r "$here/requirements/hermes.txt"
"$env/bin/pip" install -q --disable-pip-version-check --no-deps -e "$repo"
"$env/bin/pip" check
echo "make_env_hermes: ready: $env (adapter: stdio:$env/bin/python -m conformance.adapters.hermes)"
