"""Load generator for Triton: arrival processes, drivers, classes, sequences, retries, statistics."""
