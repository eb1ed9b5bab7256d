"""Tests of the twin: a discrete-event model of Triton's dynamic batcher, checked against queueing theory."""
