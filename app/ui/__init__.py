"""Streamlit helpers: the only part of app/ that imports streamlit."""
