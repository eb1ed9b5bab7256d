"""The autopilot: a controller that turns the instance count and max_queue_delay live to hold an SLA."""
