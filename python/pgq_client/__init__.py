"""jobq client."""
