"""simpe: a simulated post-editing adaptation harness for neural machine translation."""

__version__ = "0.2.0"
