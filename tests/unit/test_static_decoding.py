"""Decoding on fixed shapes (simpe.decoders.static), forced on the CPU: a static key/value cache per (rows, length
bucket), sources padded to a bucket, the same rows from step 0 on, and the step as one CUDA graph on CUDA.

Padding changes what the attention's kernels sum over (zero weights on the padded positions, and a masked attention
kernel), not what the model computes: in float32 the static path's hypotheses, expansions and steps are the dynamic
path's, and its scores equal them to the tie tolerance (float noise: up to 5.7e-6 seen on the demo model). In bfloat16
a step's log-probabilities differ by the logits' last bits (up to 0.12, 0.63% of the row's largest magnitude, on 24
dev sentences; a bfloat16 step is 2^-8 relative), which moves the best hypothesis of 3 of those 24 sentences at beam
5: bfloat16's own noise, as between any two kernels (a GPU's and the CPU's); the test bounds it per step. Between two passes it reads nothing back to
the host but the stop check, and its buffers keep their addresses from search to search (what a graph replays). The
graph itself needs CUDA: those tests are CUDA-marked.
"""
from __future__ import annotations

import collections
import sys
from pathlib import Path

import pytest
import torch

from simpe.decoders import beam_device, static
from simpe.decoders.beam import BeamDecoder, beam_search_many
from simpe.decoders.incremental import decoding, encode
from simpe.ties import SCORE_ATOL, tied

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "unit"))
STATIC = pytest.mark.skipif(not static.supported(), reason="transformers 4's static cache takes positions from the caller")
from test_beam_device import DEV, _model, _Reads, _same  # noqa: E402


def _decode(loaded, dtype_sentences: int, group: int, static_on: bool, device: str = "cpu", beam_size: int = 5,
            graphs: bool | None = None) -> list:
    decoder = BeamDecoder(beam_size)
    saved = beam_device.ON_DEVICE
    beam_device.ON_DEVICE = True
    try:
        out = []
        with static.forced(static_on, graphs), decoding(loaded.model):
            for start in range(0, dtype_sentences, group):
                sources = [encode(loaded.model, loaded.family.encode_source(loaded.tokenizer, text, device)[0], decoder.limit)
                           for text in DEV[start:start + group]]
                out += decoder.decode_sources(loaded.model, sources)
        return out
    finally:
        beam_device.ON_DEVICE = saved


def test_buckets() -> None:
    assert [static.bucket(n) for n in (1, 16, 17, 32, 33, 200, 256, 257, 1024, 1025, 3000)] == \
        [16, 16, 32, 32, 64, 256, 256, 512, 1024, 2048, 3072]


@STATIC
@pytest.mark.parametrize("group", [1, 3])
def test_the_static_path_decodes_as_the_dynamic_path(group: int, one_torch_thread: None,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo model in float32, 24 dev sentences one at a time and three in lockstep (padded sources): the static path
    gives the dynamic device path's hypotheses, expansions and steps, and scores within the tie tolerance; it did run
    (every search built ``StaticRows``)."""
    dtype = "float32"
    loaded = _model(dtype)
    built = collections.Counter()
    rows = static.StaticRows

    def counted(*args, **kwargs):
        built["static"] += 1
        return rows(*args, **kwargs)

    dynamic = _decode(loaded, 24, group, static_on=False)
    monkeypatch.setattr(static, "StaticRows", counted)
    fixed = _decode(loaded, 24, group, static_on=True)
    assert built["static"] == 24 // group
    _same(dynamic, fixed, exact=False)
    worst = max(abs(a.score - b.score) for x, y in zip(dynamic, fixed) for a, b in zip(x.hypotheses, y.hypotheses))
    print(dtype, group, "largest score difference", worst)


@STATIC
@pytest.mark.parametrize("dtype,bound", [("float32", 1e-5), ("bfloat16", 2.0 ** -6)])
def test_each_step_computes_the_dynamic_steps_log_probabilities(dtype: str, bound: float, one_torch_thread: None) -> None:
    """The same tokens fed to both (the dynamic path's greedy choice), 24 dev sentences: each step's finite
    log-probabilities differ by at most ``bound`` of the row's largest magnitude (float32: 3.4e-7 seen; bfloat16:
    0.0063 seen, the logits' last bit), and -inf in the same places."""
    from simpe.decoders.incremental import Lockstep

    loaded = _model(dtype)
    limit = BeamDecoder(5).limit
    worst = 0.0
    with decoding(loaded.model):
        for text in DEV[:24]:
            sources = [encode(loaded.model, loaded.family.encode_source(loaded.tokenizer, text, "cpu")[0], limit)]
            dynamic = Lockstep(loaded.model, sources, reuse=False)
            fixed = static.StaticRows(loaded.model, sources, 1)
            tokens = None
            for _ in range(sources[0].max_len):
                a, b = dynamic.step(tokens), fixed.step(tokens)
                finite = torch.isfinite(a)
                assert torch.equal(finite, torch.isfinite(b))
                worst = max(worst, float((a - b)[finite].abs().max() / a[finite].abs().max()))
                tokens = a.argmax(dim=1)
                if int(tokens[0]) in sources[0].special.stops:
                    break
                fixed.select_index(torch.zeros(1, dtype=torch.long), [0])
    print(dtype, "largest relative difference", worst)
    assert worst <= bound


@STATIC
def test_a_static_step_reads_nothing_back_and_its_buffers_keep_their_addresses(one_torch_thread: None) -> None:
    """Three padded sources: between one pass and the next only the stop check reads the host (as on the dynamic device
    path), and two searches of one shape use one pool entry whose cache, tokens, parents and cross-attention states
    stay where they were (what a captured graph reads)."""
    loaded = _model("float32")
    decoder = BeamDecoder(5)
    window = [-1]
    hook = loaded.model.get_decoder().register_forward_pre_hook(lambda *_: window.__setitem__(0, window[0] + 1))
    reads = _Reads(window)
    static.clear()
    saved = beam_device.ON_DEVICE
    beam_device.ON_DEVICE = True
    addresses = []
    try:
        with static.forced(True), decoding(loaded.model):
            for start in (0, 3):
                sources = [encode(loaded.model, loaded.family.encode_source(loaded.tokenizer, text, "cpu")[0], decoder.limit)
                           for text in DEV[start:start + 3]]
                window[0] = -1
                reads.found.clear()
                with reads, reads.aten:
                    found = decoder.decode_sources(loaded.model, sources)
                passes = window[0] + 1
                steps = max(r.info["steps"] for r in found)
                assert steps <= passes <= steps + beam_device.CHECK_EVERY - 1  # (equal: a source ran to its length limit)
                inside = [(step, what, where) for step, what, where in reads.found if 0 <= step < passes - 1]
                assert [step for step, _, _ in inside] == list(range(beam_device.CHECK_EVERY - 1, passes - 1, beam_device.CHECK_EVERY))
                assert {where.split(":")[0] for _, _, where in inside} == {"beam_device.py"}, inside
                (_, entry), = static._POOL.values()
                layers = entry.cache.self_attention_cache.layers
                addresses.append([t.data_ptr() for t in [entry.tokens, entry.parents, entry.src_mask, entry.hidden,
                                                          *[layer.keys for layer in layers], *[layer.values for layer in layers],
                                                          *entry.cross_keys, *entry.cross_values]])
                assert layers[0].keys.shape[2] == static.bucket(len(sources[0].prefix) + max(s.max_len for s in sources))
    finally:
        beam_device.ON_DEVICE = saved
        hook.remove()
    assert addresses[0] == addresses[1] and len(addresses[0]) > 8


@pytest.mark.parametrize("kind", ["marian", "mbart", "m2m100", "t5", "llama", "qwen2"])
def test_every_family_searches_the_same_on_fixed_shapes(kind: str, one_torch_thread: None) -> None:
    """Tiny random models of each family: the encoder-decoders whose attention reads transformers' cache (Marian,
    mBART, M2M100) search three sources of different lengths in lockstep on fixed shapes, a causal LM (Llama, Qwen2)
    each prompt alone (prompts of different lengths in one search keep the dynamic path); each gives the host path's
    results to the tie tolerance, reading back only the stop check between two passes. T5 (its position bias) keeps
    the dynamic path."""
    from test_cross import _model as family_model_and_sources

    model, ids = family_model_and_sources(kind)
    causal = kind in ("llama", "qwen2")
    decoder = BeamDecoder(3, max_len_a=0.0, max_len_b=9, max_len_cap=9)
    window = [-1]
    hook = model.register_forward_pre_hook(lambda *_: window.__setitem__(0, window[0] + 1))
    reads = _Reads(window)
    searched = 0
    try:
        with decoding(model):
            for group in ([[source] for source in ids] if causal else [ids]):
                sources = [encode(model, source, decoder.limit) for source in group]
                host = beam_search_many(model, sources, 3, even=True)
                window[0] = -1
                reads.found.clear()
                with static.forced(True), reads, reads.aten:
                    assert static.usable(model, sources) is (kind != "t5" and static.supported())
                    fixed = beam_device.search(model, sources, 3)
                passes = window[0] + 1
                inside = [(step, what, where) for step, what, where in reads.found if 0 <= step < passes - 1]
                assert [step for step, _, _ in inside] == list(range(beam_device.CHECK_EVERY - 1, passes - 1, beam_device.CHECK_EVERY))
                assert {where.split(":")[0] for _, _, where in inside} <= {"beam_device.py"}, inside
                for (hyps, expansions, steps), (host_hyps, host_expansions, host_steps) in zip(fixed, host):
                    assert [h.tokens for h in hyps] == [h.tokens for h in host_hyps]
                    assert (expansions, steps) == (host_expansions, host_steps)
                    assert all(tied(a.score, b.score, SCORE_ATOL) for a, b in zip(hyps, host_hyps))
                    searched += 1
    finally:
        hook.remove()
    assert searched == 3
    if causal:  # three prompts of different lengths in one search: the dynamic path
        with decoding(model), static.forced(True):
            assert not static.usable(model, [encode(model, source, decoder.limit) for source in ids])


def test_where_fixed_shapes_apply() -> None:
    """Off the CPU by default (``STATIC`` None), graphs on CUDA only (``GRAPHS`` None), both forced by ``forced``."""
    assert static.STATIC is None and static.GRAPHS is None
    assert not static.enabled("cpu") and static.enabled("cuda") and static.enabled(torch.device("cuda", 0))
    assert static.graphs_enabled("cuda") and not static.graphs_enabled("cpu")
    with static.forced(True, False):
        assert static.enabled("cpu") and not static.graphs_enabled("cuda")
    with static.forced(False):
        assert not static.enabled("cuda")
    assert static.STATIC is None and static.GRAPHS is None


CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (torch.cuda.is_available() is False)")


@STATIC
@pytest.mark.cuda
@CUDA
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_on_cuda_the_step_is_one_graph_and_decides_as_the_eager_step(dtype: str, one_torch_thread: None) -> None:
    """On CUDA the static path captures its step once per shape and replays it: the results equal the eager static
    steps' bit for bit (the same kernels), and in float32 the CPU dynamic path's hypotheses with scores within 1e-4."""
    from simpe.model import load_model

    loaded = load_model(REPO / "models" / "demo-en-de", "cuda", dtype=dtype)
    static.clear()
    eager = _decode(loaded, 12, 3, static_on=True, device="cuda", graphs=False)
    replayed = _decode(loaded, 12, 3, static_on=True, device="cuda", graphs=None)
    entries = [entry for _, entry in static._POOL.values()]
    assert entries and all(entry.refused is None for entry in entries), [e.refused for e in entries]
    assert any(entry.graphs for entry in entries)
    _same(eager, replayed, exact=True)
    if dtype == "float32":
        cpu = _decode(_model("float32"), 12, 3, static_on=False)
        assert [[h.tokens for h in r.hypotheses] for r in cpu] == [[h.tokens for h in r.hypotheses] for r in replayed]
        for a, b in zip(cpu, replayed):
            assert all(abs(x.score - y.score) <= 1e-4 * max(1.0, abs(x.score)) for x, y in zip(a.hypotheses, b.hypotheses))


@STATIC
@pytest.mark.cuda
@CUDA
def test_on_cuda_a_graph_reads_weights_written_in_place_and_is_captured_anew_when_they_move(one_torch_thread: None) -> None:
    """A weight written in place (the update off the CPU keeps addresses) is read by the next replay; a weight given new
    storage (another address) makes the next search capture its step anew: the results equal eager steps' either way."""
    from simpe.model import load_model

    loaded = load_model(REPO / "models" / "demo-en-de", "cuda", dtype="float32")
    static.clear()
    _decode(loaded, 3, 3, static_on=True, device="cuda")
    (_, entry), = static._POOL.values()
    first = entry.graphs[5]
    norm = loaded.model.get_decoder().layers[-1].final_layer_norm.weight
    with torch.no_grad():
        norm.mul_(1.5)  # in place: the same graph must read it
    after = _decode(loaded, 3, 3, static_on=True, device="cuda")
    assert entry.graphs[5] is first
    _same(_decode(loaded, 3, 3, static_on=True, device="cuda", graphs=False), after, exact=True)
    norm.data = norm.data.clone()  # the same values at another address: the graph is captured anew
    with torch.no_grad():
        norm.mul_(0.5)
    moved = _decode(loaded, 3, 3, static_on=True, device="cuda")
    assert entry.graphs[5] is not first and entry.refused is None
    _same(_decode(loaded, 3, 3, static_on=True, device="cuda", graphs=False), moved, exact=True)


def test_a_graph_is_refused_beside_a_methods_hook_and_the_loops_clock_stands_aside_while_one_is_recorded(
        one_torch_thread: None) -> None:
    """The loop's clock (``ModelTimer``) is the only hook a captured step may run beside: a method's forward hook (bias's
    output term) makes the entry step eagerly. While a step is recorded (``static.capturing``) the clock times nothing,
    so no half-recorded pass is left in its sums."""
    from simpe.loop.phases import ModelTimer

    loaded = _model("float32")
    timer = ModelTimer(loaded.model)
    try:
        assert static._foreign_hook(loaded.model) is None
        handle = loaded.model.lm_head.register_forward_hook(lambda module, inputs, output: output + 0.0)
        try:
            assert static._foreign_hook(loaded.model) == "lm_head"
        finally:
            handle.remove()
        ids = loaded.family.encode_source(loaded.tokenizer, DEV[0], "cpu")[0]
        with torch.inference_mode():
            static._CAPTURING = True
            try:
                loaded.model(input_ids=ids, decoder_input_ids=ids[:, :1])
            finally:
                static._CAPTURING = False
            assert (timer.calls, timer.seconds, timer._depth) == (0, 0.0, 0)
            loaded.model(input_ids=ids, decoder_input_ids=ids[:, :1])
            assert timer.calls == 1 and timer.seconds > 0
    finally:
        timer.remove()
