"""python -m app.experiments: the studies (sweep, ab, trace-sweep, autopilot) command line, which lives in app.cli.studies.

An alias, not a module of this package: it hands the command line over with runpy, so that nothing here imports
the command-line layer above it (docs/ARCHITECTURE.md, "Command lines").
"""
import runpy

runpy.run_module("app.cli.studies", run_name="__main__", alter_sys=True)
