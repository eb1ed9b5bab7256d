"""/demo for an audience: the story, the words, what the presenter chose to show."""
