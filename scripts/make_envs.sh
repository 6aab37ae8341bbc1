#!/usr/bin/env bash
# Create (or refresh) one virtualenv per third-party kernel adapter, from the pinned
# requirement files in scripts/requirements/<kernel>.txt, with this checkout installed editable.
# `akc matrix` runs each kernel's suite inside its own env (the frameworks pull many dependencies
# and must not leak into the project's own environment).
#
#   scripts/make_envs.sh                 # every kernel with a requirement file
#   scripts/make_envs.sh pydantic-ai     # only these
#
# Envs go to $AKC_ENVS_DIR/<kernel> (default ~/.cache/akc/envs). An env whose requirement file
# has not changed since it was made is kept as it is (a stamp file holds the file's hash).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
envs="${AKC_ENVS_DIR:-$HOME/.cache/akc/envs}"
python="${AKC_PYTHON:-python3}"
mkdir -p "$envs"
kernels=("$@")
if [ ${#kernels[@]} -eq 0 ]; then
  for f in "$here"/requirements/*.txt; do kernels+=("$(basename "$f" .txt)"); done
fi
build() {  # build one kernel's env; its exit status says whether it is ready
  local k="$1" req="$here/requirements/$1.txt" env="$envs/$1"
  local stamp="$env/.akc-requirements.sha256" want start
  if [ ! -f "$req" ]; then echo "make_envs: no requirement file for '$k' ($req)" >&2; return 2; fi
  want="$(cat "$req" "$repo/pyproject.toml" | sha256sum | cut -d' ' -f1)"
  if [ -x "$env/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "make_envs: $k: up to date ($env)"; return 0
  fi
  echo "make_envs: $k: creating $env"
  start=$(date +%s)
  rm -rf "$env"
  if "$python" -m venv "$env" \
     && "$env/bin/pip" install -q --disable-pip-version-check -e "$repo" -r "$req" 2>&1 \
        | grep -v "^WARNING: Location '.*' is ignored" >&2; \
     [ "${PIPESTATUS[0]}" -eq 0 ] && [ -x "$env/bin/python" ]; then
    echo "$want" > "$stamp"
    echo "make_envs: $k: ready in $(( $(date +%s) - start ))s"
  else
    echo "make_envs: $k: install FAILED (akc matrix will list it as not installed)" >&2
    rm -rf "$env"; return 1
  fi
}

# The installs run side by side (each is mostly waiting on the network).
pids=()
for k in "${kernels[@]}"; do build "$k" & pids+=($!); done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit $status
