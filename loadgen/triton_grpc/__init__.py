"""Decoupled models over Triton's gRPC stream: requests encoded once, a stream on the event loop."""
