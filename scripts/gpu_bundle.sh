#!/usr/bin/env bash
# Make .gpu-bundle/: what the GPU device machine needs to run scripts/capture_gpu_evidence.py and has not.
# That machine reaches no registry and carries at most 64 MiB per call; its Python is 3.12 with numpy and
# prometheus-client but no tritonserver. The bundle holds the nvidia-pytriton wheel's tritonserver, its
# Python backend with the 3.12 stub only, its bundled libraries (less the 3.13 stub's libpython) and an
# empty `pytriton` package that lets app.server.binary find them; the wheels of numpy 1.26.4 and
# prometheus-client for Python 3.12, for a venv of the stub's own (the device has numpy 2, with which this
# stub's output tensors come out the wrong size: "output tensor shape does not match size of output", seen
# in the rehearsal; the stub ignores PYTHONPATH and takes the site-packages of the python3 first on PATH);
# and, as a fallback for a machine whose Python has no shared libpython3.12, this machine's pyenv one.
# Run it here, after the Quick start setup:
#   scripts/gpu_bundle.sh          (about a minute; prints the size)
# then, on the device machine (carry: .gpu-bundle):  scripts/gpu_evidence_device.sh "$OUT"
set -euo pipefail
cd "$(dirname "$0")/.."
site=$(.venv/bin/python -c 'import pytriton, pathlib; print(pathlib.Path(pytriton.__file__).resolve().parent.parent)')
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/tree/pytriton/tritonserver/python_backend_stubs" "$stage/tree/nvidia_pytriton.libs"
for part in bin backends caches; do cp -r "$site/pytriton/tritonserver/$part" "$stage/tree/pytriton/tritonserver/"; done
cp -r "$site/pytriton/tritonserver/python_backend_stubs/3.12" "$stage/tree/pytriton/tritonserver/python_backend_stubs/"
for lib in "$site"/nvidia_pytriton.libs/*; do
  case "$(basename "$lib")" in libpython3-*) ;; *) cp "$lib" "$stage/tree/nvidia_pytriton.libs/" ;; esac
done
printf '"""The carried tritonserver of the nvidia-pytriton wheel (scripts/gpu_bundle.sh); no PyTriton API."""\n' \
  > "$stage/tree/pytriton/__init__.py"
find "$stage/tree" -name __pycache__ -prune -exec rm -rf {} +
rm -rf .gpu-bundle && mkdir -p .gpu-bundle
tar -C "$stage/tree" -cf - pytriton nvidia_pytriton.libs | xz -T0 -6 > .gpu-bundle/tritonserver.tar.xz
.venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .gpu-bundle numpy==1.26.4
.venv/bin/python -m pip download -q --no-deps --only-binary=:all: -d .gpu-bundle \
  "prometheus-client==$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("prometheus-client"))')"
libpy=
for py in python3.12 "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12; do
  libpy=$("$py" -c 'import sysconfig, os; p = os.path.join(sysconfig.get_config_var("LIBDIR") or "", "libpython3.12.so.1.0"); print(p if os.path.exists(p) else "")' 2>/dev/null) || true
  [ -n "$libpy" ] && break
done
if [ -n "$libpy" ]; then xz -T0 -6 -c "$libpy" > .gpu-bundle/libpython3.12.so.1.0.xz
else echo "note: no shared libpython3.12 here to carry as a fallback (the device's own is used when it has one)" >&2; fi
du -b .gpu-bundle/* | awk '{printf "%8.1f MiB  %s\n", $1 / 1048576, $2; s += $1} END {printf "%8.1f MiB  in all (a device call carries 64 MiB with the working tree)\n", s / 1048576}'
