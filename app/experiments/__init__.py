"""Studies that measure configurations: sweeps (sweep/), A/B comparisons (ab/), trace-judged sweeps (trace/), the
twin's probe, the stored runs' views, and their reports (report/)."""

