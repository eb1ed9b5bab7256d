"""Request-rate traces: read from files or Prometheus, played back as arrivals, placed on the wall clock."""
