"""Walk every page in Chromium as a user does, against a Triton started by hand: .venv/bin/python scripts/walk_pages.py

Not a test (it gates nothing): the check a redesign ends with, that every feature still works end to end. For each
repository — a copy of the lab's own (`lab`) and of tests/third_party_repository (`third-party`: no lab.json,
strings, an ensemble, a decoupled model, configs left to auto-complete) — it starts the wheel's tritonserver by hand
(explicit mode, every model loaded, free ports), then the dashboard pointed at it (TRITON_URL), and in Debian's
Chromium (Playwright, nothing downloaded):
  1. opens every page from the sidebar: no exception, no error box; a screenshot of each;
  2. runs traffic to the model on Dynamic batching until the live view counts executions;
  3. starts a sweep on Experiments (the form's space at loads 1 and 4; on the other repository the twin ranks it and
     only its top 2 are measured) and waits for its end;
  4. starts an A/B comparison (2 trials) and waits for its end;
  5. runs the page's first guided scenario (on the lab's models: a second server when the repository lacks them);
  6. turns the autopilot on, waits for its banner, turns it off.
Each step prints ok or what went wrong (the page's errors); screenshots go to test-output/walk/. Needs the test set
(scripts/lab.sh test installs it). Exit 0 when every step of every walk passed.
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.paths import MODEL_REPOSITORY  # noqa: E402
from tests.contract.hand_started import mode_args, start_by_hand  # noqa: E402
from tests.helpers import wait_until  # noqa: E402
from tests.smoke.browsing import (LAB_NAVIGATION, errors_shown, follow_link, histogram, open_loop,  # noqa: E402
                                  open_overview, settled, start_traffic, stop_traffic)
from tests.smoke.conftest import CHROMIUM, CHROMIUM_ARGS, dashboard_env, running_dashboard  # noqa: E402
from tests.third_party import copy_repository  # noqa: E402

SHOTS = ROOT / "test-output" / "walk"
STUDY_S = 600  # a sweep, an A/B or a scenario on a busy 2-core host: bounded waits, no claim
WALKS = {"lab": "gpu_sim", "third-party": "text_len"}  # repository -> the model the walk drives


class Walk:
    """One walk's page and its results."""

    def __init__(self, name: str, page) -> None:
        self.name, self.page, self.results = name, page, []

    def step(self, what: str, run) -> None:
        began = time.monotonic()
        try:
            run()
            problems = errors_shown(self.page)
            outcome = "ok" if not problems else f"errors on the page: {problems}"
        except Exception as exc:  # noqa: BLE001 - a walk reports every step
            outcome = f"FAILED: {type(exc).__name__}: {exc}"
            traceback.print_exc()
        shot = SHOTS / f"{self.name}-{len(self.results) + 1:02d}-{re.sub(r'[^a-z0-9]+', '_', what.lower())}.png"
        try:
            self.page.screenshot(path=str(shot), full_page=True)
        except Exception:  # noqa: BLE001 - a screenshot is evidence, not the check
            pass
        self.results.append((what, outcome))
        print(f"[{self.name}] {what}: {outcome} ({time.monotonic() - began:.0f} s)", flush=True)


def pick(page, label: str, option: str, within=None) -> None:
    """Choose option in the first selectbox labelled label (in `within`, a part of the page, when given)."""
    box = (within or page).locator('[data-testid="stSelectbox"]', has_text=label).first
    wanted = page.get_by_role("option", name=re.compile(rf"^{re.escape(option)}\b")).first
    deadline = time.monotonic() + 60
    while True:  # a rerun (traffic ending, a live chart's refresh) closes an open list: open it again
        box.click()
        try:
            wanted.wait_for(timeout=5000)
            break
        except Exception:  # noqa: BLE001 - playwright's TimeoutError; the deadline below ends the tries
            if time.monotonic() > deadline:
                raise
    wanted.click()
    settled(page)


def info_texts(page) -> str:
    return "\n".join(page.locator('[data-testid="stAlertContainer"]').all_inner_texts())


def every_page(page, links) -> None:
    for name in LAB_NAVIGATION:
        follow_link(page, links, name)
        if problems := errors_shown(page):
            raise AssertionError(f"{name}: {problems}")
        page.screenshot(path=str(SHOTS / f"page-{re.sub(r'[^a-z0-9]+', '_', name.lower())}.png"), full_page=True)
    open_overview(page, links["Overview"])  # the presenter's view has no sidebar: back to the start


def traffic(page, links, model: str) -> None:
    follow_link(page, links, "Dynamic batching")
    pick(page, "Model", model)
    open_loop(page, 20)
    start_traffic(page)
    try:
        wait_until(lambda: (h := histogram(page)) and sum(h.values()) >= 20, 120, "20 executions on the live view")
    finally:
        stop_traffic(page)


def tab(page, name: str):
    """Open the tab `name`; return its panel (the other tabs' panels are in the page too, hidden)."""
    page.get_by_role("tab", name=name, exact=True).click()
    panel = page.get_by_role("tabpanel")  # the visible one: roles skip hidden elements
    panel.wait_for()
    return panel


def run_study(page, form, button: str, name: str) -> None:
    """Press the form's start button; wait until the study (a Sweep, a Comparison) says it started and then ended;
    fail unless it ended done."""
    form.get_by_role("button", name=button).click()
    page.get_by_text(f"{name} started").wait_for()
    wait_until(lambda: re.search(rf"{name} \d+: (done|failed|cancelled|interrupted)", info_texts(page)), STUDY_S,
               f"the {name.lower()}'s end")
    ended = re.search(rf"{name} \d+: (\w+)", info_texts(page)).group(1)
    if ended != "done":
        raise AssertionError(f"the {name.lower()} ended {ended}: {info_texts(page)[-800:]}")


def sweep(page, links, model: str, ranked: bool) -> None:
    follow_link(page, links, "Experiments")
    form = tab(page, "Sweep")
    pick(page, "Model", model, form)
    form.get_by_label("Load levels").fill("1, 4")
    form.get_by_role("spinbutton", name="Re-measure the top candidates (0–10)").fill("0")
    if ranked:
        form.get_by_role("spinbutton", name=re.compile("^Let the twin rank")).fill("2")
    run_study(page, form, "Start sweep", "Sweep")


def ab(page, links, model: str) -> None:
    follow_link(page, links, "Experiments")
    form = tab(page, "A/B comparison")
    pick(page, "Model", model, form)
    form.get_by_label("Trials").fill("2")
    run_study(page, form, "Start comparison", "Comparison")


def scenario(page, links) -> None:
    follow_link(page, links, "Dynamic batching")
    box = page.locator('[data-testid="stExpander"]', has_text="Queue delay at low and high load").first
    box.locator("summary").click()
    box.get_by_role("button", name=re.compile(r"^Run( on the lab's models)?$")).click()

    def verdict():
        text = box.inner_text()
        return not page.get_by_role("progressbar").count() and re.search(r"Last run[^\n]*", text)

    wait_until(verdict, STUDY_S, "the scenario's verdict")
    print(f"  the scenario: {verdict().group(0)}", flush=True)


def autopilot(page, links, model: str) -> None:
    follow_link(page, links, "Instances")
    pick(page, "Model", model)
    page.get_by_text("Off — turn on the autopilot").click()
    page.get_by_role("button", name="Turn the autopilot on").click()
    off = page.get_by_role("button", name="Turn the autopilot off")
    off.wait_for()
    off.click()
    wait_until(lambda: page.get_by_text("Off — turn on the autopilot").count(), 60, "the autopilot off")


def walk(name: str, repo: Path, base: Path, browser) -> list[tuple[str, str]]:
    """Start a Triton by hand on repo and the dashboard on it; walk; stop both."""
    model = WALKS[name]
    server = start_by_hand(repo, base, *mode_args("explicit", repo))
    try:
        env = dashboard_env(base, TRITON_URL=server.endpoint.http_url, TRITON_GRPC_URL=server.endpoint.grpc_url,
                            TRITON_METRICS_URL=server.endpoint.metrics_url, TRITON_MODEL_REPOSITORY=str(repo))
        with running_dashboard(env, base) as url:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            w = Walk(name, page)
            links = open_overview(page, url)
            w.step("every page opens", lambda: every_page(page, links))
            w.step(f"traffic to {model}", lambda: traffic(page, links, model))
            ranked = name == "third-party"  # the lab's models swept in full, the other repository's ranked by the twin
            w.step(f"a {'twin-ranked ' if ranked else ''}sweep of {model}", lambda: sweep(page, links, model, ranked))
            w.step(f"an A/B of {model}", lambda: ab(page, links, model))
            w.step("a guided scenario", lambda: scenario(page, links))
            w.step(f"the autopilot on {model}", lambda: autopilot(page, links, model))
            page.close()
            return w.results
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--walks", default=",".join(WALKS), help="lab, third-party or both (default)")
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - the test set

    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir(parents=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="tbl-walk-") as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            for name in args.walks.split(","):
                base = Path(tmp) / name
                base.mkdir()
                repo = (copy_repository(base / "repo") if name == "third-party" else
                        Path(shutil.copytree(MODEL_REPOSITORY, base / "repo",
                                             ignore=shutil.ignore_patterns("__pycache__"))))
                results[name] = walk(name, repo, base, browser)
        finally:
            browser.close()
    failed = [(n, what, out) for n, steps in results.items() for what, out in steps if out != "ok"]
    print(f"{sum(len(s) for s in results.values()) - len(failed)} of {sum(len(s) for s in results.values())} steps "
          f"ok; screenshots in {SHOTS}")
    for n, what, out in failed:
        print(f"  [{n}] {what}: {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
