"""The data package's error, in a module of its own so that every reader can raise it."""


class DataError(ValueError):
    """A usage error about the data (exit code 2)."""
