"""The ports are the whole way in: every study reaches the lab only through what app.lab.ports.StudyLab names; the Lab
and the FakeLab offer every verb of every port, signature for signature; and nothing outside app/lab reaches past a
verb into one of the Lab's parts (`lab.config.current(...)`, `lab.load.running`, ...)."""
from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from app.lab import ports
from app.lab.root import Lab
from app.paths import ROOT
from tests.helpers import parsed
from tests.fakes.fake_lab import FakeLab

STUDIES = [*sorted((ROOT / "app" / "experiments").rglob("*.py")), *sorted((ROOT / "app" / "scenarios").glob("*.py")),
           ROOT / "app" / "autopilot" / "job.py", ROOT / "app" / "autopilot" / "steered.py"]
# the Lab's parts, private since the Lab became a composition root: none is reached from outside app/lab
PARTS = {"config", "load", "markers", "experiments", "metrics", "jobs", "endpoint", "server", "fleet", "gpu_memory",
         "keeper", "repo", "control_mode", "backend", "embedded", "locust_url"}
# what a reach looks like in the text (a lab's name, then .<part>.), loosely: a file without it has none to parse
REACH = re.compile(r"(?:lab|fake)\)?[\s\\]*\.[\s\\]*(?:" + "|".join(sorted(PARTS)) + r")[\s\\]*\.")
SEARCHED = ("app", "lab_pages", "bench", "scripts", "tests")
FAKE_NAMES = {"fake", "on_fake"}  # the unit tier's FakeLab fixtures
LAUNCHERS = {"start_job"}  # a study's start_* function hands the study to the lab's one job; the study never does


def verbs(port: type) -> dict[str, object]:
    """Return the verbs a port names, its own and those of the ports it joins."""
    out: dict[str, object] = {}
    for cls in reversed(port.__mro__):
        if getattr(cls, "_is_protocol", False):
            out.update({name: member for name, member in vars(cls).items()
                        if not name.startswith("_") and callable(member)})
    return out


def is_lab(node: ast.AST) -> bool:
    """Return True for an expression that names a lab: lab, gpu_sim_lab, self.lab, job.lab, fake, on_fake."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name == "lab" or name.endswith("_lab") or (isinstance(node, ast.Name) and name in FAKE_NAMES)


def attributes(tree: ast.AST) -> list[ast.Attribute]:
    """Return every attribute reference of a tree, in the order of the source."""
    return sorted((n for n in ast.walk(tree) if isinstance(n, ast.Attribute)), key=lambda n: (n.lineno, n.col_offset))


def reaches(path: Path) -> list[tuple[str, int]]:
    """Return (member, line) of every `lab.X` in a file (self.lab.X and the like too)."""
    return [(node.attr, node.lineno) for node in attributes(parsed(path))
            if is_lab(node.value)]


def launches(path: Path) -> set[int]:
    """Return the lines of a file's `lab.start_job` inside a function named start_* (a launcher)."""
    tree = parsed(path)
    return {node.lineno for func in ast.walk(tree) if isinstance(func, ast.FunctionDef) and func.name.startswith("start")
            for node in ast.walk(func) if isinstance(node, ast.Attribute) and node.attr in LAUNCHERS
            and is_lab(node.value)}


def part_reaches(path: Path) -> list[tuple[int, str]]:
    """Return (line, text) of every `lab.<part>.<member>` in a file."""
    if not REACH.search(path.read_text()):  # most files: nothing to parse
        return []
    return [(node.lineno, f"{ast.unparse(node.value.value)}.{node.value.attr}.{node.attr}")
            for node in attributes(parsed(path))
            if isinstance(node.value, ast.Attribute) and node.value.attr in PARTS and is_lab(node.value.value)]


def test_studies_reach_the_lab_only_through_what_study_lab_names():
    named = set(verbs(ports.StudyLab))
    outside = [f"{path.relative_to(ROOT)}:{line}: lab.{member}" for path in STUDIES
               for member, line in reaches(path) if member not in named and line not in launches(path)]
    assert not outside, "name these in StudyLab or reach them through it:\n" + "\n".join(sorted(set(outside)))
    assert sum(len(reaches(p)) for p in STUDIES) > 50  # the walk does find the studies' reaches


def signature(function) -> list[tuple[str, object, object]]:
    """Return a verb's parameters: name, kind and default, in order (annotations name the same types from two
    modules — a Lab is a LabPort — so they are left out)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def test_the_lab_and_the_fake_lab_offer_every_verb_of_every_port_with_its_signature():
    every = {}
    for port in (*ports.PORTS, ports.StudyLab, ports.LabPort):
        every.update(verbs(port))
    assert len(every) > 50, sorted(every)
    wrong = []
    for implementation in (Lab, FakeLab):
        for name, verb in sorted(every.items()):
            made = getattr(implementation, name, None)
            if not callable(made):
                wrong.append(f"{implementation.__name__} has no {name}")
                continue
            want, got = signature(verb), signature(made)
            # a fake may take more, with a default (FakeLab.start_traffic's ran_s): every call the port allows works
            if got[:len(want)] != want or any(p.default is inspect.Parameter.empty
                                              for p in inspect.signature(made).parameters.values()
                                              if p.name not in {n for n, _, _ in want}):
                wrong.append(f"{implementation.__name__}.{name}{inspect.signature(made)} is not the port's "
                             f"{name}{inspect.signature(verb)}")
    assert not wrong, "\n".join(wrong)


def test_nothing_outside_app_lab_reaches_into_one_of_the_labs_parts():
    files = [p for folder in SEARCHED for p in sorted((ROOT / folder).rglob("*.py"))
             if not p.is_relative_to(ROOT / "app" / "lab") and "__pycache__" not in p.parts]
    files.append(ROOT / "streamlit_app.py")
    found = [f"{path.relative_to(ROOT)}:{line}: {text}" for path in files for line, text in part_reaches(path)]
    assert len(files) > 200  # the walk sees the tree
    assert not found, f"{len(found)} lab.<part>.<member> outside app/lab (call a verb of app.lab.ports):\n" + \
        "\n".join(found)


def untyped_labs(path: Path) -> list[int]:
    """Return the lines of functions (lambdas too) in a file that take a `lab` parameter without a type."""
    text = path.read_text()
    if "lab" not in text:
        return []
    return [node.lineno for node in ast.walk(parsed(path))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
            if arg.arg == "lab" and getattr(arg, "annotation", None) is None]


def test_every_lab_handed_to_a_function_outside_app_lab_says_which_port_it_is():
    files = [p for folder in ("app", "lab_pages", "bench", "scripts") for p in sorted((ROOT / folder).rglob("*.py"))
             if not p.is_relative_to(ROOT / "app" / "lab") and "__pycache__" not in p.parts]
    found = [f"{path.relative_to(ROOT)}:{line}" for path in files for line in untyped_labs(path)]
    assert not found, "a `lab` parameter without its port (LabPort, StudyLab, …):\n" + "\n".join(found)


def test_the_walk_finds_what_it_looks_for(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text("def f(lab, gpu_sim_lab, fake, self, triton):\n"
                      "    lab.config.current('m'); gpu_sim_lab.load.running; self.lab.markers.add(1)\n"
                      "    fake.experiments.study(1); triton.endpoint.url; lab.served_config('m'); lab.mark\n")
    assert [text for _, text in part_reaches(source)] == ["lab.config.current", "gpu_sim_lab.load.running",
                                                          "self.lab.markers.add", "fake.experiments.study"]
    assert [member for member, _ in reaches(source)] == ["config", "load", "markers", "experiments", "served_config",
                                                         "mark"]
    typed = tmp_path / "typed.py"
    typed.write_text("def f(lab: LabPort, x): pass\ndef g(x, lab): pass\nh = lambda lab: lab\n")
    assert untyped_labs(typed) == [2, 3]
