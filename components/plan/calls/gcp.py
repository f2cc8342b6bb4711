"""gcp invokes the program makes (none yet)."""

CALLS: dict = {}
