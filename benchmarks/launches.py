"""What a GPU would launch, counted on the CPU: operators and host reads per beam step, per update repetition and
per segment, on depth-true tiny models of NLLB-600M and Llama 3.2 1B (issue 67).

    python benchmarks/launches.py [--shapes nllb-600m llama3.2-1b] [--label before|after] [--no-record]
    python benchmarks/launches.py --compare REV    # the recorded after figures over the before ones (REV's code)

A depth-true model is a shape of ``simpe.models.shapes`` with its published layer counts, heads, key/value heads,
vocabulary and tying, and a small width (``TINY``: 4 values per head): every layer, head group and parameter tensor
of the real model is there, so each operator count is the real model's, and the model runs in seconds on a CPU.
The runs go through simpe's own code: the ``full`` preset through ``simpe.loop.run.Loop`` (its beam-5 decoder, the
``Lockstep`` step of ``simpe.decoders.incremental``) and ``simpe.loop.update.update``, on the stream's segments,
each hypothesis limited to the source's length (random weights never write the end token).

What is counted (through ``torch.profiler``, on the CPU):

- **launches**: the aten operators a GPU would run as kernels: every operator that calls no other that launches
  (a leaf, or one that only allocates, views or reads back) except views, allocations and metadata (``NO_KERNEL``),
  plus each ``_foreach_*`` / ``_fused_*`` call as one (on
  a GPU one multi-tensor kernel per few hundred chunks of 65,536 values, where the CPU runs a loop of per-tensor
  operators inside it, which are not counted). A proxy: a GPU library may take two kernels for one operator.
- **host reads**: where the host waits for a GPU's result: ``.tolist()``, ``.item()``, ``float()``, ``int()``,
  ``bool()`` of a tensor, ``.numpy()``, ``.cpu()`` (seen by a ``TorchFunctionMode``), and the operators that
  read a size or a value back inside aten (``aten::_local_scalar_dense`` outside those, ``aten::nonzero``,
  ``aten::equal``).
- **uploads**: ``torch.tensor`` / ``torch.as_tensor`` from Python values (a host-to-device copy on a GPU).

The counts depend on the code and the model's depth, never on timing or load: the same run gives the same counts on
any CPU (a CPU kernel set may route a few operators differently; the row names the machine). They count the code
path a GPU runs: the CPU-only fusion of the update (``simpe.loop.update.FUSE_BYTES``) is turned off for the count,
and where ``simpe.loop.undo`` has an in-place mode (the one CUDA uses) it is turned on, as is plain beam search's
device path (``simpe.decoders.beam_device.ON_DEVICE``) where the code has one.

- **beam step**: one translation (the third stream segment; beam 5) divided by its decoder steps, with plain beam
  search on the device (``simpe.decoders.beam_device``, a GPU's path: a host read every few steps for the stop
  check, a few steps run past the end until that check); beside it, the same translation with the host path's
  ranking (``simpe.decoders.beam``, the CPU's path), where the code has both. Where the code has fixed shapes
  (``simpe.decoders.static``: NLLB's family, not Llama's), the part of each step a CUDA graph replays (the reorder,
  the decoder pass, the log-softmax) is marked, and a line gives the launches a step takes when that part is one
  replay: a projection from the CPU's count, which runs the step eagerly (the graph itself needs CUDA).
- **update repetition**: ``update`` with ``max_repeats=3``, a perplexity threshold of 1 (no pair reaches it) and no measuring
  pass after the last step, divided by 3, after one update as a warm-up; split into the model's forward, the
  backward pass, and the rest (the loss, clipping, the SGD step, master copies, undo); in bfloat16 with float32
  master copies (as on a GPU) and in float32. Where the code has the fixed-shape update (``simpe.loop.update_graph``:
  NLLB's family, plain SGD), each repetition is what a CUDA graph replays, and a line gives the launches a repetition
  takes as one replay (projected, as for the beam step).
- **segment**: the fourth segment's translation and update as the loop runs them (the preset's threshold), in
  bfloat16 with master copies.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

from entry import run_main

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SETTINGS = {"nllb-600m": ["model.src_lang=eng_Latn", "model.tgt_lang=deu_Latn"], "llama3.2-1b": []}
# the published depth and head structure, 4 values per head (NLLB: 16 heads of 64 -> 16 of 4; Llama 3.2 1B: 32 query
# and 8 key/value heads of 64 -> of 4), feed-forward 2x the width
TINY = {"nllb-600m": dict(d_model=64, encoder_ffn_dim=128, decoder_ffn_dim=128),
        "llama3.2-1b": dict(hidden_size=128, intermediate_size=256, head_dim=4)}
LENGTH = ["decoder.params.max_len_a=1.0", "decoder.params.max_len_b=1"]  # as profile_update and the device check
NO_KERNEL = {
    "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias", "aten::t", "aten::transpose",
    "aten::permute", "aten::expand", "aten::expand_as", "aten::as_strided", "aten::slice", "aten::select",
    "aten::unsqueeze", "aten::squeeze", "aten::detach", "aten::detach_", "aten::alias", "aten::lift_fresh",
    "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::resolve_conj", "aten::resolve_neg",
    "aten::unbind", "aten::split", "aten::split_with_sizes", "aten::narrow", "aten::chunk", "aten::unflatten",
    "aten::flatten", "aten::contiguous", "aten::to", "aten::result_type", "aten::view_as", "aten::set_",
    "aten::resize_", "aten::numpy_T", "aten::movedim", "aten::diagonal", "aten::_has_compatible_shallow_copy_type",
    "aten::is_same_size", "aten::_shape_as_tensor", "aten::lift", "aten::type_as", "aten::scalar_tensor",
    "aten::_local_scalar_dense", "aten::item", "aten::is_nonzero", "aten::dim", "aten::size", "aten::stride",
    "aten::requires_grad_", "aten::retain_grad", "aten::_version", "aten::is_floating_point", "aten::swapaxes",
    "aten::matrix_H", "aten::mT", "aten::_conj", "aten::_neg_view", "aten::squeeze_", "aten::unsqueeze_",
    "aten::as_strided_", "aten::_nested_tensor_from_mask_left_aligned", "aten::sym_size", "aten::sym_stride",
    "aten::sym_numel", "aten::sym_storage_offset", "aten::record_stream", "aten::new_empty",
    "aten::new_empty_strided", "aten::broadcast_tensors", "aten::align_as",
}
READS_INSIDE = {"aten::_local_scalar_dense", "aten::nonzero", "aten::equal"}  # a value or size read back by aten
READ_PREFIX = "host_read::"
GRAPH_RANGE = "phase::graph"  # around the part of a step that CUDA captures as one graph (simpe.decoders.static)
UPLOAD_PREFIX = "upload::"


def _host_reads_mode() -> Any:
    """A ``TorchFunctionMode`` that marks each Python-level read of a tensor's values (and each tensor made from
    Python values) with a profiler range, so the counts find them and do not count the reads' own operators again."""
    import torch
    from torch.overrides import TorchFunctionMode

    T = torch.Tensor
    reads = {T.tolist, T.item, T.__bool__, T.__float__, T.__int__, T.__index__, T.numpy, T.cpu}
    uploads = {torch.tensor, torch.as_tensor}

    class HostReads(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if func in reads:
                with torch.profiler.record_function(READ_PREFIX + func.__name__):
                    return func(*args, **kwargs)
            if func in uploads:
                with torch.profiler.record_function(UPLOAD_PREFIX + func.__name__):
                    return func(*args, **kwargs)
            return func(*args, **kwargs)

    return HostReads()


def _ancestors(event: Any) -> Iterator[Any]:
    parent = event.cpu_parent
    while parent is not None:
        yield parent
        parent = parent.cpu_parent


def _tally(event: Any) -> tuple[int, int]:
    """(launches, host reads) of one aten operator and the operators it calls: a ``_foreach_*`` / ``_fused_*`` call is
    one launch; an operator that reads a value back (``READS_INSIDE``) is a host read; any other is one launch when
    nothing it calls launches (a leaf, or one that only allocates, views or reads back: ``aten::index`` with a mask)
    and it is not itself a view, allocation or metadata operator (``NO_KERNEL``), else the sum of what it calls."""
    name = event.name
    if name.startswith(("aten::_foreach_", "aten::_fused_")):
        return 1, 0
    if name in READS_INSIDE:
        return 0, 1
    launches = reads = 0
    for child in event.cpu_children:
        if child.name.startswith("aten::"):
            sub = _tally(child)
            launches, reads = launches + sub[0], reads + sub[1]
    if launches == 0 and name not in NO_KERNEL:
        launches = 1
    return launches, reads


def count(events: Any) -> dict[str, int]:
    """launches, host reads and uploads of a profile's events (see the module docstring), with launches split by
    phase: ``forward`` (under the model's forward, marked ``phase::forward``), ``backward`` (autograd's engine), and
    the rest. Each outermost aten operator is tallied with what it calls (``_tally``); the operators inside a host
    read or an upload of Python code are that read's or upload's own."""
    out = {"launches": 0, "host_reads": 0, "uploads": 0, "forward": 0, "backward": 0, "rest": 0, "in_graph": 0,
           "graph_reads": 0, "replays": 0}
    for e in events:
        name = e.name
        if name == GRAPH_RANGE:
            out["replays"] += 1
            continue
        if name.startswith(READ_PREFIX):
            out["host_reads"] += 1
            out["graph_reads"] += any(a.name == GRAPH_RANGE for a in _ancestors(e))
            continue
        if name.startswith(UPLOAD_PREFIX):
            out["uploads"] += 1
            continue
        if not name.startswith("aten::"):
            continue
        ancestors = [a.name for a in _ancestors(e)]
        if any(a.startswith(("aten::", READ_PREFIX, UPLOAD_PREFIX)) for a in ancestors):
            continue  # tallied with its outermost operator, or the read's or upload's own
        launches, reads = _tally(e)
        out["launches"] += launches
        out["host_reads"] += reads
        if GRAPH_RANGE in ancestors:  # what a CUDA graph replays as one launch (simpe.decoders.static)
            out["in_graph"] += launches
            out["graph_reads"] += reads
        if "phase::forward" in ancestors:
            out["forward"] += launches
        elif any(a.startswith(("autograd::engine", "torch::autograd")) for a in ancestors) or "Backward" in "".join(ancestors):
            out["backward"] += launches
        else:
            out["rest"] += launches
    return out


@contextlib.contextmanager
def counted() -> Iterator[dict[str, Any]]:
    """Profile the block with host reads marked; the yielded dict gets the counts at the end."""
    from torch.profiler import ProfilerActivity, profile

    result: dict[str, Any] = {}
    with profile(activities=[ProfilerActivity.CPU]) as prof, _host_reads_mode():
        yield result
    result.update(count(prof.events()))


@contextlib.contextmanager
def as_on_gpu() -> Iterator[None]:
    """The code path a GPU runs: the update's CPU-only fusion off, undo in place, the pair's masks said rather than
    read back (``simpe.loop.update.KNOWN_MASKS``), plain beam search on the device (``simpe.decoders.beam_device``) on
    fixed shapes (``simpe.decoders.static``, its graph's part of each step marked) where the code has those modes."""
    import simpe.loop.undo as undo
    import simpe.loop.update as upd

    try:
        from simpe.decoders import beam_device
    except ImportError:  # code from before the device beam (a before figure)
        beam_device = None
    try:
        from simpe.decoders import static
    except ImportError:  # code from before fixed shapes (a before figure)
        static = None
    try:
        from simpe.loop import update_graph
    except ImportError:  # code from before the fixed-shape update (a before figure)
        update_graph = None
    with contextlib.ExitStack() as stack:
        if static is not None:
            stack.enter_context(static.forced(True))
            stack.enter_context(_graph_range(static.StaticRows, "run"))
        if update_graph is not None:
            saved = update_graph.ON_DEVICE
            update_graph.ON_DEVICE = True
            stack.callback(setattr, update_graph, "ON_DEVICE", saved)
            stack.enter_context(_graph_range(update_graph._Runner, "repetition"))
        with _gpu_flags(upd, undo, beam_device):
            yield


def _graph_range(owner: Any, name: str) -> Any:
    """``owner.name`` (what a CUDA graph replays: a decoding step, an update repetition) inside a profiler range
    ``GRAPH_RANGE`` for the block."""
    import torch

    original = getattr(owner, name)

    def marked(self: Any, *args: Any) -> Any:
        with torch.profiler.record_function(GRAPH_RANGE):
            return original(self, *args)

    @contextlib.contextmanager
    def patched() -> Iterator[None]:
        setattr(owner, name, marked)
        try:
            yield
        finally:
            setattr(owner, name, original)
    return patched()


@contextlib.contextmanager
def _gpu_flags(upd: Any, undo: Any, beam_device: Any) -> Iterator[None]:
    """``as_on_gpu``'s switches of the update, the undo and the beam search, restored afterwards."""
    saved = upd.FUSE_BYTES, getattr(undo, "IN_PLACE", None), getattr(beam_device, "ON_DEVICE", None), getattr(upd, "KNOWN_MASKS", None)
    upd.FUSE_BYTES = 1 << 62
    if hasattr(upd, "KNOWN_MASKS"):
        upd.KNOWN_MASKS = True
    if hasattr(undo, "IN_PLACE"):
        undo.IN_PLACE = True
    if beam_device is not None:
        beam_device.ON_DEVICE = True
    try:
        yield
    finally:
        upd.FUSE_BYTES = saved[0]
        if hasattr(undo, "IN_PLACE"):
            undo.IN_PLACE = saved[1]
        if beam_device is not None:
            beam_device.ON_DEVICE = saved[2]
        if hasattr(upd, "KNOWN_MASKS"):
            upd.KNOWN_MASKS = saved[3]


@contextlib.contextmanager
def beam_on_host() -> Iterator[bool]:
    """Plain beam search on its host path (``simpe.decoders.beam``'s Python ranking) for the block; yields whether the
    code has a device path at all (the host path's figure is printed beside the device path's only then)."""
    try:
        from simpe.decoders import beam_device
    except ImportError:
        yield False
        return
    saved = beam_device.ON_DEVICE
    beam_device.ON_DEVICE = False
    try:
        yield True
    finally:
        beam_device.ON_DEVICE = saved


def _mark_forward(model: Any) -> None:
    """A profiler range ``phase::forward`` around each call of the model's forward, and of its base model's and output
    projection's (a causal LM's fixed-shape update calls those two itself: ``simpe.loop.update_graph``; nested
    ranges count once)."""
    import torch

    open_ranges: list[Any] = []

    def enter(*_: Any) -> None:
        ctx = torch.profiler.record_function("phase::forward")
        ctx.__enter__()
        open_ranges.append(ctx)

    def leave(*_: Any) -> None:
        open_ranges.pop().__exit__(None, None, None)

    from simpe.models import family_of

    for module in (model, getattr(model, model.base_model_prefix, None), family_of(model).output_projection(model)):
        if module is not None:
            module.register_forward_pre_hook(enter)
            module.register_forward_hook(leave)


def measure(shape: str, dtype: str, folder: Path, runs: Path, segment: bool) -> dict[str, Any]:
    """The counts of one model at one dtype: a beam step, an update repetition, and (``segment``) a whole segment."""
    import dataclasses

    from simpe.config.files import load_config
    from simpe.loop.run import Loop
    from simpe.loop.update import update

    cfg = load_config("full", [f"runs_dir={runs}", "snapshots.every=0", f"model.path={folder}", "device=cpu",
                               f"model.dtype={dtype}", "data.segments=5", "metrics.truecaser=null", *LENGTH,
                               *SETTINGS[shape]])
    loop = Loop(cfg, progress=False)
    loop.load()
    decoder = loop.model.get_decoder() if hasattr(loop.model, "get_decoder") else loop.model
    steps = {"n": 0}
    decoder.register_forward_pre_hook(lambda *a: steps.__setitem__("n", steps["n"] + 1))
    _mark_forward(loop.model)
    segments = loop.segments
    out: dict[str, Any] = {}
    with as_on_gpu():
        draft = loop.translate(0, segments[0])  # warm-up: first translation, first update (buffers, masters)
        update(loop.model, loop.method, draft.pair, cfg.update)
        draft.tuning.close()
        draft = loop.translate(1, segments[1])
        draft.tuning.close()
        repeats = dataclasses.replace(cfg.update, max_repeats=3, ppl_threshold=1.0)
        update(loop.model, loop.method, draft.pair, repeats, measure_after=False)  # warm-up of the repeated form
        with counted() as rep:
            record = update(loop.model, loop.method, draft.pair, repeats, measure_after=False)
        assert record["repetitions"] == 3, record
        out["repetition"] = {k: v / 3 for k, v in rep.items()}

        def per_beam_step() -> tuple[dict[str, float], int]:
            """The third segment's translation, counted: (counts per decoder step, steps)."""
            steps["n"] = 0
            with counted() as beam:
                translated = loop.translate(2, segments[2])
            translated.tuning.close()
            return {k: v / steps["n"] for k, v in beam.items()}, steps["n"]

        out["beam_step"], out["beam_steps"] = per_beam_step()
        with beam_on_host() as both:
            if both:  # the same translation by the host path's ranking, for the figure beside the device path's
                out["beam_step_host"], out["beam_steps_host"] = per_beam_step()
        if segment:
            steps["n"] = 0
            with counted() as seg:
                draft = loop.translate(3, segments[3])
                record = update(loop.model, loop.method, draft.pair, cfg.update)
            draft.tuning.close()
            out["segment"] = dict(seg)
            out["segment_steps"], out["segment_repetitions"] = steps["n"], record["repetitions"]
    loop.timer.remove()
    return out


def _fmt(c: dict[str, float]) -> str:
    return f"{c['launches']:.0f} launches, {c['host_reads']:.1f} host reads, {c['uploads']:.1f} uploads"


def compare(before_rev: str) -> dict[str, str]:
    """The recorded ``(after)`` figures against the ``(before)`` ones: launches and host reads after / before, per
    row; ``before_rev``: the code the before figures counted (said in the figures, with this checkout's commit)."""
    import json
    import re
    import subprocess

    from record import DATA

    figures = json.loads(DATA.read_text(encoding="utf-8")).get("bench-launches", {}).get("figures", {})
    out: dict[str, str] = {}
    for key, after in figures.items():
        if key.endswith(" (after)") and re.search(r", its graphs? replayed", key):  # a projection against the plain before
            base = re.sub(r", its graphs? replayed", "", key).replace("(after)", "(before)")
            if base in figures:
                b_launch = float(re.findall(r"([\d.]+) launches,", figures[base])[0])
                a_launch = float(re.findall(r"^([\d.]+) launches", after)[0])
                out[key.replace("(after)", "after / before")] = (
                    f"launches {a_launch:.0f} / {b_launch:.0f} = {a_launch / b_launch:.3f} (as CUDA graph replays)")
            continue
        if not key.endswith(" (after)") or key.replace("(after)", "(before)") not in figures:
            continue
        before = figures[key.replace("(after)", "(before)")]
        numbers = [[float(x) for x in re.findall(r"([\d.]+) (?:launches|host reads),", text)[:2]] for text in (before, after)]
        (b_launch, b_read), (a_launch, a_read) = numbers
        text = f"launches {a_launch:.0f} / {b_launch:.0f} = {a_launch / b_launch:.2f}, host reads {a_read:.1f} / {b_read:.1f}"
        rest = [re.findall(r"undo\) (\d+)", t) for t in (before, after)]
        if all(rest):
            text += f"; outside forward and backward {rest[1][0]} / {rest[0][0]}"
        out[key.replace("(after)", "after / before")] = text
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    out["code"] = f"before: {before_rev}; after: {head}"
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", default=["nllb-600m", "llama3.2-1b"])
    parser.add_argument("--label", default="now", help="the figures' label in the table (before, after)")
    parser.add_argument("--no-record", action="store_true", help="print only; do not write docs/benchmark-results.md")
    parser.add_argument("--compare", metavar="REV", help="measure nothing: set the recorded after figures against the "
                        "before ones (REV: the code the before figures counted) and record the ratios")
    args = parser.parse_args()
    if args.compare:
        figures = compare(args.compare)
        for key, text in figures.items():
            print(f"{key}: {text}")
        if not args.no_record:
            from record import record

            head = figures["code"].rsplit(" ", 1)[-1]
            record("bench-launches", figures, merge=True,
                   command=f'make bench-launches ARGS="--label before" at {args.compare}, ARGS="--label after" at {head}, '
                           f'then ARGS="--compare {args.compare}"')
        return 0
    bad = [s for s in args.shapes if s not in SETTINGS]
    if bad:
        from simpe.errors import ConfigError

        raise ConfigError(f"--shapes: {', '.join(bad)} unknown; valid: {', '.join(SETTINGS)}")
    import torch

    from simpe.models import shapes

    torch.manual_seed(0)
    figures: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes:
            folder = shapes.write(shape, Path(tmp) / shape, **TINY[shape])
            for dtype in ("bfloat16", "float32"):
                result = measure(shape, dtype, folder, Path(tmp) / "runs", segment=dtype == "bfloat16")
                rep, beam = result["repetition"], result["beam_step"]
                lines = {
                    f"{shape} {dtype} update repetition ({args.label})":
                        f"{_fmt(rep)}; launches: forward {rep['forward']:.0f}, backward {rep['backward']:.0f}, "
                        f"the rest (loss, clipping, step, masters, undo) {rep['rest']:.0f}",
                    f"{shape} {dtype} beam-5 step ({args.label})": f"{_fmt(beam)} (mean of {result['beam_steps']} steps)",
                }
                if rep.get("replays"):  # the fixed-shape update: each repetition one CUDA graph replay
                    inside, outside = rep["in_graph"], rep["launches"] - rep["in_graph"]
                    lines[f"{shape} {dtype} update repetition, its graph replayed ({args.label})"] = (
                        f"{outside + rep['replays']:.0f} launches a repetition: {rep['replays']:.2f} graph replay of "
                        f"{inside / rep['replays']:.0f} kernels, {outside:.0f} outside it; {rep['graph_reads']:.1f} host "
                        f"reads inside the graph, {rep['host_reads']:.1f} in all (projected, as the beam step's below)")
                if beam.get("replays"):  # fixed shapes: the part of each step a CUDA graph replays as one launch
                    inside, outside = beam["in_graph"], beam["launches"] - beam["in_graph"]
                    lines[f"{shape} {dtype} beam-5 step, its graph replayed ({args.label})"] = (
                        f"{outside + beam['replays']:.0f} launches a step: {beam['replays']:.2f} graph replay of "
                        f"{inside / beam['replays']:.0f} kernels, {outside:.0f} outside it (the first step's prefix pass, the "
                        "setup and the stop checks, spread over the steps); "
                        f"{beam['graph_reads']:.1f} host reads inside the graph (projected: a CUDA graph runs its kernels "
                        "in one launch; counted on the CPU, where the step runs eagerly)")
                if "beam_step_host" in result:  # the device path above (a GPU's), the host path's ranking here
                    host = result["beam_step_host"]
                    lines[f"{shape} {dtype} beam-5 step, host ranking ({args.label})"] = (
                        f"{_fmt(host)} (mean of {result['beam_steps_host']} steps)")
                if "segment" in result:
                    lines[f"{shape} {dtype} segment ({args.label})"] = (
                        f"{_fmt(result['segment'])} ({result['segment_steps']} decoder passes, the update's among them, "
                        f"{result['segment_repetitions']} update repetitions)")
                    seg = result["segment"]
                    if seg.get("replays"):
                        lines[f"{shape} {dtype} segment, its graphs replayed ({args.label})"] = (
                            f"{seg['launches'] - seg['in_graph'] + seg['replays']:.0f} launches a segment: "
                            f"{seg['replays']:.0f} graph replays, {seg['launches'] - seg['in_graph']:.0f} launches outside "
                            f"them; {seg['host_reads']:.0f} host reads (projected, as the beam step's)")
                for key, text in lines.items():
                    print(f"{key}: {text}", flush=True)
                figures.update(lines)
    if not args.no_record:
        from record import record

        record("bench-launches", figures, merge=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
