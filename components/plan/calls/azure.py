"""azure invokes the program makes (none yet)."""

CALLS: dict = {}
