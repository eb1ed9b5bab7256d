"""The command lines: studies, scenarios and the autopilot without a browser, on a headless lab."""
