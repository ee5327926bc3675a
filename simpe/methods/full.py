"""``full``: fine-tune every learnable parameter of the model."""
from simpe.methods.base import METHODS, Method, base_parameters


@METHODS.add("full")
class FullMethod(Method):
    """Every learnable parameter."""

    def select(self, model):
        return base_parameters(model)
