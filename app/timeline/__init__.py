"""The live timeline: window figures, change markers, and the history kept on disk."""
