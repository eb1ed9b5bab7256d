"""Services behind the dashboard: server lifecycle, config, metrics, experiments."""
