"""Guided scenarios: each claim of the source documents reproduced on the live server, with a measured verdict."""
