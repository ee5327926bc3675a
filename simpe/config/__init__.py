"""The one config tree: ``tree`` (its dataclasses and their checks) and ``files`` (defaults.yaml, presets and --set
merged; a saved config.yaml read back and compared for resume; the tree written). Import from the modules."""
