"""Plain beam search on the device (simpe.decoders.beam_device), forced on the CPU: the host path's results, ties and all,
and no host read inside a decoding step.

The demo model decodes the first dev sentences (data/libreoffice/dev.en) by both paths: one source at a time and
three in lockstep, with and without ``even`` (a lockstep group's fixed blocks), in float32 and bfloat16, beam 5 and 1.
The hypotheses, the expansions and the steps must be the same, and the scores too where the host runs the same rows
(``even``: float64 sums of the same float32 values), else equal to the tie tolerance (another batch shape's noise).

bfloat16's coarse logits make tied values common. The host path's tie decisions are counted while it runs (its own
functions, wrapped to count what they decide): at beam 5 on these 24 sentences, one source at a time, a row's cut is
tied 71 times and a step's first candidates 49 times. Finished hypotheses tied to the noise are rare on the demo model
(bfloat16, 400 dev sentences: none at beam 5, one at beam 10, which a test decodes): ``_keep_best``'s order is also
checked on constructed lists, as are a row's cut past the search's window and the candidates' ranking.
"""
from __future__ import annotations

import collections
import functools
import sys
from pathlib import Path

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import simpe.decoders.beam as beam
from simpe.decoders import beam_device
from simpe.decoders.beam import BeamDecoder
from simpe.decoders.incremental import decoding, encode
from simpe.ties import SCORE_ATOL, tied

REPO = Path(__file__).resolve().parents[2]
DEV = (REPO / "data" / "libreoffice" / "dev.en").read_text(encoding="utf-8").splitlines()
SENTENCES = 24


@functools.cache
def _model(dtype: str):
    from simpe.model import load_model

    return load_model(REPO / "models" / "demo-en-de", "cpu", dtype=dtype)


def _decode(dtype: str, beam_size: int, group: int, even: bool, on_device: bool, sentences: int = SENTENCES) -> list:
    loaded = _model(dtype)
    decoder = BeamDecoder(beam_size)
    saved = beam_device.ON_DEVICE
    beam_device.ON_DEVICE = on_device
    try:
        out = []
        with decoding(loaded.model):
            for start in range(0, sentences, group):
                sources = [encode(loaded.model, loaded.family.encode_source(loaded.tokenizer, text, "cpu")[0], decoder.limit)
                           for text in DEV[start:start + group]]
                out += decoder.decode_sources(loaded.model, sources, even=even)
        return out
    finally:
        beam_device.ON_DEVICE = saved


def _counting_ties(monkeypatch: pytest.MonkeyPatch) -> collections.Counter:
    """Count the host path's tie decisions as it takes them: a row whose k-th and (k+1)-th tokens tie (``ties.top``
    deciding the cut by token id), a tied group among a step's first candidates (``_ranked_head`` ordering it by row
    and token), a tied group among the finished hypotheses (``_keep_best``'s ``rank`` ordering it by tokens)."""
    seen: collections.Counter = collections.Counter()
    top, ranked_head, rank = beam.top, beam._ranked_head, beam.rank

    def counted_top(values, n, tiebreak=None, atol=0.0):
        chosen = top(values, n, tiebreak, atol)
        seen["row cut tied"] += set(chosen.tolist()) != set(torch.topk(values, n).indices.tolist())
        seen["row cut checked"] += 1
        return chosen

    def groups(values: list[float]) -> int:
        ordered = sorted(values, reverse=True)
        return sum(tied(a, b, SCORE_ATOL) and a > float("-inf") for a, b in zip(ordered, ordered[1:]))

    def counted_head(values, keys, k):
        order = ranked_head(values, keys, k)
        seen["candidates tied"] += groups(sorted(values, reverse=True)[: k + 1]) > 0
        return order

    def counted_rank(*columns, key=None, atol=0.0):
        seen["finished tied"] += groups(list(columns[0])) > 0
        return rank(*columns, key=key, atol=atol)

    monkeypatch.setattr(beam, "top", counted_top)
    monkeypatch.setattr(beam, "_ranked_head", counted_head)
    monkeypatch.setattr(beam, "rank", counted_rank)
    return seen


def _same(host: list, device: list, exact: bool) -> None:
    """The same hypotheses, expansions and steps; the same scores (``exact``) or equal to the tie tolerance."""
    assert len(host) == len(device)
    for i, (a, b) in enumerate(zip(host, device)):
        assert [h.tokens for h in a.hypotheses] == [h.tokens for h in b.hypotheses], (i, DEV[i])
        if exact:
            assert [h.score for h in a.hypotheses] == [h.score for h in b.hypotheses], (i, DEV[i])
        else:
            assert all(tied(x.score, y.score, SCORE_ATOL) for x, y in zip(a.hypotheses, b.hypotheses)), (i, DEV[i])
        assert (a.expansions, a.info) == (b.expansions, b.info), i


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("beam_size", [5, 1])
@pytest.mark.parametrize("group,even", [(1, False), (3, False), (3, True)])
def test_the_device_path_decides_as_the_host_path(dtype: str, beam_size: int, group: int, even: bool,
                                                  monkeypatch: pytest.MonkeyPatch, one_torch_thread: None) -> None:
    seen = _counting_ties(monkeypatch)
    host = _decode(dtype, beam_size, group, even, on_device=False)
    device = _decode(dtype, beam_size, group, even, on_device=True)
    # the device path runs the rows of even=True (a block of beam_size per source): the same arithmetic, bit for bit;
    # without even the host runs fewer rows where a beam has fewer live hypotheses, a batch shape whose float noise
    # moves the last bits of a score (1e-7 relative seen, three sources at beam 1)
    _same(host, device, exact=even or (group == 1 and beam_size == 1))
    print(dtype, beam_size, group, even, dict(seen))
    if dtype == "bfloat16" and beam_size == 5:
        assert seen["row cut tied"] > 0 and seen["candidates tied"] > 0, seen


def _host_row(values: list[float], per: int) -> set[int]:
    """The host path's ``per`` best tokens of one row (``beam._best``'s per-row choice)."""
    allowed = torch.tensor([values], dtype=torch.float32)
    top_values, tokens = torch.topk(allowed, per + 1, dim=1)
    chosen = tokens[0, :per].tolist()
    if beam._may_tie(float(top_values[0, per - 1]), float(top_values[0, per])):
        chosen = beam.top(allowed[0], per, atol=SCORE_ATOL).tolist()
    return set(chosen)


def test_a_rows_cut_is_decided_by_token_id_as_ties_top_decides_it() -> None:
    """Rows whose 10th and 11th values tie: 100 equal values from rank 8 on (a group past the search's window of 26:
    the equal values beyond it are found by value), a chain of 12 distinct values each 3e-5 from the next (tied by the
    tolerance, 5e-5 at -5), -inf at the cut; the lowest token ids of the group fill the cut, as ``ties.top`` takes them.
    A chain of 40 such values runs past the window: flagged (the caller then searches on the host)."""
    vocab, per = 400, 10
    rows = []
    for case in ("equal", "chain", "-inf", "long chain", "untied"):
        values = [-20.0 - 0.01 * t for t in range(vocab)]  # distinct, untied, decreasing with the token id
        if case == "equal":
            for t in range(300, 400):
                values[t] = -5.0
            for t in range(7):
                values[t] = -1.0 - 0.1 * t
        elif case == "chain":
            for j, t in enumerate(range(399, 387, -1)):
                values[t] = -5.0 - 3e-5 * j  # token 399 best, 388 worst of the chain
            for t in range(5):
                values[t] = -1.0 - 0.1 * t
        elif case == "-inf":
            values = [float("-inf")] * vocab
            for t in range(3):
                values[200 + t] = -1.0 - t
        elif case == "long chain":
            for j, t in enumerate(range(399, 359, -1)):
                values[t] = -5.0 - 3e-5 * j
        rows.append(values)
    allowed = torch.tensor(rows, dtype=torch.float32)
    values, tokens, over = beam_device.row_best(allowed.clone(), per)
    assert over.tolist() == [False, False, False, True, False]
    for row in (0, 1, 4):
        assert set(tokens[row].tolist()) == _host_row(rows[row], per), row
        assert values[row].tolist() == allowed[row, tokens[row]].tolist()
    assert set(tokens[0].tolist()) == set(range(7)) | {300, 301, 302}  # the group's three lowest ids
    assert set(tokens[1].tolist()) == set(range(5)) | {388, 389, 390, 391, 392}  # by id, not by value
    assert set(tokens[2].tolist()) >= {200, 201, 202}  # the finite ones; which -inf fill the cut is never read


def test_candidates_and_finished_hypotheses_are_ranked_as_the_host_ranks_them() -> None:
    """``ranked`` against ``beam._ranked_head`` (tied candidates by row, then token) and, with ``tuple_rank``, against
    ``beam._keep_best`` (tied finished hypotheses by their token tuples: a prefix before its extensions), on lists with
    exactly equal scores, chains tied by the tolerance and -inf."""
    scores = [-3.0, -1.0, -1.0, -2.0, -1.0 - 5e-6, -2.0 - 1.5e-5, -2.0 - 3e-5, float("-inf"), -1.0, -4.0]
    keys = [(0, 7), (1, 3), (0, 9), (2, 2), (0, 1), (1, 1), (0, 0), (2, 5), (2, 0), (1, 8)]
    vocab = 10
    for k in (1, 3, 5, 10):
        head = beam_device.ranked(torch.tensor([scores], dtype=torch.float64),
                                  torch.tensor([[row * vocab + token for row, token in keys]]), 3 * vocab, k)
        assert head[0].tolist() == beam._ranked_head(scores, keys, k), k
    finished = [(-1.5, (4, 5, 0)), (-1.5, (4, 0)), (-1.5 - 1e-6, (4, 5)), (-0.5, (9, 0)), (-1.5, (3, 9, 9, 9, 0)),
                (-2.0, (1, 0)), (-1.5 + 1.2e-5, (7, 0))]
    for size in (1, 3, 5, 7):
        host = list(finished)
        beam._keep_best(host, size)
        length = max(len(tokens) for _, tokens in finished)
        padded = torch.tensor([[list(tokens) + [-1] * (length - len(tokens)) for _, tokens in finished]])
        order = beam_device.ranked(torch.tensor([[score for score, _ in finished]], dtype=torch.float64),
                                   beam_device.tuple_rank(padded), len(finished), size)
        assert [finished[i] for i in order[0].tolist()] == host, size
    assert host[:3] == [(-0.5, (9, 0)), (-1.5, (3, 9, 9, 9, 0)), (-1.5, (4, 0))]


READS = {torch.Tensor.tolist, torch.Tensor.item, torch.Tensor.__bool__, torch.Tensor.__float__, torch.Tensor.__int__,
         torch.Tensor.__index__, torch.Tensor.numpy, torch.Tensor.cpu}
READS_INSIDE = {"aten::_local_scalar_dense", "aten::nonzero", "aten::equal", "aten::is_nonzero"}


class _Reads(TorchFunctionMode):
    """Each read of a tensor's values on the host (a GPU would synchronise there), tagged with the decoding step it
    falls in (``window``: the model's forward passes so far) and the code that asked: Python-level reads (``.tolist()``,
    ``bool()``, ...) and those inside aten (a boolean mask's ``nonzero``, ``.item()``'s ``_local_scalar_dense``),
    which the inner dispatch mode sees."""

    def __init__(self, window: list[int]) -> None:
        super().__init__()
        self.window, self.found, self.inside = window, [], 0
        outer = self

        class Aten(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if not outer.inside and f"aten::{func._schema.name.split('::')[-1]}" in READS_INSIDE:
                    outer.note(func._schema.name)
                return func(*args, **(kwargs or {}))

        self.aten = Aten()

    def note(self, what: str) -> None:
        import traceback

        where = [f"{Path(f.filename).name}:{f.lineno}" for f in traceback.extract_stack()[:-2]
                 if "/simpe/" in f.filename or "transformers" in f.filename]
        self.found.append((self.window[0], what, where[-1] if where else "?"))

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in READS:
            self.note(func.__name__)
            self.inside += 1
            try:
                return func(*args, **(kwargs or {}))
            finally:
                self.inside -= 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("group", [1, 3])
def test_a_decoding_step_on_the_device_reads_nothing_back_but_the_stop_check(group: int, one_torch_thread: None) -> None:
    """Between one forward pass and the next, the device path reads nothing back to the host, except its stop check
    after every ``CHECK_EVERY``-th step (one ``.tolist()`` of two values), inside the model's passes included: the masks
    are made from what simpe knows (``cross.known_masks``: transformers would read back the all-ones self-attention
    mask Marian builds when given none, and with three sources of different lengths the padded cross-attention mask).
    The setup before step 0 and the results after the last step are outside the steps."""
    loaded = _model("bfloat16")
    decoder = BeamDecoder(5)
    window = [-1]
    hook = loaded.model.get_decoder().register_forward_pre_hook(lambda *_: window.__setitem__(0, window[0] + 1))
    saved = beam_device.ON_DEVICE
    beam_device.ON_DEVICE = True
    reads = _Reads(window)
    try:
        with decoding(loaded.model):
            sources = [encode(loaded.model, loaded.family.encode_source(loaded.tokenizer, text, "cpu")[0], decoder.limit)
                       for text in DEV[:group]]
            assert len({s.src_len for s in sources}) == min(group, 2)  # three sources: padded
            with reads, reads.aten:
                found = decoder.decode_sources(loaded.model, sources)
    finally:
        beam_device.ON_DEVICE = saved
        hook.remove()
    passes = window[0] + 1
    steps = max(r.info["steps"] for r in found)
    assert steps < passes <= steps + beam_device.CHECK_EVERY - 1  # a few passes past the end, until the next check
    inside = collections.Counter((step, what, where) for step, what, where in reads.found if 0 <= step < passes - 1)
    checks = list(range(beam_device.CHECK_EVERY - 1, passes - 1, beam_device.CHECK_EVERY))
    assert len(checks) >= 2
    assert sorted(step for step, _, _ in inside) == checks, inside
    assert {(what, where.split(":")[0]) for _, what, where in inside} == {("tolist", "beam_device.py")}
    assert set(inside.values()) == {1}
    outside = [(what, where) for step, what, where in reads.found if not 0 <= step < passes - 1]
    assert len(outside) <= 12, outside  # the setup (prefixes, the length limits) and the results, once per search


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (torch.cuda.is_available() is False)")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_on_cuda_the_device_path_runs_by_itself_and_decides_as_the_host_path(dtype: str, one_torch_thread: None) -> None:
    """On CUDA the device path is the default (``ON_DEVICE`` None): three sources in lockstep with ``even`` give, bit for
    bit, what the host path gives on CUDA (the same rows, the same kernels), and, in float32, the CPU's hypotheses
    with scores within 1e-4 (another device's kernels: float noise). On the dynamic cache (``static.forced(False)``):
    the fixed shapes CUDA runs by default pad the sources, which moves the last bits (tests/unit/test_static_decoding.py)."""
    from simpe.model import load_model

    loaded = load_model(REPO / "models" / "demo-en-de", "cuda", dtype=dtype)
    decoder = BeamDecoder(5)
    assert beam_device.ON_DEVICE is None and beam_device.on_device(torch.device("cuda"))

    def decode(model, device: str, on_device: bool | None) -> list:
        saved = beam_device.ON_DEVICE
        beam_device.ON_DEVICE = on_device
        try:
            out = []
            with decoding(model.model):
                for start in range(0, 12, 3):
                    sources = [encode(model.model, model.family.encode_source(model.tokenizer, text, device)[0], decoder.limit)
                               for text in DEV[start:start + 3]]
                    out += decoder.decode_sources(model.model, sources, even=True)
            return out
        finally:
            beam_device.ON_DEVICE = saved

    from simpe.decoders import static

    with static.forced(False):
        on_gpu = decode(loaded, "cuda", None)
        _same(decode(loaded, "cuda", False), on_gpu, exact=True)
    if dtype == "float32":
        cpu = decode(_model("float32"), "cpu", False)
        assert [[h.tokens for h in r.hypotheses] for r in cpu] == [[h.tokens for h in r.hypotheses] for r in on_gpu]
        for a, b in zip(cpu, on_gpu):
            assert all(abs(x.score - y.score) <= 1e-4 * max(1.0, abs(x.score)) for x, y in zip(a.hypotheses, b.hypotheses))
            assert (a.expansions, a.info) == (b.expansions, b.info)


def test_sources_of_one_length_pass_no_source_mask_and_the_model_computes_the_same(one_torch_thread: None) -> None:
    """Sources of one length (a lockstep group's runs decode one sentence) have no padding: ``Lockstep`` passes no
    cross-attention mask, and each step's log-probabilities are, bit for bit, those under the all-ones mask passed
    before (transformers drops it, after reading it back)."""
    from simpe.decoders.incremental import Lockstep

    loaded = _model("float32")
    limit = BeamDecoder(5).limit
    with decoding(loaded.model):
        ids = loaded.family.encode_source(loaded.tokenizer, DEV[0], "cpu")[0]
        sources = [encode(loaded.model, ids, limit) for _ in range(3)]
        quiet, masked = Lockstep(loaded.model, sources), Lockstep(loaded.model, sources)
        assert quiet.src_mask is None
        masked.src_mask = torch.ones((3, sources[0].src_len), dtype=torch.long)
        tokens, keep = None, [0, 0, 1, 1, 2, 2]  # step 0: two rows per source, then rows swapped within each source
        for _ in range(4):
            a, b = quiet.step(tokens), masked.step(tokens)
            assert torch.equal(a, b)
            for rows in (quiet, masked):
                rows.select(keep, [0, 0, 1, 1, 2, 2])
            tokens, keep = a.argmax(dim=1)[keep], [1, 0, 2, 3, 5, 4]


def test_a_lockstep_groups_stacked_model_decodes_the_same_on_the_device_path(one_torch_thread: None) -> None:
    """A lockstep group's search (``simpe.loop.group``: the runs' weights stacked, one source per run, ``even``): the
    device path gives each run the host path's hypotheses, scores, expansions and steps, bit for bit."""
    import copy

    from simpe.models.stacked import StackedModel

    loaded = _model("float32")
    models = [copy.deepcopy(loaded.model) for _ in range(3)]
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for number, model in enumerate(models[1:], 1):  # each run but the first moved by its own small offset
            for name, param in model.named_parameters():
                if "embed_positions" not in name:
                    param.add_(torch.randn(param.shape, generator=generator) * 3e-3 * number)
    stack = StackedModel(models, loaded.family.frozen_markers)
    decoder = BeamDecoder(5)
    found = {}
    for on_device in (False, True):
        saved = beam_device.ON_DEVICE
        beam_device.ON_DEVICE = on_device
        try:
            with decoding(stack.model):
                found[on_device] = []
                for text in DEV[:4]:
                    ids = loaded.family.encode_source(loaded.tokenizer, text, "cpu")[0]
                    found[on_device] += decoder.decode_sources(stack.model, encode(stack.model, ids, decoder.limit, runs=3), even=True)
        finally:
            beam_device.ON_DEVICE = saved
    _same(found[False], found[True], exact=True)
    assert len({tuple(h.tokens for h in r.hypotheses) for r in found[True]}) > 4  # the runs' searches differ


@pytest.mark.parametrize("chain", [20, 40])
def test_a_chain_of_tied_values_past_the_window_is_searched_on_the_host(chain: int, one_torch_thread: None) -> None:
    """A tiny Marian whose every step scores tokens 1..``chain`` 3e-5 apart (its output weights zero, its output bias a
    chain: each value tied to the next, 4e-5 being the tolerance at -4), the end token and the rest far below. A chain
    of 20 fits the search's window of 26 at a row's cut of 10: the device path decides it, as the host path does. A
    chain of 40 runs past it: the device search answers None and ``beam_search_many`` gives the host path's result."""
    sys.path.insert(0, str(REPO / "tests" / "unit"))
    from test_decoders import peaky_tiny

    from simpe.decoders.beam import beam_search_many

    model = peaky_tiny(3, vocab=60, scale=0.0)
    with torch.no_grad():
        model.final_logits_bias.fill_(-10.0)
        model.final_logits_bias[0, 0] = -20.0  # the end token: only at the last position
        for token in range(1, chain + 1):
            model.final_logits_bias[0, token] = -3e-5 * token
    decoder = BeamDecoder(5, max_len_a=0.0, max_len_b=4)
    with decoding(model):
        sources = [encode(model, torch.tensor([[5, 7, 0]]), decoder.limit) for _ in range(2)]
        host = beam_search_many(model, sources, 5, even=True)
        device = beam_device.search(model, sources, 5)
        saved = beam_device.ON_DEVICE
        beam_device.ON_DEVICE = True
        try:
            forced = beam_search_many(model, sources, 5, even=True)
        finally:
            beam_device.ON_DEVICE = saved
    assert forced == host
    if chain == 40:
        assert device is None
    else:
        assert device == host
        assert host[0][0][0].tokens == (1, 1, 1, 0)  # a tied chain: the lowest ids, row by row


@pytest.mark.parametrize("kind", ["marian", "mbart", "m2m100", "t5", "llama", "qwen2"])
def test_every_family_searches_the_same_on_the_device_path_without_reading_back(kind: str, one_torch_thread: None) -> None:
    """Tiny random models of each family (``tests/tiny_families.py``), three sources of different lengths in lockstep:
    for a causal LM, prompts of different lengths (padded rows, a mask in every pass), for an encoder-decoder, padded
    sources (a cross-attention mask). The device path gives the host path's results (bit for bit with ``even``, to the
    tie tolerance without), and between one pass and the next it reads back only its stop check."""
    sys.path.insert(0, str(REPO / "tests" / "unit"))
    from test_cross import _model as family_model_and_sources

    from simpe.decoders.beam import beam_search_many

    model, ids = family_model_and_sources(kind)
    decoder = BeamDecoder(3, max_len_a=0.0, max_len_b=9, max_len_cap=9)
    window = [-1]
    hook = model.register_forward_pre_hook(lambda *_: window.__setitem__(0, window[0] + 1))
    reads = _Reads(window)
    found = {}
    try:
        with decoding(model):
            sources = [encode(model, source, decoder.limit) for source in ids]
            for even in (True, False):
                found["host", even] = beam_search_many(model, sources, 3, even=even)
                window[0] = -1
                with reads, reads.aten:
                    found["device", even] = beam_device.search(model, sources, 3)
                passes = window[0] + 1
                inside = [(step, what, where) for step, what, where in reads.found if 0 <= step < passes - 1]
                assert [step for step, _, _ in inside] == list(range(beam_device.CHECK_EVERY - 1, passes - 1, beam_device.CHECK_EVERY))
                assert {where.split(":")[0] for _, _, where in inside} <= {"beam_device.py"}, inside
                reads.found.clear()
    finally:
        hook.remove()
    assert found["device", True] == found["device", False]  # the device path has one layout
    assert found["device", True] == found["host", True]
    for (hyps, expansions, steps), (host_hyps, host_expansions, host_steps) in zip(found["device", False], found["host", False]):
        assert [h.tokens for h in hyps] == [h.tokens for h in host_hyps] and (expansions, steps) == (host_expansions, host_steps)
        assert all(tied(a.score, b.score, SCORE_ATOL) for a, b in zip(hyps, host_hyps))
    assert len({len(s.prefix) for s in sources}) == (3 if kind in ("llama", "qwen2") else 1)


def test_where_the_device_path_applies() -> None:
    """Off the CPU by default (forced either way by ``ON_DEVICE``), for plain beam of at most ``MAX_BEAM`` beams without a
    step hook, a typed prefix or a memo; everything else searches on the host."""
    import dataclasses

    from simpe.decoders.incremental import Source

    source = Source(None, 3, 5, None, device=torch.device("cpu"))
    on_gpu = dataclasses.replace(source, device=torch.device("cuda"))
    assert beam_device.ON_DEVICE is None
    assert not beam_device.usable([source], 5, False, False) and beam_device.usable([on_gpu], 5, False, False)
    assert not beam_device.usable([on_gpu], 5, True, False)  # min-heap beam
    assert not beam_device.usable([on_gpu], 5, False, True)  # the exact search's step hook
    assert not beam_device.usable([on_gpu, dataclasses.replace(on_gpu, constraint=object())], 5, False, False)
    assert not beam_device.usable([dataclasses.replace(on_gpu, memo=object())], 5, False, False)
    assert beam_device.usable([on_gpu], beam_device.MAX_BEAM, False, False)
    assert not beam_device.usable([on_gpu], beam_device.MAX_BEAM + 1, False, False)
    saved = beam_device.ON_DEVICE
    try:
        beam_device.ON_DEVICE = True
        assert beam_device.usable([source], 5, False, False)
        beam_device.ON_DEVICE = False
        assert not beam_device.usable([on_gpu], 5, False, False)
    finally:
        beam_device.ON_DEVICE = saved


def test_a_tie_among_finished_hypotheses_is_ordered_as_the_host_orders_it(monkeypatch: pytest.MonkeyPatch,
                                                                          one_torch_thread: None) -> None:
    """The one dev sentence of the first 400 whose finished hypotheses met a tie (beam 10, bfloat16: ``_keep_best``
    ranked a group tied to the noise by tokens): the device path gives the host path's ten hypotheses."""
    seen = _counting_ties(monkeypatch)
    loaded = _model("bfloat16")
    decoder = BeamDecoder(10)
    found = {}
    for on_device in (False, True):
        monkeypatch.setattr(beam_device, "ON_DEVICE", on_device)
        with decoding(loaded.model):
            source = encode(loaded.model, loaded.family.encode_source(loaded.tokenizer, DEV[92], "cpu")[0], decoder.limit)
            found[on_device] = decoder.decode_sources(loaded.model, [source])
    assert DEV[92] == "Legend On/Off" and seen["finished tied"] >= 1
    _same(found[False], found[True], exact=True)
    assert len(found[True][0].hypotheses) == 10
