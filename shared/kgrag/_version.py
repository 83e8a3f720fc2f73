"""The package version (its own module, so the command line reads it without importing
the whole public API)."""

__version__ = "0.1.0"
