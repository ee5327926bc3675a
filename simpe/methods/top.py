"""``top``: adapt the topmost encoder layer and the topmost decoder layer only."""
from simpe.methods.base import METHODS, Method, base_parameters


def top_layer_prefixes(model) -> tuple[str, str]:
    enc = len(model.model.encoder.layers) - 1
    dec = len(model.model.decoder.layers) - 1
    return f"model.encoder.layers.{enc}.", f"model.decoder.layers.{dec}."


@METHODS.add("top")
class TopMethod(Method):
    """The topmost encoder layer and the topmost decoder layer."""

    def select(self, model, model_dir):
        prefixes = top_layer_prefixes(model)
        return {n: p for n, p in base_parameters(model).items() if n.startswith(prefixes)}
