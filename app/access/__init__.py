"""Who may operate the dashboard: allowed hosts, the operator token, guessing slowed down."""
