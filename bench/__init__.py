"""Benchmarks of the load generator against perf_analyzer."""
