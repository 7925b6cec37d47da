"""cudadoctor's version: a leaf module, so that any layer can name the version without importing
the package root (whose names load the API lazily)."""

__version__ = "0.1.0"
