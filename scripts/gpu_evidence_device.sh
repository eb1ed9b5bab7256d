#!/usr/bin/env bash
# The one prepared command for a GPU device machine (the bundle: scripts/gpu_bundle.sh, run here first):
#   scripts/gpu_evidence_device.sh OUT_DIR [--cpu]      (--cpu: the rehearsal, on a machine without a GPU)
# It unpacks the carried server and Python runtime, records nvidia-smi, and runs the capture on the carried
# Python within 180 s (the rehearsal takes 18 s; the rest of a session's device time is for a second try).
# Exit status: the capture's (0 done, 1 a step failed, 2 the GPU configs did not load, 4 no GPU reported),
# 3 the bundle is missing, 5 the 180 s bound was reached. The device tool brings back at most 8 files from
# $OUT: the capture writes 6, this script 1 (device.log).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu_evidence_device.sh OUT_DIR [--cpu]}
mkdir -p "$out" || exit 3
log="$out/device.log"
unpacked=$(mktemp -d /tmp/tbl-gpu-bundle.XXXXXX) || exit 3
trap 'rm -rf "$unpacked"' EXIT
(
  export PATH="$PATH:/usr/local/nvidia/bin"
  for d in /usr/local/nvidia/lib /usr/local/nvidia/lib64; do  # the driver's NVML, for Triton's GPU metrics (DCGM)
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
  echo "== $(date -u +%FT%TZ) $(uname -srm)"
  nvidia-smi 2>&1 || echo "(nvidia-smi: none, or it failed)"
  for part in server python; do
    [ -f ".gpu-bundle/$part.tar.xz" ] || { echo "no .gpu-bundle/$part.tar.xz: run scripts/gpu_bundle.sh here and carry .gpu-bundle"; exit 3; }
  done
  # Any python3 unpacks (tarfile and lzma; the image may lack xz); the capture runs on the carried one.
  python3 -c 'import sys, tarfile
for part in ("server", "python"):
    tarfile.open(f".gpu-bundle/{part}.tar.xz").extractall(sys.argv[1], filter="tar")' "$unpacked" || exit 3
  export LD_LIBRARY_PATH="$unpacked/python/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost
  unset PYTHONHOME
  export PYTHONNOUSERSITE=1
  # a module whose system library is missing shows up here by name
  echo "== python: $("$unpacked/python/bin/python3" -c 'import sys, ctypes, socket, json, urllib.request, numpy
print(sys.version.split()[0], "numpy", numpy.__version__)')"
  PYTHONPATH="$unpacked/server" TBL_STATE_DIR="$unpacked/state" \
    timeout -k 10 180 "$unpacked/python/bin/python3" -u scripts/capture_gpu_evidence.py "$out" "${@:2}"
  rc=$?
  case $rc in 124|137) rc=5 ;; esac  # not the device tool's own 124/137 (its limit)
  echo "== capture exit status $rc"
  exit $rc
) > "$log" 2>&1
rc=$?
cat "$log"
exit $rc
