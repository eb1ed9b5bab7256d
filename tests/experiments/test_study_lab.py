"""Studies reach the lab only through what app.lab.ports.StudyLab names, and the Lab offers all of it:
the protocol is the whole of what a sweep, an A/B, a trace sweep, a scenario or the autopilot does with the lab."""
from __future__ import annotations

import ast
import inspect

from app.lab.ports import MEMBERS
from app.lab.root import Lab
from app.paths import ROOT

STUDIES = [*sorted((ROOT / "app" / "experiments").rglob("*.py")), *sorted((ROOT / "app" / "scenarios").glob("*.py")),
           ROOT / "app" / "autopilot" / "job.py", ROOT / "app" / "autopilot" / "steered.py"]
LAUNCHERS = {"jobs"}  # a study's start_* function hands it to the lab's one background job; its run never does


def reaches(path) -> list[tuple[str, str, int]]:
    """Return (member, enclosing function, line) of every `lab.X` and `self.lab.X` in a file."""
    out = []
    tree = ast.parse(path.read_text(), str(path))
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        name = getattr(func, "name", "<lambda>")
        for node in ast.walk(func):
            if not isinstance(node, ast.Attribute):
                continue
            base = node.value
            if (isinstance(base, ast.Name) and base.id == "lab") or (
                    isinstance(base, ast.Attribute) and base.attr == "lab" and isinstance(base.value, ast.Name)
                    and base.value.id == "self"):
                out.append((node.attr, name, node.lineno))
    return out


def test_studies_reach_only_what_the_protocol_names():
    outside = []
    for path in STUDIES:
        for member, func, line in reaches(path):
            if member in MEMBERS or (member in LAUNCHERS and func.startswith("start")):
                continue
            outside.append(f"{path.relative_to(ROOT)}:{line} {func}: lab.{member}")
    assert not outside, "name these in StudyLab or reach them through it:\n" + "\n".join(sorted(set(outside)))
    assert sum(len(reaches(p)) for p in STUDIES) > 50  # the walk does find the studies' reaches


def test_the_lab_offers_every_member():
    assigned = {node.attr for node in ast.walk(ast.parse(inspect.getsource(Lab.__init__).strip().replace(
        "\n    ", "\n"))) if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)}
    missing = [m for m in MEMBERS if not hasattr(Lab, m) and m not in assigned]
    assert not missing, missing
