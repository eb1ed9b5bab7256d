"""Diagnosis: the field guide's patterns named from a window, and whether a model's batching fits it."""
