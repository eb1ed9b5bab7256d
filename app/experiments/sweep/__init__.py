"""Sweeps: configurations x loads on the live server, searched to the SLA operating point."""
