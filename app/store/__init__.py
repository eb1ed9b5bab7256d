"""The experiment store: saved runs and studies in SQLite, read back defensively for showing."""
