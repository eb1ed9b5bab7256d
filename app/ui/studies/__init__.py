"""The Experiments page's parts: the running study, forms and results of sweeps, A/B, traces, saved runs."""
