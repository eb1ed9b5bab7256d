"""Triton /metrics and statistics scraping, reset-robust counter deltas, and the background poller."""
