"""The small runtime that generated packages import: pydantic only, no generator code."""
