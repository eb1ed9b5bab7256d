"""Traffic of the pages: the form turned into a loadgen LoadSpec, and what a running spec asks."""
