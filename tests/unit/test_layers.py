"""The layers, held by the code's own imports (every import, lazy ones in functions included): no module imports a
layer above its own, and no modules import each other in a circle. A program's entry (`__main__.py`) stands above
everything and may compose any layer."""
from __future__ import annotations

import ast
import functools
from pathlib import Path


from app.paths import ROOT
from tests.helpers import parsed

# lowest first: a module may import its own layer and those before it, never one after it. A module belongs to the
# layer of the longest name here that it is or lies under (app.lab.jobs is not app.lab's).
LAYERS = (
    ("loadgen",),
    ("app.paths", "app.switches", "app.text_limits", "app.access", "app.timeline.markers"),
    ("app.server", "app.traffic", "app.timeline.keeper", "app.lab.jobs"),  # the one job knows no study
    # a meter's windows are Figures
    ("app.config", "app.metrics", "app.timeline.sides", "app.timeline.figures", "app.timeline.meter"),
    ("app.store", "app.twin"),  # the store keeps Figures; the twin is calibrated from the server's statistics
    ("app.lab.ports",),  # the verbs' types: what every part below gives and takes
    ("app.diagnosis", "app.experiments"),  # studies take a port, never the Lab
    ("app.lab", "app.autopilot"),  # the Lab (app.lab.root) and its verbs: the composition root
    ("app.scenarios", "app.lab.owner"),
    ("app.cli",),
    ("app.ui",),
    ("lab_pages", "streamlit_app"),
)
ALLOWED_UP: set[tuple[str, str]] = set()
FACES = ("app", "loadgen", "lab_pages")  # the top packages' __init__: no layer of their own (nor has any package
# __init__ that imports nothing: a folder's docstring)


def modules() -> dict[str, Path]:
    """Return every module of the code (not tests, benches or models) by dotted name."""
    out = {}
    for top in ("app", "loadgen", "lab_pages"):
        for path in (ROOT / top).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    out["streamlit_app"] = ROOT / "streamlit_app.py"
    return out


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Return the project modules a file imports, anywhere in it."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def layer_of(name: str) -> int:
    """Return the layer of the longest name in LAYERS that the module is or lies under."""
    found = [(len(p), i) for i, layer in enumerate(LAYERS) for p in layer if name == p or name.startswith(p + ".")]
    if not found:
        raise AssertionError(f"{name} is in no layer: add it to LAYERS")
    return max(found)[1]


@functools.cache
def graph() -> dict[str, set[str]]:
    """Return each module's project imports; a package __init__ that imports nothing is no node."""
    mods = modules()
    edges = {name: imports(path, name, set(mods)) for name, path in mods.items()}
    bare = {name for name, path in mods.items() if path.name == "__init__.py" and not edges[name]}
    return {name: targets - bare for name, targets in edges.items() if name not in bare}


def test_no_module_imports_a_layer_above_its_own():
    upward = []
    for name, targets in graph().items():
        if name.endswith("__main__") or name in FACES:
            continue
        for target in targets:
            if target in FACES:
                continue
            if layer_of(target) > layer_of(name) and not any(
                    name.startswith(a) and target.startswith(b) for a, b in ALLOWED_UP):
                upward.append(f"{name} (layer {layer_of(name)}) imports {target} (layer {layer_of(target)})")
    assert upward == [], "\n".join(sorted(upward))


def circles() -> list[list[str]]:
    """Return each circle of imports found (a path that comes back to where it began)."""
    edges = graph()
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    return found


def test_no_modules_import_each_other_in_a_circle():
    found = circles()
    assert found == [], "\n".join(" -> ".join(c) for c in found)


def test_only_the_ui_layer_and_the_pages_import_streamlit():
    found, nodes = [], graph()
    for name, path in modules().items():
        if name in FACES or name not in nodes or layer_of(name) >= layer_of("app.ui"):
            continue
        tree = parsed(path)
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "streamlit" or n.startswith("streamlit.") for n in names):
                found.append(name)
    assert found == [], found
