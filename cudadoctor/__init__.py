"""cudadoctor: why a GPU software stack does or does not work, and how to fix it."""

__version__ = "0.1.0"
