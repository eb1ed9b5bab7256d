#!/usr/bin/env bash
# Set up .venv from requirements.txt (only when it changed), then run the dashboard or the tests.
#   scripts/lab.sh app    open the dashboard on the embedded tritonserver (127.0.0.1)
#   scripts/lab.sh test   run the whole test suite (installs Debian chromium and prometheus when missing)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3

setup_venv() {
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  local stamp=.venv/.requirements.sha256 want
  want=$(sha256sum requirements.txt | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
    .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
    echo "$want" > "$stamp"
  fi
}

ensure_test_packages() {
  local missing=()
  [ -x /usr/bin/chromium ] || missing+=(chromium)      # browser tests
  [ -x /usr/bin/prometheus ] || missing+=(prometheus)  # Prometheus as the metrics source
  [ ${#missing[@]} = 0 ] && return
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Debian ${missing[*]} for the tests..."
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "note: missing ${missing[*]} (apt-get install ${missing[*]}); those tests will be skipped (and fail with CI=true)" >&2
  fi
}

case "${1:-}" in
  app)
    setup_venv
    exec .venv/bin/python -m streamlit run streamlit_app.py --server.address 127.0.0.1 "${@:2}"
    ;;
  test)
    setup_venv
    ensure_test_packages
    exec .venv/bin/python -m pytest "${@:2}"
    ;;
  *)
    echo "usage: scripts/lab.sh app|test [args...]" >&2
    exit 2
    ;;
esac
