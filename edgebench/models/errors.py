"""The one error type of model input."""


class ModelError(ValueError):
    """A usage error about a model, its weights or its preprocessing (exit code 2)."""
