"""``baseline``: no adaptation; the loop translates and scores only."""
from simpe.methods.base import METHODS, Method


@METHODS.add("baseline")
class BaselineMethod(Method):
    """No trainable parameters: the loop translates and scores only."""

    def select(self, model):
        return {}
