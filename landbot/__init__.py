"""landbot: keeps a GitHub merge queue moving."""

__version__ = "0.1.0"
