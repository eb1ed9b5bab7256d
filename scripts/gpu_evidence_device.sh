#!/usr/bin/env bash
# The one prepared command for a GPU device machine (see scripts/gpu_bundle.sh): unpack the carried
# tritonserver, find a libpython3.12 for its Python backend stub, record nvidia-smi, run the capture.
#   scripts/gpu_evidence_device.sh OUT_DIR [--cpu]      (--cpu: the rehearsal on a machine without a GPU)
# The device tool brings back at most 8 files from $OUT: the capture writes 5, this script 1 (device.log).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu_evidence_device.sh OUT_DIR [--cpu]}
mkdir -p "$out"
log="$out/device.log"
py=${PYTHON:-python3}
unpacked=$(mktemp -d /tmp/tbl-gpu-bundle.XXXXXX)
(
  echo "== $(date -u +%FT%TZ) $(uname -srm); python: $($py -V 2>&1) at $(command -v "$py")"
  nvidia-smi 2>&1 || echo "(no nvidia-smi)"
  [ -f .gpu-bundle/tritonserver.tar.xz ] || { echo "no .gpu-bundle (run scripts/gpu_bundle.sh here, carry .gpu-bundle)"; exit 3; }
  # Python's tarfile and lzma unpack it (that machine's image may lack xz)
  "$py" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="tar")' \
    .gpu-bundle/tritonserver.tar.xz "$unpacked" || exit 3
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do  # the driver's NVML, for Triton's GPU metrics (DCGM)
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
  ver=$($py -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  libdir=$($py -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR") or "")')
  if ldconfig -p 2>/dev/null | grep -q "libpython$ver.so.1.0"; then
    echo "libpython$ver: the system's"
  elif [ -e "$libdir/libpython$ver.so.1.0" ]; then
    echo "libpython$ver: $libdir"; export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  elif [ -e .gpu-bundle/libpython3.12.so.1.0.xz ] && [ "$ver" = 3.12 ]; then
    mkdir -p "$unpacked/libpython"
    "$py" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
      .gpu-bundle/libpython3.12.so.1.0.xz "$unpacked/libpython/libpython3.12.so.1.0"
    echo "libpython$ver: the carried one"; export LD_LIBRARY_PATH="$unpacked/libpython${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  else
    echo "libpython$ver: none found; the Python backend stub will not start"
  fi
  # A venv with the carried numpy 1.26 and prometheus-client: the capture runs on it, and so do the Python
  # backend stubs (they take the site-packages of the python3 first on PATH, the capture's own).
  if ! "$py" -m venv --without-pip "$unpacked/venv"; then  # no venv module: the same thing by hand
    base=$("$py" -c 'import sys; print(sys._base_executable)')
    mkdir -p "$unpacked/venv/bin" && ln -sf "$base" "$unpacked/venv/bin/python3" && ln -sf python3 "$unpacked/venv/bin/python" &&
      printf 'home = %s\ninclude-system-site-packages = false\nversion = %s\n' "$(dirname "$base")" "$ver" \
        > "$unpacked/venv/pyvenv.cfg" || exit 3
  fi
  site=$("$unpacked/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') && mkdir -p "$site" || exit 3
  for wheel in .gpu-bundle/*.whl; do "$py" -m zipfile -e "$wheel" "$site" || exit 3; done
  PYTHONPATH="$unpacked" TBL_STATE_DIR="$unpacked/state" \
    "$unpacked/venv/bin/python" -u scripts/capture_gpu_evidence.py "$out" "${@:2}"
  rc=$?
  echo "== capture exit status $rc"
  rm -rf "$unpacked"
  exit $rc
) > "$log" 2>&1
rc=$?
cat "$log"
exit $rc
