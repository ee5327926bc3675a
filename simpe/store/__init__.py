"""Per-user stores as files: ``user`` (a store read and its method checked, `simpe export-store`, a store applied to its
base model) and ``translate`` (`simpe translate [--store]`). The file format itself is ``simpe.storefile``, which the
methods import. Import from the modules."""
