"""The package's version (``dispatchlab.__version__``), in the lowest layer so that what
records it (a store's ``code_version``) does not import the facade."""

__version__ = "0.1.0"
