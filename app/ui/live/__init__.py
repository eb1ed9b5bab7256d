"""The live view: tiles, per-second charts and change markers, computed once per tick."""
