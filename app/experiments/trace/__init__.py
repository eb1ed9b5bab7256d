"""Judged on a trace: one rate trace played on each configuration, scored on the whole trace."""
