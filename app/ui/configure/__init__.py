"""Changing a config on a page: knob widgets, the raw editor, an Apply's outcome."""
