"""python -m app.scenarios: the guided scenarios (list, run) command line, which lives in app.cli.scenarios.

An alias, not a module of this package: it hands the command line over with runpy, so that nothing here imports
the command-line layer above it (docs/ARCHITECTURE.md, "Command lines").
"""
import runpy

runpy.run_module("app.cli.scenarios", run_name="__main__", alter_sys=True)
