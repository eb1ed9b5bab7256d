"""Unit tests: pure logic, no server."""
