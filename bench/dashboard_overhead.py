"""What the dashboard costs the machine it measures: python -m bench.dashboard_overhead.

A real tritonserver, the dashboard (Streamlit, remote mode) and Debian's Chromium on a live page.
Phases (each --seconds long), CPU read from /proc for the Streamlit process and for Chromium:
  idle        the page open, no traffic
  traffic     the page open, closed-loop traffic started from the page (the generator runs in its worker
              process, a child of Streamlit's, measured apart: worker_pct)
  viewers     (with --viewers N) the same traffic with N demo viewers (/demo) open beside the page: what
              each more session costs, now that sessions share one computed frame per second
  loadgen_alone  the same traffic from `python -m loadgen` in its own process, no page open
Reported: the dashboard's own work in % of one core (idle; under traffic, the records it takes in included),
the worker's, Chromium's, and the generator's throughput with the page open / without.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from app.paths import MODEL_REPOSITORY, ROOT
from app.server.embedded import EmbeddedServer, ServerOptions
from app.server.free_ports import free_port

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """Return user+system CPU seconds of the processes (and the threads inside them)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def children(pid: int) -> list[int]:
    """Return pid and all its descendants (those any of its threads started: the lab's servers are forked by a
    launcher thread, and /proc lists a child under the thread that forked it)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        kids = []
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids += (task / "children").read_text().split()
            except OSError:
                pass
        todo += [int(k) for k in kids]
    return out


def measure(seconds: float, pids_fn) -> float:
    """Return the % of one core the processes used over `seconds`."""
    before, t0 = cpu_seconds(pids_fn()), time.monotonic()
    time.sleep(seconds)
    return 100.0 * (cpu_seconds(pids_fn()) - before) / (time.monotonic() - t0)


def main(argv: list[str] | None = None) -> int:
    """Run the three phases and print the figures."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--page", default="dynamic_batching")
    p.add_argument("--viewers", type=int, default=0, help="demo viewers to open in a last traffic phase")
    p.add_argument("--json", type=Path)
    p.add_argument("--profile", type=Path, help="py-spy top-functions summary of Streamlit during traffic (needs py-spy)")
    args = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="tbl-overhead-"))
    shutil.copytree(MODEL_REPOSITORY, tmp / "repo")
    server = EmbeddedServer(ServerOptions(model_repository=tmp / "repo", http_port=None, grpc_port=None,
                                          metrics_port=None, log_dir=tmp))
    endpoint = server.start()
    port = free_port()
    env = {**os.environ, "TRITON_URL": endpoint.http_url, "TRITON_GRPC_URL": endpoint.grpc_url,
           "TRITON_METRICS_URL": endpoint.metrics_url, "TRITON_MODEL_REPOSITORY": str(tmp / "repo"),
           "TBL_STATE_DIR": str(tmp / "state"), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
           "TBL_DUMPABLE": "1" if args.profile else "0"}  # py-spy reads the dashboard's memory
    app = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.port", str(port),
                            "--server.headless", "true", "--server.fileWatcherType", "none"], cwd=ROOT, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    result: dict = {}
    try:
        from playwright.sync_api import sync_playwright  # noqa: PLC0415

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            chromium_pid = next(p for p in children(os.getpid()) if "chrom" in _cmd(p))
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/{args.page}", timeout=120_000)
            page.get_by_role("button", name="Start traffic").wait_for(timeout=120_000)
            time.sleep(10)  # the first draws
            result["idle_dashboard_pct"] = measure(args.seconds, lambda: [app.pid])
            result["idle_chromium_pct"] = measure(args.seconds / 4, lambda: children(chromium_pid))
            slider = page.locator('[data-testid="stSlider"]', has_text="Concurrency").get_by_role("slider")
            slider.focus()
            for _ in range(args.concurrency - 16):
                slider.press("ArrowRight")
            page.get_by_role("button", name="Start traffic").click()
            page.get_by_role("button", name="Stop traffic").wait_for(timeout=30_000)
            time.sleep(5)
            if args.profile:
                subprocess.run(["py-spy", "record", "-p", str(app.pid), "-d", "20", "-f", "raw", "-o",
                                str(args.profile), "-r", "50"], check=False, capture_output=True)
            t0, done0 = time.monotonic(), _requests(endpoint)
            worker = next(p for p in children(app.pid) if "loadgen" in _cmd(p) and "worker" in _cmd(p))
            result["traffic_streamlit_pct"] = measure(args.seconds, lambda: [app.pid])
            result["worker_pct"] = measure(args.seconds / 4, lambda: [worker])
            result["with_page_rps"] = (_requests(endpoint) - done0) / (time.monotonic() - t0)
            result["traffic_chromium_pct"] = measure(args.seconds / 4, lambda: children(chromium_pid))
            if args.viewers:
                demos = [browser.new_page(viewport={"width": 1400, "height": 1000}) for _ in range(args.viewers)]
                for demo in demos:
                    demo.goto(f"http://127.0.0.1:{port}/demo", timeout=120_000)
                    demo.locator('[data-testid="stVegaLiteChart"]').first.wait_for(timeout=120_000)
                time.sleep(10)
                if args.profile:
                    subprocess.run(["py-spy", "record", "-p", str(app.pid), "-d", "20", "-f", "raw", "-o",
                                    str(args.profile.with_suffix(".viewers.txt")), "-r", "50"],
                                   check=False, capture_output=True)
                result["viewers"] = args.viewers
                result["viewers_streamlit_pct"] = measure(args.seconds, lambda: [app.pid])
                result["per_viewer_pct"] = (result["viewers_streamlit_pct"] - result["traffic_streamlit_pct"]) / args.viewers
                for demo in demos:
                    demo.close()
            page.get_by_role("button", name="Stop traffic").click()
            start = page.get_by_role("button", name="Start traffic")
            deadline = time.monotonic() + 30  # the page's traffic must have stopped before the standalone phase
            while not (start.count() and start.is_enabled()) and time.monotonic() < deadline:
                time.sleep(0.2)
            if not start.is_enabled():
                raise RuntimeError("the dashboard's traffic did not stop: the standalone figure would count both")
            page.close()
            browser.close()
        gen = subprocess.Popen([sys.executable, "-m", "loadgen", "run", "--url", endpoint.http_url, "--model",
                                "gpu_sim", "--concurrency", str(args.concurrency), "--duration",
                                str(args.seconds + 10), "--quiet"], cwd=ROOT)
        time.sleep(5)
        t0, done0 = time.monotonic(), _requests(endpoint)
        result["loadgen_alone_pct"] = measure(args.seconds, lambda: [gen.pid])
        result["without_page_rps"] = (_requests(endpoint) - done0) / (time.monotonic() - t0)
        gen.wait(60)
    finally:
        os.killpg(app.pid, signal.SIGTERM)
        app.wait(20)
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    result["throughput_ratio"] = result["with_page_rps"] / result["without_page_rps"]
    for key, value in result.items():
        print(f"{key:24s} {value:8.1f}" if "rps" in key or "pct" in key else f"{key:24s} {value:8.3f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


def _cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


def _requests(endpoint) -> float:
    from app.metrics.scrape import fetch_text, parse_metrics  # noqa: PLC0415

    values = parse_metrics(fetch_text(endpoint.metrics_url), 0.0).models["gpu_sim"]
    return values.counters.get("nv_inference_request_success", 0.0)


if __name__ == "__main__":
    raise SystemExit(main())
