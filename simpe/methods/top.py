"""``top``: adapt the topmost encoder layer and the topmost decoder layer only (a causal LM: its top block)."""
from simpe.methods.base import METHODS, Method, base_parameters
from simpe.models import family_of


def top_layer_prefixes(model) -> tuple[str, ...]:
    """The parameter-name prefixes of the top layers, from the model's family."""
    return family_of(model).top_layer_prefixes(model)


@METHODS.add("top")
class TopMethod(Method):
    """The topmost encoder layer and the topmost decoder layer."""

    def select(self, model):
        prefixes = top_layer_prefixes(model)
        return {n: p for n, p in base_parameters(model).items() if n.startswith(prefixes)}
