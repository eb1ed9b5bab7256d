"""Triton server lifecycle: the embedded wheel binary, or a remote server named by TRITON_URL."""
