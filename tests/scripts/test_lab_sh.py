"""scripts/lab.sh's cgroup of the first pass: what the pass starts goes in at a quarter of the CPU weight, and the
cgroup goes when the run ends."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.helpers import lab_sh_functions

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ("stop_docker", "make_pass_cgroup", "in_pass_cgroup", "trap_exit", "clean_up")




def _can_make_cgroups() -> bool:
    return any(os.access(d, os.W_OK) and (Path(d) / "cgroup.procs").exists()
               for d in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup"))


def test_the_first_pass_runs_in_a_low_weight_cgroup_that_is_gone_after_the_run():
    # A child started by in_pass_cgroup (in a session of its own, as tritonserver and the dashboards start) is in
    # the cgroup; the cgroup weighs a quarter of a process; the exit trap takes it away. (In the suite this test itself runs in the
    # first pass's cgroup: the child must reach the one made here.)
    script = f"""set -euo pipefail
DOCKERD_PID=""
PASS_CGROUP=""
{lab_sh_functions(*FUNCTIONS)}
make_pass_cgroup
echo "cgroup=$PASS_CGROUP"
[ -n "$PASS_CGROUP" ] || exit 0
echo "weight=$(cat "$PASS_CGROUP/cpu.shares" 2>/dev/null || cat "$PASS_CGROUP/cpu.weight")"
(in_pass_cgroup setsid sleep 60) &
child=$!
for _ in $(seq 1 100); do grep -q "$(basename "$PASS_CGROUP")\\$" "/proc/$child/cgroup" && break; sleep 0.05; done
echo "child=$(grep -E '(^|,|:)cpu(,|:)|^0::' "/proc/$child/cgroup" | head -1)"
kill "$child"
wait "$child" || true
"""
    run = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    print(run.stdout, run.stderr)
    assert run.returncode == 0, run.stderr
    made = dict(line.split("=", 1) for line in run.stdout.splitlines() if "=" in line)
    if not _can_make_cgroups():  # no root or no cpu controller to write: the passes run one after the other
        assert made == {"cgroup": ""}, made
        return
    cgroup = made["cgroup"]
    assert re.fullmatch(r"/sys/fs/cgroup(/cpu)?/tbl-first-pass-\d+", cgroup), made
    assert made["weight"] == ("256" if "/cpu/" in cgroup else "25"), made  # of 1024 (v1), of 100 (v2)
    assert made["child"].endswith(cgroup.removeprefix("/sys/fs/cgroup").removeprefix("/cpu")), made
    assert not Path(cgroup).exists(), f"{cgroup} left behind"
