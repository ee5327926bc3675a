"""``baseline``: no adaptation; the loop translates and scores only."""
from simpe.methods.base import METHODS, Method


@METHODS.add("baseline")
class BaselineMethod(Method):
    """No trainable parameters: the loop translates and scores only."""

    parametric = False  # trains no tensor

    def select(self, model):
        return {}
