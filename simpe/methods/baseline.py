"""``baseline``: no adaptation; the loop translates and scores only."""
from simpe.methods.base import METHODS, Method


@METHODS.add("baseline")
class BaselineMethod(Method):
    name = "baseline"
