"""The package version, in a leaf module so that checkpoints and the plugin manager can name it."""

__version__ = "0.1.0"
