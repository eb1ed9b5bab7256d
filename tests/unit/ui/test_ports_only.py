"""The pages reach the lab through its verbs only (app/lab/ports.py), read from the code itself: no `lab.<part>` reach
(the Lab's parts are private to app.lab), and every function of app/ui and lab_pages that takes the lab names the
port it needs instead of an untyped `lab`."""
from __future__ import annotations

import ast
from pathlib import Path

from app.lab import ports
from app.paths import ROOT
from tests.helpers import parsed

# What the Lab held as attributes before its verbs (a page that still reaches one breaks, or reads a private part)
PARTS = {"config", "load", "markers", "experiments", "metrics", "jobs", "endpoint", "server", "fleet", "gpu_memory",
         "keeper", "repo", "control_mode", "backend", "embedded", "locust_url"}
PORTS = {name for name in dir(ports) if isinstance(getattr(ports, name), type) and
         getattr(getattr(ports, name), "_is_protocol", False)}
LAB_CALLS = {"get_lab", "lab_or_stop", "lab_models"}  # calls that return the lab


def code() -> list[Path]:
    return [*sorted((ROOT / "app/ui").rglob("*.py")), *sorted((ROOT / "lab_pages").glob("*.py")),
            ROOT / "streamlit_app.py"]


def is_lab(node: ast.expr) -> bool:
    """Return True for an expression that is the lab: a name `lab` (or ending in _lab), or a call returning it."""
    if isinstance(node, ast.Name):
        return node.id == "lab" or node.id.endswith("_lab")
    if isinstance(node, ast.Attribute):
        return node.attr == "lab"
    if isinstance(node, ast.Call):
        func = node.func
        return (isinstance(func, ast.Name) and func.id in LAB_CALLS) or (
            isinstance(func, ast.Attribute) and func.attr in LAB_CALLS)
    return False


def reaches(path: Path, root: Path = ROOT) -> list[str]:
    """Return each `lab.<part>` (a part not called as a verb) and each `lab._private` in a file."""
    tree = parsed(path)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_lab(node.value):
            verb = id(node) in called and not node.attr.startswith("_")
            if (node.attr in PARTS and not verb) or node.attr.startswith("_"):
                out.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return out


def untyped(path: Path, root: Path = ROOT) -> list[str]:
    """Return each function parameter named lab whose annotation is not one of app.lab.ports' protocols."""
    out = []
    for node in ast.walk(parsed(path)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        args = node.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            if arg.arg != "lab" and not arg.arg.endswith("_lab"):
                continue
            named = ast.unparse(arg.annotation) if getattr(arg, "annotation", None) is not None else None
            if isinstance(node, ast.Lambda):
                continue  # a lambda cannot say; the function it is handed to does
            if named is None or named.strip("'\"").split(".")[-1] not in PORTS:
                out.append(f"{path.relative_to(root)}:{node.lineno}: {node.name}({arg.arg}: {named})")
    return out


def test_the_ports_are_what_this_test_knows():
    assert {"Serving", "Plans", "Timeline", "Traffic", "Measure", "Store", "Studies", "StudyLab", "LabPort"} <= PORTS


def test_no_page_or_panel_reaches_a_part_of_the_lab():
    found = [r for path in code() for r in reaches(path)]
    assert found == [], "\n".join(found)


def test_every_function_that_takes_the_lab_names_its_port():
    found = [u for path in code() for u in untyped(path)]
    assert found == [], "\n".join(found)


def test_the_checks_catch_what_they_look_for(tmp_path):
    sample = tmp_path / "page.py"
    sample.write_text("def panel(lab, model):\n    lab.markers.add(model)\n    lab.markers(model)\n"
                      "    get_lab().config.caps()\n    return lab._store\n\n"
                      "def typed(lab: LabPort, other_lab: Lab):\n    return lab.endpoint\n")
    found = sorted(reaches(sample, tmp_path), key=lambda r: int(r.split(":")[1]))
    assert [r.split(": ", 1)[1] for r in found] == ["lab.markers", "get_lab().config", "lab._store", "lab.endpoint"]
    assert [u.split(": ", 1)[1] for u in untyped(sample, tmp_path)] == ["panel(lab: None)", "typed(other_lab: Lab)"]
