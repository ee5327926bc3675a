"""Exceptions for user mistakes; ``simpe.cli`` prints them as one line and exits 2.

Internal invariants use ``assert``; anything a user can cause by a bad flag, a bad
config value or a bad input file raises one of these, naming the bad value and the
valid ones.
"""


class SimpeError(Exception):
    """Base class of every error simpe reports to the user as one line."""


class ConfigError(SimpeError):
    """A bad configuration value, flag, or name (unknown method, decoder, metric...)."""


class DataError(SimpeError):
    """Bad or missing input data (line-count mismatch, invalid UTF-8, absent corpus...)."""


class ModelError(SimpeError):
    """A model that cannot be found or loaded."""


class RunDirError(SimpeError):
    """A run directory in a state that forbids the requested action (locked, complete...)."""
