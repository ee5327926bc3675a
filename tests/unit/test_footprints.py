"""What a method declares it holds and does (``Method.footprint``, simpe/methods/base.py), and a composition's sum of
its parts' (simpe/methods/compose.py), on the tiny model by hand: 6,368 base parameter values (one shared 50 x 16
embedding, 800; an encoder layer of 2,224: four 16 x 16 projections with biases 1,088, two LayerNorms 64, fc1 16 x 32
+ 32 = 544, fc2 32 x 16 + 16 = 528; a decoder layer of 3,344: two attention blocks 2,176, three LayerNorms 96, fc1
and fc2 1,072); lasso and bias add a 50-value output bias."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from simpe.config.files import defaults
from simpe.methods import METHODS
from simpe.methods.base import Footprint, RunShape, base_parameters
from simpe.methods.compose import MODIFIERS, build_method, companions

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BASE, BIAS = 6368, 50
FLOAT32, BFLOAT16 = RunShape(4), RunShape(2, masters=True)
UPDATE = defaults("update")
REPO = Path(__file__).resolve().parents[2]


def _attached(tiny_marian, name: str, params: dict | None = None, modifiers: list | None = None):
    method = build_method(name, params or {}, modifiers or [])
    method.attach(tiny_marian(), None, UPDATE)
    return method


def test_the_tiny_model_has_the_values_counted_by_hand(tiny_marian) -> None:
    assert sum(p.numel() for p in base_parameters(tiny_marian()).values()) == BASE


def test_footprints_add_field_by_field() -> None:
    assert Footprint(1, 2, 3, 4, 5, 6, 7, 8.5, 9.5, 10, 11) + Footprint(10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110) == \
        Footprint(11, 22, 33, 44, 55, 66, 77, 88.5, 99.5, 110, 121)
    assert Footprint(state=7) + Footprint() == Footprint(state=7)


def test_plain_sgd_holds_a_spare_of_each_adapted_tensor_and_its_master(tiny_marian) -> None:
    full = _attached(tiny_marian, "full")
    assert full.adapted_values() == BASE
    assert full.footprint(FLOAT32) == Footprint(state=BASE * 4)
    assert full.footprint(BFLOAT16) == Footprint(state=BASE * 4 + BASE * 4)  # the spare at the master's width, the master
    assert _attached(tiny_marian, "baseline").footprint(FLOAT32) == Footprint()
    assert _attached(tiny_marian, "bias").footprint(FLOAT32) == Footprint(state=BIAS * 4)


def test_lasso_keeps_the_base_weights_and_its_steps_new_groups(tiny_marian) -> None:
    lasso = _attached(tiny_marian, "lasso")
    assert lasso.footprint(FLOAT32) == Footprint(state=BASE * 4 + (BASE + BIAS) * 4)
    assert lasso.footprint(BFLOAT16) == Footprint(state=BASE * 2 + (BASE + BIAS) * 4)  # the masters take the step


SHORT = RunShape(4, rows=2, segments=4, tokens_per_segment=3)  # a run of 4 segments of 3 tokens, a beam of 2


def test_knn_grows_a_key_its_norm_and_its_value_per_token_and_searches_them(tiny_marian) -> None:
    # before segments 0-3 the store holds 0, 3, 6, 9 entries: exact search reads each key (16 float32 values) and its
    # norm once for both rows, 4.5 keys on average, and compares each with each row
    exact = Footprint(datastore_per_token=16 * 4 + 4 + 8, segment_passes=1, search_bytes=4.5 * (16 * 4 + 4),
                      search_macs=4.5 * 16 * 2)
    assert _attached(tiny_marian, "knn").footprint(SHORT) == exact
    fp16 = _attached(tiny_marian, "knn", {"key_dtype": "float16"}).footprint(SHORT)
    assert (fp16.datastore_per_token, fp16.search_bytes) == (16 * 2 + 12, 4.5 * (16 * 2 + 4))
    # an inverted file past 4 entries, one list probed: at 6 and 9 entries one centroid, then the 6 or 9 entries of its
    # one list (read once for both rows) of the 256 a row may read: 0 + 3 + 7 + 10 keys read, 0 + 3 + 257 + 257 compared
    ivf = _attached(tiny_marian, "knn", {"index": "auto", "exact_entries": 4, "probe_lists": 1}).footprint(SHORT)
    assert (ivf.search_bytes, ivf.search_macs) == (20 / 4 * (16 * 4 + 4), 517 / 4 * 16 * 2)
    assert METHODS.build("knn").footprint(FLOAT32) == Footprint()  # no datastore before select makes it


def test_tune_retrieve_tunes_every_base_value_around_a_translation(tiny_marian) -> None:
    # the copy to return to (the weights' dtype), the tuning's spare of each value at the step's width, and below
    # float32 its master: held from the first tuning on
    tune = _attached(tiny_marian, "tune-retrieve", {"matches": 2})
    assert tune.footprint(FLOAT32) == Footprint(state=BASE * 4 + BASE * 4, tuned_values=BASE, tuning_pairs=2)
    assert tune.footprint(RunShape(2)) == Footprint(state=BASE * 2 + BASE * 4 + BASE * 4, tuned_values=BASE, tuning_pairs=2)
    assert METHODS.build("tune-retrieve").footprint(FLOAT32) == Footprint()  # no model before select


def test_a_composition_sums_its_parts(tiny_marian) -> None:
    full_knn = _attached(tiny_marian, "full", modifiers=[{"name": "knn"}])
    knn = _attached(tiny_marian, "knn").footprint(SHORT)
    assert full_knn.footprint(SHORT) == Footprint(state=BASE * 4, datastore_per_token=76, segment_passes=1,
                                                  search_bytes=knn.search_bytes, search_macs=knn.search_macs)
    adapted = BASE + BIAS
    lasso_ewc = _attached(tiny_marian, "lasso", modifiers=[{"name": "ewc", "params": {"sentences": 30}}])
    # lasso's own, then ewc's Fisher (float32) and anchor (the weights' dtype), θ - θ₀ and the penalty's gradient in
    # float32 during the update, its penalty's 56 bytes a value per step (and two casts to float32 below it),
    # and its 30 Fisher sentences
    assert lasso_ewc.footprint(FLOAT32) == Footprint(state=BASE * 4 + adapted * 4 + adapted * (4 + 4),
                                                     update_bytes=adapted * 8, penalty_bytes=adapted * 56, prepare_passes=30)
    assert lasso_ewc.footprint(BFLOAT16) == Footprint(state=BASE * 2 + adapted * 4 + adapted * (4 + 2), update_bytes=adapted * 8,
                                                      penalty_bytes=adapted * (56 + 2 * (2 + 4)), prepare_passes=30)
    everything = _attached(tiny_marian, "full", modifiers=[{"name": "replay", "params": {"k": 3}}, {"name": "ewc"},
                                                           {"name": "knn"}, {"name": "tune-retrieve"}])
    assert everything.footprint(SHORT) == Footprint(state=BASE * 4 + BASE * 8 + BASE * 8, datastore_per_token=76,
                                                    update_bytes=BASE * 8, update_pairs=3, penalty_bytes=BASE * 56,
                                                    prepare_passes=200, segment_passes=1, search_bytes=knn.search_bytes,
                                                    search_macs=knn.search_macs, tuned_values=BASE, tuning_pairs=1)
    assert everything.adapted_values() == BASE  # the companions train nothing


def test_a_composition_not_attached_counts_no_adapted_values() -> None:
    """The dry run of ``fixed`` on a model without its selection attaches nothing: its parts count none either."""
    fixed_ewc = build_method("fixed", {}, [{"name": "ewc"}, {"name": "knn"}])
    assert not fixed_ewc.can_select(None) and fixed_ewc.can_select(REPO / "models" / "demo-en-de")
    assert build_method("fixed", {"selection": "chosen.json"}).can_select(None)
    assert fixed_ewc.footprint(FLOAT32) == Footprint(prepare_passes=200)


def test_companions_are_the_methods_that_say_so() -> None:
    assert companions() == [name for name in METHODS.names() if METHODS.get(name).companion] == ["knn", "tune-retrieve"]
    assert not any(METHODS.get(name).parametric for name in companions())


def _string_constants(path: Path) -> set[str]:
    """The string constants of a module's code, docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}


@pytest.mark.parametrize("module", ["simpe/loop/dryrun.py", "simpe/methods/compose.py"])
def test_no_method_is_named_in_the_dry_run_or_the_composition(module: str) -> None:
    """They ask the method (its footprint, its class's properties) and never branch on its name. The dry run names
    one preset, the lighter method its refusal suggests (``LIGHTER_PRESET``)."""
    named = _string_constants(REPO / module) & {*METHODS.names(), *MODIFIERS.names()}
    assert named == ({"lora"} if module == "simpe/loop/dryrun.py" else set()), named
