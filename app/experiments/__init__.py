"""A durable store of measured runs (config + traffic + results) and side-by-side comparison."""
