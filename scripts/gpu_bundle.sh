#!/usr/bin/env bash
# Make .gpu-bundle/: everything the GPU device machine needs to run scripts/capture_gpu_evidence.py and lacks.
# That machine reaches no registry and carries at most 64 MiB per call (bundle + working tree); its Python
# is 3.12 with numpy 2, with which this wheel's Python backend stub answers with wrong-sized output tensors
# ("output tensor shape does not match size of output", seen in a rehearsal), and its libpython may be
# missing or a distribution's (modules built in, not in lib-dynload). So the bundle brings its own runtime:
#   server.tar.xz  the nvidia-pytriton wheel's tritonserver, its Python backend with the 3.12 stub only, its
#                  bundled libraries (less the 3.13 stub's libpython) and an empty `pytriton` package that
#                  lets app.server.binary find them;
#   python.tar.xz  this machine's CPython 3.12 (pyenv: interpreter, libpython, the standard library less
#                  tests, IDLE, Tk and the static library) with numpy 1.26.4 and prometheus-client in its
#                  site-packages. The capture runs on it, and so do the stubs (they take the python3 first
#                  on PATH, which the embedded server sets to the capture's own).
# Run it here after the Quick start setup (about a minute):  scripts/gpu_bundle.sh
# then on the device machine, carrying .gpu-bundle:          scripts/gpu_evidence_device.sh "$OUT"
set -euo pipefail
cd "$(dirname "$0")/.."
site=$(.venv/bin/python -c 'import pytriton, pathlib; print(pathlib.Path(pytriton.__file__).resolve().parent.parent)')
py312=
for candidate in python3.12 "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12; do
  if "$candidate" -c 'import sys, sysconfig; sys.exit(not sysconfig.get_config_var("Py_ENABLE_SHARED"))' 2>/dev/null; then
    py312=$candidate; break
  fi
done
[ -n "$py312" ] || { echo "no CPython 3.12 built with a shared libpython here (pyenv install 3.12)" >&2; exit 1; }
prefix=$("$py312" -c 'import sys; print(sys.base_prefix)')
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# the server
srv="$stage/server"
mkdir -p "$srv/pytriton/tritonserver/python_backend_stubs" "$srv/nvidia_pytriton.libs"
for part in bin backends caches; do cp -r "$site/pytriton/tritonserver/$part" "$srv/pytriton/tritonserver/"; done
cp -r "$site/pytriton/tritonserver/python_backend_stubs/3.12" "$srv/pytriton/tritonserver/python_backend_stubs/"
for lib in "$site"/nvidia_pytriton.libs/*; do
  case "$(basename "$lib")" in libpython3-*) ;; *) cp "$lib" "$srv/nvidia_pytriton.libs/" ;; esac
done
printf '"""The carried tritonserver of the nvidia-pytriton wheel (scripts/gpu_bundle.sh); no PyTriton API."""\n' \
  > "$srv/pytriton/__init__.py"

# the Python runtime, with numpy 1.26.4 and prometheus-client in its site-packages
rt="$stage/python"
mkdir -p "$rt/bin" "$rt/lib"
cp "$prefix/bin/python3.12" "$rt/bin/" && ln -s python3.12 "$rt/bin/python3" && ln -s python3.12 "$rt/bin/python"
cp "$prefix/lib/libpython3.12.so.1.0" "$rt/lib/"
libffi=$(ldd "$prefix/lib/python3.12/lib-dynload/_ctypes.cpython-312-x86_64-linux-gnu.so" | awk '/libffi/ {print $3}')
[ -n "$libffi" ] && cp -L "$libffi" "$rt/lib/"  # ctypes (the server launcher) needs it; 40 KB, in case the image lacks it
(cd "$prefix/lib" && tar -cf - --exclude='python3.12/test' --exclude='python3.12/idlelib' \
  --exclude='python3.12/tkinter' --exclude='python3.12/turtledemo' --exclude='python3.12/ensurepip' \
  --exclude='python3.12/lib2to3' --exclude='python3.12/config-3.12-*' --exclude='python3.12/site-packages/*' \
  --exclude='__pycache__' --exclude='lib-dynload/_test*' --exclude='lib-dynload/_tkinter*' \
  --exclude='lib-dynload/xx*' --exclude='lib-dynload/_ctypes_test*' python3.12) | tar -C "$rt/lib" -xf -
mkdir -p "$rt/lib/python3.12/site-packages"
.venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$stage/wheels" numpy==1.26.4 \
  "prometheus-client==$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("prometheus-client"))')"
for wheel in "$stage"/wheels/*.whl; do "$py312" -m zipfile -e "$wheel" "$rt/lib/python3.12/site-packages"; done
find "$rt/lib/python3.12/site-packages/numpy" -type d -name tests -prune -exec rm -rf {} +
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
"$rt/bin/python3" -c 'import numpy, prometheus_client, json, urllib.request, struct, math; assert numpy.__version__ == "1.26.4"'

mkdir -p "$stage/bundle"
tar -C "$stage" -cf - server | xz -T0 -6 > "$stage/bundle/server.tar.xz"
tar -C "$stage" -cf - python | xz -T0 -6 > "$stage/bundle/python.tar.xz"
rm -rf .gpu-bundle && mv "$stage/bundle" .gpu-bundle
du -b .gpu-bundle/* | awk '{printf "%8.1f MiB  %s\n", $1 / 1048576, $2; s += $1} END {printf "%8.1f MiB  in all (a device call carries 64 MiB with the working tree)\n", s / 1048576}'
