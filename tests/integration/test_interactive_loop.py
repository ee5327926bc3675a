"""``--protocol interactive`` in the loop, on the demo model: the effort logged per segment, its cumulative ratios,
resume, the comparison table's KSMR / WSR columns, and the post-editing protocol's records left as they were."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from simpe.config.files import load_config
from simpe.errors import ConfigError
from simpe.loop.run import Loop
from simpe.report.compare import compare_runs
from simpe.rundir.reader import load_group, read_jsonl

pytestmark = pytest.mark.usefixtures("one_torch_thread")
# greedy completions and the first two segments keep this under half a minute (beam: the same counts, 3x the time)
SETTINGS = ["data.segments=2", "device=cpu", "snapshots.every=0", "protocol.name=interactive", "checkpoint_every=1",
            "decoder.name=greedy", "decoder.params={}"]


def _without_times(records):
    out = []
    for r in records:
        r = {k: v for k, v in r.items() if k != "seconds"}
        r["effort"] = {level: {k: v for k, v in e.items() if k != "latency_ms"} for level, e in r["effort"].items()}
        out.append(r)
    return out


def test_the_interactive_loop_logs_effort_and_resumes_to_the_same_records(tmp_path: Path):
    overrides = [f"runs_dir={tmp_path / 'a'}", *SETTINGS]
    whole = Loop(load_config("bias", overrides), progress=False).run()
    assert re.fullmatch(r"libreoffice-stream--demo-en-de--2seg--interactive--[0-9a-f]{8}", whole.parent.name)
    records = read_jsonl(whole / "segments.jsonl")
    sums = {"ksmr": [0, 0], "wsr": [0, 0]}
    for r in records:
        char, word = r["effort"]["char"], r["effort"]["word"]
        assert r["stats"]["ksmr"] == [char["keystrokes"] + char["mouse"], len(r["reference"])]
        assert r["stats"]["wsr"] == [word["word_strokes"], len(r["reference"].split())]
        for e in (char, word):
            assert len(e["latency_ms"]) == e["completions"] and e["unhelpful"] <= e["completions"] <= e["corrections"]
            assert e["corrections"] <= e["ref_chars"] + 1
        assert (char["corrections"] == 0) == (r["hypothesis"] == r["reference"]) == (word["corrections"] == 0)
        for name in sums:
            sums[name] = [a + b for a, b in zip(sums[name], r["stats"][name])]
        assert r["cumulative"]["ksmr"] == pytest.approx(sums["ksmr"][0] / sums["ksmr"][1])
        assert r["cumulative"]["wsr"] == pytest.approx(sums["wsr"][0] / sums["wsr"][1])
        assert r["seconds"]["interact"] > 0
    summary = json.loads((whole / "summary.json").read_text())
    assert summary["corpus"]["ksmr"] == pytest.approx(sums["ksmr"][0] / sums["ksmr"][1])
    # interrupted after the first segment (its checkpoint taken), resumed: the same records and running ratios
    cut = [f"runs_dir={tmp_path / 'b'}", *SETTINGS]
    path = Loop(load_config("bias", cut), progress=False).run(stop_after=1)
    Loop(load_config("bias", cut), progress=False).run(resume=True)
    assert _without_times(read_jsonl(path / "segments.jsonl")) == _without_times(records)


def test_the_table_compares_methods_on_keystrokes_and_post_editing_runs_log_none(tmp_path: Path):
    overrides = [f"runs_dir={tmp_path}", *SETTINGS]
    paths = [Loop(load_config(preset, overrides), progress=False).run() for preset in ("baseline", "bias")]
    table = compare_runs(load_group(paths), num_resamples=50)
    keys = [c.key for c in table.columns]
    assert keys[-2:] == ["ksmr", "wsr"]
    post = Loop(load_config("baseline", [f"runs_dir={tmp_path}", "data.segments=2", "device=cpu", "snapshots.every=0"]),
                progress=False).run()
    assert re.fullmatch(r"libreoffice-stream--demo-en-de--2seg--[0-9a-f]{8}", post.parent.name)  # post-editing: its own group
    assert post.parent.name.rsplit("--", 1)[1] == paths[0].parent.name.rsplit("--", 1)[1]  # the same stream and model
    assert all("effort" not in r and "ksmr" not in r["stats"] for r in read_jsonl(post / "segments.jsonl"))


def test_a_decoder_that_cannot_complete_is_refused_before_the_model_loads(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"^protocol interactive completes typed prefixes, which decoder 'sampling' cannot"):
        Loop(load_config("baseline", [f"runs_dir={tmp_path}", *SETTINGS, "decoder.name=sampling", "decoder.params={}"]),
             progress=False)
    with pytest.raises(ConfigError, match=r"unknown protocol.level 'line'; known: char, word, both"):
        load_config("baseline", ["protocol.level=line"])


def test_constrained_beam_completes_typed_prefixes_under_the_glossary(tmp_path: Path):
    """constrained_beam is a completing decoder: the proposal holds the segment's term (segment 1: "More" ->
    "Zusätze"), and each completion is the typed prefix and the terms in one search (tests/unit/test_constrained.py)."""
    settings = [f"runs_dir={tmp_path}", *SETTINGS, "protocol.level=word", "decoder.name=constrained_beam",
                "decoder.params={beam_size: 2}", "data.glossary=dataset"]
    path = Loop(load_config("baseline", settings), progress=False).run()
    records = read_jsonl(path / "segments.jsonl")
    assert records[1]["constrained"]["terms"] == ["Zusätze"] and "Zusätze" in records[1]["hypothesis"]
    assert all(r["effort"]["word"]["completions"] == len(r["effort"]["word"]["latency_ms"]) for r in records)
    assert all(r["effort"]["word"]["corrections"] <= len(r["reference"].split()) + 1 for r in records)
