"""Side by side with Triton Model Analyzer on the same search space: python -m bench.vs_model_analyzer.

In one run, on a temporary copy of model_repository/, Model Analyzer 1.58 profiles gpu_sim (brute search,
local launch of the wheel's tritonserver, perf_analyzer from the tritonclient 2.51 wheel through a wrapper
that sets LD_LIBRARY_PATH), then the lab's adaptive sweep measures the same space, then the lab's twin-ranked
sweep (the twin, calibrated by a probe of a few seconds, ranks every configuration; only the top --twin-top are
measured, from the load it expects to be their best, and the top candidates twice): each wall time (with and
without starting the lab's server), its ratio to Model Analyzer's, and each choice are printed; --json writes them.

Model Analyzer is not a project dependency: the first run creates a separate venv for it under
.lab/bench/model-analyzer (same interpreter, `pip install triton-model-analyzer==1.58.0`, about 600 MB)
and later runs reuse it; the project's .venv is never touched.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from app.experiments.sweep.model_analyzer import ma_best_by_choice, ma_choice, ma_config_yaml
from app.experiments.sweep.space import Choice, SearchSpace
from app.paths import MODEL_REPOSITORY
from app.server.binary import library_dir, prepare_backends, server_binary
from app.server.free_ports import choose_ports
from bench.perf_analyzer import ensure_perf_analyzer

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MA_VERSION = "1.58.0"
MA_VENV = ROOT / ".lab" / "bench" / "model-analyzer"
PA_CACHE = HERE / "out" / "perf_analyzer"  # shared with bench.vs_perf_analyzer
# Picked from two runs of both tools (2026-11-30, gpu_sim's cost model as committed, 2 shared cores): at
# 22 ms each configuration's best load inside the budget is concurrency 8 or lower; there 2 instances with
# a 2000 µs delay led the next configuration by 16-28 % in both tools, its p99 4-6 ms under the budget and
# every concurrency-16 point 3 ms or more over it. With budgets from about 28 ms up the choice is made at
# concurrency 16, where the two 2-instance configurations were only 13-15 % apart.
DEFAULT_BUDGET_MS = 22.0


def ensure_model_analyzer(venv: Path = MA_VENV) -> Path:
    """Return the model-analyzer executable, creating its own venv on first use."""
    exe = venv / "bin" / "model-analyzer"
    if exe.is_file() and _installed_version(venv) == MA_VERSION:
        return exe
    print(f"installing triton-model-analyzer=={MA_VERSION} into {venv} (once, a few minutes)", flush=True)
    base = getattr(sys, "_base_executable", sys.executable)  # the interpreter behind the project's venv
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    f"triton-model-analyzer=={MA_VERSION}"], check=True)
    return exe


def _installed_version(venv: Path) -> str | None:
    done = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import importlib.metadata as m; print(m.version('triton-model-analyzer'))"],
                          capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def perf_analyzer_wrapper(path: Path) -> Path:
    """Write an executable script that runs the wheel's perf_analyzer with its libraries found."""
    binary, env = ensure_perf_analyzer(PA_CACHE)
    path.write_text("#!/bin/sh\n"
                    f"LD_LIBRARY_PATH={shlex.quote(env['LD_LIBRARY_PATH'])}\n"
                    "export LD_LIBRARY_PATH\n"
                    f'exec {shlex.quote(str(binary))} "$@"\n')
    path.chmod(0o755)
    return path


def run_model_analyzer(space: SearchSpace, repo: Path, work: Path, timeout_s: float) -> dict:
    """Profile the space with Model Analyzer in local launch mode; return its wall time and choice."""
    exe = ensure_model_analyzer()
    export = work / "export"
    export.mkdir(parents=True)
    output = export / "output_model_repository"  # where ma_choice looks by default
    yaml_text = ma_config_yaml(
        space, str(repo), str(output), str(export),
        triton_server_path=str(server_binary()),
        perf_analyzer_path=str(perf_analyzer_wrapper(work / "perf_analyzer")),
        backend_directory=str(prepare_backends(work / "backends")),
        venv_bin=str(Path(sys.executable).parent), library_path=str(library_dir()),
        ports=choose_ports((None, None, None)),
    )
    config = work / "profile.yaml"
    config.write_text(yaml_text)
    log = work / "model_analyzer.log"
    print(f"Model Analyzer: {len(space.choices())} configurations x {len(space.loads)} loads; log {log}", flush=True)
    t0 = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen([str(exe), "profile", "-f", str(config)], cwd=work, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout_s)
        except BaseException as exc:  # a timeout or Ctrl-C here: its own session does not see the latter
            _interrupt(proc)
            if isinstance(exc, subprocess.TimeoutExpired):
                raise RuntimeError(f"Model Analyzer ran past {timeout_s:.0f} s; see {log}") from None
            raise
    wall = time.monotonic() - t0
    if rc != 0:
        raise RuntimeError(f"Model Analyzer failed ({rc}):\n{_tail(log)}")
    choice, figures = ma_choice(export, space=space)
    return {"wall_s": wall, "choice": _choice_json(choice), "figures": figures, "yaml": yaml_text,
            "export_path": str(export), "by_choice": ma_best_by_choice(export, space)}


def as_model_analyzer_saw_it(ma: dict, choice: dict | None) -> dict | None:
    """Return how Model Analyzer's own measurements rate another tuner's choice: its best throughput inside the
    budget and the shortfall from Model Analyzer's choice (None when it measured none of it inside the budget)."""
    if choice is None or ma["choice"] is None:
        return None
    seen = next((ma["by_choice"][k] for k in _ma_names(choice["key"]) if k in ma["by_choice"]), None)
    if seen is None:
        return {"throughput_rps": None, "shortfall": None}
    return {"throughput_rps": seen["throughput_rps"], "p99_ms": seen["p99_ms"], "load": seen["load"],
            "shortfall": 1 - seen["throughput_rps"] / ma["figures"]["throughput_rps"]}


# perf_analyzer's default --stability-percentage, which Model Analyzer keeps: it calls a measurement stable once three
# in a row lie within 10 % of their mean, so two configurations its own measurements put closer than that are not
# told apart by them (its choice in this space moved between 4/5000 µs at 16, 3/0 at 16 and 3/5000 at 8 over 5 runs).
STABILITY = 0.10


def same_within_noise(ma: dict, arm: dict) -> bool | None:
    """Return whether an arm's choice is Model Analyzer's, or one its own measurements put inside the budget and
    within perf_analyzer's stability band of it; None when Model Analyzer chose nothing."""
    if ma["choice"] is None:
        return None
    if arm["choice"] == ma["choice"]:
        return True
    seen = as_model_analyzer_saw_it(ma, arm["choice"])
    return bool(seen and seen["shortfall"] is not None and seen["shortfall"] < STABILITY)


# The referee: each tuner's choice measured again, in turns, by perf_analyzer itself (Model Analyzer's measuring tool) on
# one fresh server: at the budget's edge one measurement of a point is a coin toss (3 instances without a delay at 16 in
# flight read p99 21.3 ms in Model Analyzer's run at 21:13 and 22.3 and 23.5 ms in two perf_analyzer runs after it).
REFEREE_ROUNDS = 3
REFEREE_INTERVAL_MS = 2000  # perf_analyzer's measurement window; it makes 3 or more of them a run
INPUT_SHAPE = "INPUT:256"  # gpu_sim's input


def referee_points(result: dict) -> list[dict]:
    """Return the distinct (configuration, load) points the tuners chose, each with the arms that chose it."""
    points: dict[tuple, dict] = {}
    for arm in ("model_analyzer", "lab", "lab_twin"):
        if arm not in result or result[arm]["choice"] is None:
            continue
        key = _lab_key(result[arm]["choice"]["key"])
        load = result[arm]["figures"]["load"]
        points.setdefault((key, load), {"key": key, "load": load, "label": result[arm]["choice"]["label"],
                                        "arms": []})["arms"].append(arm)
    return list(points.values())


def _lab_key(key: str) -> str:
    """Return one name for the served config: Model Analyzer's 'default' is the lab's '…-start'."""
    return "start" if key == "default" or key.endswith("-start") else key


def run_referee(space: SearchSpace, repo: Path, work: Path, points: list[dict], rounds: int = REFEREE_ROUNDS) -> dict:
    """Measure every chosen point again with perf_analyzer, in turns (A B C, A B C, …), each configuration loaded
    through the repository API on one embedded server; return each point's rounds."""
    from app.config.model_config import format_config, read_config  # noqa: PLC0415
    from app.server.embedded import EmbeddedServer, ServerOptions  # noqa: PLC0415
    from app.server.status import repository_call  # noqa: PLC0415
    from bench.perf_analyzer import run_perf_analyzer  # noqa: PLC0415

    binary, env = ensure_perf_analyzer(PA_CACHE)
    config_path = repo / space.model / "config.pbtxt"
    base_text = config_path.read_text()
    base = read_config(config_path)
    by_key = {}
    for c in space.configurations(base):  # the served config also by its knobs: Model Analyzer may name it so
        by_key.update({_lab_key(c.key): c, c.key.removesuffix("-start"): c})
    print(f"referee: {len(points)} chosen points x {rounds} perf_analyzer runs, in turns", flush=True)
    server = EmbeddedServer(ServerOptions(model_repository=repo, http_port=None, grpc_port=None, metrics_port=None,
                                          models=(space.model,), log_dir=work / "logs"))
    endpoint = server.start()
    t0 = time.monotonic()
    try:
        for point in points:
            point["rounds"] = []
        for n in range(rounds):
            for i, point in enumerate(points):
                choice = by_key[point["key"]]
                config_path.write_text(base_text if choice.start else format_config(choice.config(base)))
                repository_call(endpoint, f"/v2/repository/models/{space.model}/load", timeout_s=120)
                pa = run_perf_analyzer(binary, env, endpoint.host_port, space.model, int(point["load"]), INPUT_SHAPE,
                                       REFEREE_INTERVAL_MS, work / f"referee_{n}_{i}.csv")
                point["rounds"].append({"throughput_rps": pa["throughput_rps"], "p99_ms": pa["latency_us"]["p99"] / 1000})
                print(f"  {point['label']} at {point['load']:g}: {pa['throughput_rps']:.0f} infer/s, "
                      f"p99 {pa['latency_us']['p99'] / 1000:.1f} ms", flush=True)
    finally:
        config_path.write_text(base_text)
        server.stop()
    return {"points": points, "rounds": rounds, "wall_s": time.monotonic() - t0}


def referee_verdict(referee: dict, budget_ms: float, arm: str) -> dict | None:
    """Return how an arm's choice fared against Model Analyzer's in the referee's rounds: how many rounds each held
    the budget, their mean throughputs, and whether the arm's choice is as good as Model Analyzer's — the same point;
    or inside the budget in every round while Model Analyzer's was over it in one or more (its choice was the budget's
    coin toss); or inside it in as many rounds as Model Analyzer's (every one, or as few) and its mean less than
    perf_analyzer's stability band below. None when either tuner chose nothing."""
    ma = next((p for p in referee["points"] if "model_analyzer" in p["arms"]), None)
    mine = next((p for p in referee["points"] if arm in p["arms"]), None)
    if ma is None or mine is None:
        return None

    def held(point) -> int:
        return sum(r["p99_ms"] <= budget_ms for r in point["rounds"])

    def mean(point) -> float:
        return sum(r["throughput_rps"] for r in point["rounds"]) / len(point["rounds"])

    n = len(mine["rounds"])
    shortfall = 1 - mean(mine) / mean(ma)
    as_good = (mine is ma or (held(mine) == n and held(ma) < n)
               or (held(mine) >= held(ma) and shortfall < STABILITY))
    return {"rounds": n, "held": held(mine), "ma_held": held(ma), "throughput_rps": mean(mine),
            "ma_throughput_rps": mean(ma), "shortfall": shortfall, "as_good_as_ma": as_good}


def _interrupt(proc: subprocess.Popen) -> None:
    """Stop the Model Analyzer we started: SIGINT first, so it stops the tritonserver it launched."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def run_lab_sweep(space: SearchSpace, repo: Path, work: Path, twin_top: int = 0) -> dict:
    """Sweep the same space through the lab (an embedded tritonserver on the copy), every configuration or the
    twin's top ones; return its wall time and choice."""
    from app.experiments.sweep.sweeper import SweepOptions, run_sweep  # noqa: PLC0415 - the lab's sweep
    from app.lab.root import Lab  # noqa: PLC0415

    os.environ["TBL_STATE_DIR"] = str(work / "state")  # the experiment store goes with the temporary copy
    print(f"lab sweep: {space.points()} points at most (adaptive={space.adaptive}, twin_top={twin_top})", flush=True)
    t0 = time.monotonic()
    lab = Lab.create({"TBL_MODEL_REPOSITORY": str(repo)})
    try:
        result = run_sweep(lab, space, label="bench", options=SweepOptions(twin_top=twin_top))
    finally:
        lab.close()
    wall = time.monotonic() - t0
    best = result.best
    figures = None
    if best is not None:
        figures = {"throughput_rps": best.get("throughput_rps"), "goodput_rps": best.get("goodput_rps"),
                   "p99_ms": best.get("p99_ms"), "load": best.load}
    return {"wall_s": wall, "sweep_wall_s": result.wall_s, "status": result.status, "note": result.note,
            "measurements": len(result.points), "choice": _choice_json(best.choice if best else None),
            "figures": figures, "skipped": result.skipped,
            "measured": sorted({p.choice.key for p in result.points}),
            "recommendation": result.recommendation.to_dict() if result.recommendation is not None else None}


def measured_ma_choice(ma: dict, lab: dict) -> bool | None:
    """Return whether a lab sweep measured Model Analyzer's choice (its served config, 'default' to Model Analyzer,
    is the lab's '…-start'); None when Model Analyzer chose nothing. A twin-ranked sweep that did measure it can
    differ from Model Analyzer only by what the two measured, not by what the twin left out."""
    if ma["choice"] is None:
        return None
    return any(ma["choice"]["key"] in _ma_names(m) for m in lab["measured"])


def _ma_names(key: str) -> tuple[str, ...]:
    """Return what Model Analyzer may call a lab choice: its key, and for the served config ('…-start') 'default'."""
    return (key, "default") if key.endswith("-start") else (key,)


def _choice_json(choice: Choice | None) -> dict | None:
    return None if choice is None else {"key": choice.key, "label": choice.label}


def copy_repository(dest: Path) -> Path:
    """Copy model_repository/ (code and configs, not caches) to dest; the checkout's copy is never touched."""
    shutil.copytree(MODEL_REPOSITORY, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


SPACES = {"small": ((1, 2), (0, 2000)), "large": ((1, 2, 3, 4), (0, 500, 2000, 5000))}


def main(argv: list[str] | None = None) -> int:
    """Run Model Analyzer and the lab's sweep on the same space; print and save both."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget-ms", type=float, default=DEFAULT_BUDGET_MS, help="p99 budget of both tuners")
    p.add_argument("--keep", type=Path, help="work in this (new or empty) folder and keep it")
    p.add_argument("--json", type=Path, help="write the figures here")
    p.add_argument("--ma-only", action="store_true", help="run Model Analyzer alone")
    p.add_argument("--timeout", type=float, default=1800.0, help="limit of the Model Analyzer run, seconds")
    p.add_argument("--twin-top", type=int, default=2, help="configurations the twin-ranked sweep measures")
    p.add_argument("--referee-rounds", type=int, default=REFEREE_ROUNDS,
                   help="after the tuners, measure each one's choice again this many times with perf_analyzer, in "
                        "turns (0: not)")
    p.add_argument("--space", choices=sorted(SPACES), default="small",
                   help="small: 2 instance counts x 2 delays + the served config (5 configurations); large: 4 x 4 + "
                        "the served config (17): Model Analyzer measures every point, the twin-ranked sweep the top")
    args = p.parse_args(argv)
    instances, delays = SPACES[args.space]
    space = SearchSpace(model="gpu_sim", instances=instances, delays_us=delays, include_default=True,
                        loads=(1, 2, 4, 8, 16), p99_budget_ms=args.budget_ms)
    work = _work_dir(args.keep)
    try:
        repo = copy_repository(work / "model_repository")
        result = {"measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "space": space.to_dict(),
                  "model_analyzer": run_model_analyzer(space, repo, work / "ma", args.timeout)}
        if not args.ma_only:
            ma_wall = result["model_analyzer"]["wall_s"]
            for arm, top in (("lab", 0), ("lab_twin", args.twin_top)):
                result[arm] = run_lab_sweep(space, repo, work / arm, twin_top=top)
                result[arm]["ratio"] = result[arm]["wall_s"] / ma_wall
                result[arm]["study_ratio"] = result[arm]["sweep_wall_s"] / ma_wall
                result[arm]["agree"] = result[arm]["choice"] == result["model_analyzer"]["choice"]
                result[arm]["as_model_analyzer_saw_it"] = as_model_analyzer_saw_it(result["model_analyzer"],
                                                                                   result[arm]["choice"])
                result[arm]["measured_ma_choice"] = measured_ma_choice(result["model_analyzer"], result[arm])
                result[arm]["same_within_noise"] = same_within_noise(result["model_analyzer"], result[arm])
            # what the twin's pruning changed: the twin-ranked sweep against the lab's own full one, same engine
            result["lab_twin"]["agree_with_full_sweep"] = result["lab_twin"]["choice"] == result["lab"]["choice"]
            if args.referee_rounds:
                result["referee"] = run_referee(space, repo, work / "referee", referee_points(result),
                                                args.referee_rounds)
                for arm in ("lab", "lab_twin"):
                    result[arm]["referee"] = referee_verdict(result["referee"], space.p99_budget_ms, arm)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    _print(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


def _work_dir(keep: Path | None) -> Path:
    if keep is None:
        return Path(tempfile.mkdtemp(prefix="tbl-vs-ma-"))
    keep.mkdir(parents=True, exist_ok=True)
    if any(keep.iterdir()):
        raise SystemExit(f"--keep {keep}: the folder is not empty")
    return keep.resolve()


def _print(result: dict) -> None:
    budget = result["space"]["p99_budget_ms"]
    ma = result["model_analyzer"]
    print(f"p99 budget {budget:g} ms")
    print(f"Model Analyzer: {ma['wall_s']:.1f} s, {ma['figures']['measurements']} measurements -> "
          f"{_describe(ma['choice'], ma['figures'])}")
    for arm, name in (("lab", "lab sweep (adaptive)"), ("lab_twin", "lab sweep (twin-ranked)")):
        if arm not in result:
            continue
        lab = result[arm]
        print(f"{name}: {lab['wall_s']:.1f} s (the study {lab['sweep_wall_s']:.1f} s, {lab['status']}), "
              f"{lab['measurements']} measurements -> {_describe(lab['choice'], lab['figures'])}")
        print(f"  ratio to Model Analyzer: {lab['ratio']:.3f} with the server's start, {lab['study_ratio']:.3f} the "
              f"study alone; choices {'agree' if lab['agree'] else 'DIFFER'}")
        print(f"  measured Model Analyzer's choice: {'yes' if lab.get('measured_ma_choice') else 'no'}"
              + (f"; the same choice as the full sweep: {'yes' if lab['agree_with_full_sweep'] else 'NO'}"
                 if "agree_with_full_sweep" in lab else ""))
        seen = lab.get("as_model_analyzer_saw_it")
        if not lab["agree"] and seen:
            print("  Model Analyzer's own measurements of that choice: " + (
                "none inside the budget" if seen["throughput_rps"] is None else
                f"{seen['throughput_rps']:.0f} infer/s at load {seen['load']:g} (p99 {seen['p99_ms']:.1f} ms), "
                f"{_below(seen['shortfall'])} its own choice"))
        if "same_within_noise" in lab:
            print(f"  the same choice within Model Analyzer's noise (its measurements {STABILITY:.0%} apart or "
                  f"closer): {'yes' if lab['same_within_noise'] else 'NO'}")
        verdict = lab.get("referee")
        if verdict:
            print(f"  measured again by perf_analyzer, {verdict['rounds']} rounds in turns: inside the budget in "
                  f"{verdict['held']} (Model Analyzer's choice: {verdict['ma_held']}), {verdict['throughput_rps']:.0f} "
                  f"against {verdict['ma_throughput_rps']:.0f} infer/s ({_below(verdict['shortfall'])}); as good "
                  f"as Model Analyzer's choice: {'yes' if verdict['as_good_as_ma'] else 'NO'}")


def _below(shortfall: float) -> str:
    """Return a shortfall (a fraction of Model Analyzer's throughput; under 0: above it) in words."""
    return f"{abs(shortfall):.1%} {'below' if shortfall >= 0 else 'above'}"


def _describe(choice: dict | None, figures: dict | None) -> str:
    if choice is None:
        return "nothing met the budget"
    return (f"{choice['label']} ({choice['key']}): {figures['throughput_rps']:.0f} infer/s at load "
            f"{figures['load']:g}, p99 {figures['p99_ms']:.1f} ms")


if __name__ == "__main__":
    sys.exit(main())
