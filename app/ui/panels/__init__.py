"""A concept page's own panels: server, diagnosis, GPU, fleet, ensemble, sequences, autopilot, scenarios."""
