"""The lab: one server's live parts composed (root.py), the typed ports pages and studies use, its one job."""
