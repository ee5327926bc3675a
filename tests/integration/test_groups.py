"""A group is named by what it compares (simpe.rundir.layout.group_digest): two text datasets of one length, two model
folders of one name and two translation memories of one file name each run into their own group of one runs folder,
without --overwrite; compare refuses runs of different memories; a group's readable name stands for its one folder.
Runs with another glossary, or none, have another group; a copy of the same glossary joins the same one."""
from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from simpe.cli import main
from simpe.config.files import load_config
from simpe.datasets import stream_hash
from simpe.errors import RunDirError
from simpe.loop.run import Loop, group_identity, run_path
from simpe.loop.stream import load_stream
from simpe.paths import DEFAULT_MODEL, REPO_ROOT
from simpe.rundir.reader import load_group

pytestmark = pytest.mark.usefixtures("one_torch_thread")

COMMON = ["--segments", "2", "--device", "cpu", "--no-progress", "--snapshot-every", "0"]


def _simulate(runs: Path, *args: str) -> None:
    assert main(["simulate", "--runs-dir", str(runs), *COMMON, *args]) == 0


def _groups(runs: Path, pattern: str) -> list[Path]:
    return sorted(p for p in runs.iterdir() if re.fullmatch(pattern, p.name))


def _text(folder: Path, pairs: list[tuple[str, str]]) -> list[str]:
    folder.mkdir(parents=True)
    (folder / "doc.en").write_text("".join(s + "\n" for s, _ in pairs), encoding="utf-8")
    (folder / "doc.de").write_text("".join(t + "\n" for _, t in pairs), encoding="utf-8")
    return ["--dataset", "text", "--set", f"data.params.source={folder / 'doc.en'}", "--set",
            f"data.params.reference={folder / 'doc.de'}"]


def test_two_text_datasets_of_one_length_run_into_two_groups(tmp_path: Path, capsys) -> None:
    runs = tmp_path / "runs"
    first = _text(tmp_path / "a", [("Click OK.", "Klicken Sie auf OK."), ("Save the file.", "Speichern Sie die Datei.")])
    second = _text(tmp_path / "b", [("Open the menu.", "Öffnen Sie das Menü."), ("Close the window.", "Schließen Sie das Fenster.")])
    _simulate(runs, *first, "--preset", "baseline", "bias")
    _simulate(runs, *second, "--preset", "baseline", "bias")  # no --overwrite: another group
    groups = _groups(runs, r"text-stream--demo-en-de--2seg--[0-9a-f]{8}")
    assert len(groups) == 2 and all((g / name / "DONE").exists() for g in groups for name in ("baseline", "bias"))
    # the readable name stands for a group only where it names one: here it names two, and says which
    with pytest.raises(RunDirError, match=r"names 2 groups of other data, models or memories: .*--2seg--[0-9a-f]{8}, "):
        load_group([runs / "text-stream--demo-en-de--2seg"])
    capsys.readouterr()
    assert main(["compare", str(runs / "text-stream--demo-en-de--2seg")]) == 2
    assert "give one of them" in capsys.readouterr().err
    # each group compares its own stream
    assert {len(load_group([g]).runs) for g in groups} == {2}


def test_two_model_folders_of_one_name_run_into_two_groups(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    models = []
    for name, shift in (("a", 0.0), ("b", 1e-3)):
        folder = tmp_path / name / DEFAULT_MODEL.name
        shutil.copytree(DEFAULT_MODEL, folder)
        if shift:  # another model: the same files but one bias moved
            weights = load_file(folder / "model.safetensors")
            weights["final_logits_bias"] = weights["final_logits_bias"] + torch.full_like(weights["final_logits_bias"], shift)
            save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
        models.append(folder)
    for folder in models:
        _simulate(runs, "--model", str(folder), "--preset", "baseline")
    groups = _groups(runs, r"libreoffice-stream--demo-en-de--2seg--[0-9a-f]{8}")
    assert len(groups) == 2 and all((g / "baseline" / "DONE").exists() for g in groups)
    # a copy of a model (the same files in another folder) is the same model: its runs join the first's group
    assert run_path(load_config("baseline", ["data.segments=2", f"runs_dir={runs}"])).parent == \
        run_path(load_config("baseline", ["data.segments=2", f"runs_dir={runs}", f"model.path={models[0]}"])).parent


def test_two_memories_of_one_file_name_run_into_two_groups_and_are_not_compared(tmp_path: Path) -> None:
    """The issue's case: a baseline warm-started (by full) on B/memory.tsv and full warm-started on A/memory.tsv."""
    runs = tmp_path / "runs"
    memories = {}
    for name, pairs in (("A", [("Click OK.", "Klicken Sie auf OK."), ("Save the file.", "Speichern Sie die Datei.")]),
                        ("B", [("Open the menu.", "Öffnen Sie das Menü."), ("Close the window.", "Schließen Sie das Fenster.")])):
        (tmp_path / name).mkdir()
        memories[name] = tmp_path / name / "memory.tsv"
        memories[name].write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    warm = ["--set", "warm_start.epochs=1", "--set", "warm_start.batch_size=2"]
    _simulate(runs, "--warm-start", str(memories["B"]), "--preset", "baseline", "--set", "warm_start.method=full", *warm)
    _simulate(runs, "--warm-start", str(memories["A"]), "--preset", "full", *warm)
    groups = _groups(runs, r"libreoffice-stream--demo-en-de--2seg--warm-memory--[0-9a-f]{8}")
    assert len(groups) == 2
    baseline, full = next(g / "baseline" for g in groups if (g / "baseline").is_dir()), next(g / "full" for g in groups if (g / "full").is_dir())
    assert baseline.parent != full.parent
    with pytest.raises(RunDirError, match="start from different translation memories"):
        load_group([baseline, full])


def test_a_run_of_other_settings_is_refused_without_advising_overwrite(tmp_path: Path, capsys) -> None:
    runs = tmp_path / "runs"
    _simulate(runs, "--preset", "bias")
    capsys.readouterr()
    assert main(["simulate", "--runs-dir", str(runs), *COMMON, "--preset", "bias", "--set", "update.lr=0.5"]) == 2
    err = capsys.readouterr().err
    assert "holds a complete run of other settings (update.lr (the run has 1.0, now 0.5))" in err
    assert "give this run its own name (--set adapter=NAME)" in err and "pass --overwrite" not in err
    # the same settings again: that run is this one, and --overwrite replaces it
    assert main(["simulate", "--runs-dir", str(runs), *COMMON, "--preset", "bias"]) == 2
    assert "is a complete run; pass --overwrite to run it again" in capsys.readouterr().err


def test_each_document_order_is_its_own_stream_in_one_process(tmp_path: Path) -> None:
    """The digest read once per process is the digest of the stream as loaded, for every document order: a sweep over
    data.shuffle_documents plans each order's runs in its own group (the cache once held the first order's)."""
    base = [f"runs_dir={tmp_path / 'runs'}", "data.segments=60", "device=cpu"]
    digests = []
    for seed in ("null", "1", "2"):
        cfg = load_config("baseline", [*base, f"data.shuffle_documents={seed}"])
        digests.append(group_identity(cfg)["stream"])
        assert digests[-1] == stream_hash(load_stream(cfg)[1])[:16]
    assert len(set(digests)) == 3


def test_the_glossary_is_part_of_a_groups_identity(tmp_path: Path) -> None:
    """The group digest hashes the glossary file's content (sha256, 16 hex digits) after the stream, model and memory;
    without a glossary the text hashed is the one of before glossaries, so such runs keep their groups."""
    base = [f"runs_dir={tmp_path / 'runs'}", "data.segments=2", "device=cpu"]

    def identity(*extra: str) -> dict:
        return group_identity(load_config("baseline", [*base, *extra]))

    def digest(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:8]

    plain = identity()
    head = f"stream {plain['stream']}\nmodel {plain['model']}\nmemory -\n"
    assert plain["glossary"] is None and plain["digest"] == digest(head)
    shipped_file = REPO_ROOT / "data/libreoffice/glossary.tsv"
    shipped = identity("data.glossary=dataset")
    assert shipped["glossary"] == hashlib.sha256(shipped_file.read_bytes()).hexdigest()[:16]
    assert shipped["digest"] == digest(head + f"glossary {shipped['glossary']}\n")
    copy = tmp_path / "copy.tsv"
    shutil.copyfile(shipped_file, copy)
    assert identity(f"data.glossary={copy}") == shipped  # the same content elsewhere: the same group
    edited = tmp_path / "edited.tsv"
    edited.write_bytes(shipped_file.read_bytes() + "Sheet Tab Color\tRegisterfarbe\n".encode())
    other = identity(f"data.glossary={edited}")
    assert len({plain["digest"], shipped["digest"], other["digest"]}) == 3
    folders = {run_path(load_config("baseline", [*base, *extra])).parent
               for extra in ([], ["data.glossary=dataset"], [f"data.glossary={edited}"])}
    assert len(folders) == 3
    # the loop, which has read the glossary already, names the same group
    assert Loop(load_config("baseline", [*base, "data.glossary=dataset"]), progress=False).identity == shipped
