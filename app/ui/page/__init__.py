"""The page frame: the concept page's shape, the header and model picker, the concepts' words."""
