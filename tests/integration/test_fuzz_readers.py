"""A fuzz pass over every reader of a file a user can be handed (issue 27, item 5).

A seeded mutator (no extra dependency) takes a valid file of each kind and damages it: flips a
byte, inserts a hostile fragment (NUL, a tab, a bare CR, U+2028, a cut UTF-8 sequence, XML
markup, JSON punctuation, NaN), deletes, duplicates or cuts off a range. The property: each
mutant is read into segments (records, a store, a checkpoint) or refused with a ``SimpeError``
(which ``simpe`` prints as one line and exit 2), never another exception and never a hang.
A handful of mutants that read are then run end to end through ``simpe simulate``: each ends
as a complete run.

Budget: ``EXAMPLES`` mutants per reader (seeded: a failure names the seed that reproduces it),
7 readers, a few seconds in all; the end-to-end part is 3 two-segment runs.
"""
from __future__ import annotations

import bz2
import json
import random
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from simpe.errors import SimpeError

EXAMPLES = 150  # mutants per reader
HOSTILE = [b"\x00", b"\t", b"\r", b"\n", b"\r\n", "\u2028".encode(), b"\xc3", b"\xff\xfe", b"<", b"&", b"]]>", b"<tu>",
           b"</seg>", b'"', b"{", b"}", b"[", b"NaN", b"1e999", b"-1", "\uf8ff".encode(), "\u25ca\u00f7\n".encode(), b" ",
           b"\xef\xbb\xbf", b"\\u0000"]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to three random damages of ``data``."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(6)
        at = rng.randrange(len(out) + 1)
        if kind == 0 and out:
            out[min(at, len(out) - 1)] = rng.randrange(256)
        elif kind == 1:
            out[at:at] = rng.choice(HOSTILE)
        elif kind == 2:
            del out[at: at + rng.randint(1, 40)]
        elif kind == 3:
            chunk = out[at: at + rng.randint(1, 60)]
            out[at:at] = chunk
        elif kind == 4:
            del out[at:]
        else:
            out[at:at] = rng.choice(HOSTILE) * rng.randint(2, 20)
    return bytes(out)


class Hang(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise Hang("a reader took over 30 s on one mutant (a hang)")


def fuzz(seed_file: Path, read: Callable[[Path], object], examples: int = EXAMPLES, seed: int = 0) -> dict[str, int]:
    """Mutate ``seed_file`` ``examples`` times and read each mutant; count what became of them."""
    original = seed_file.read_bytes()
    read(seed_file)  # the unmutated file reads
    outcomes = {"read": 0, "refused": 0}
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for example in range(examples):
            rng = random.Random(f"{seed_file.name}:{seed}:{example}")
            seed_file.write_bytes(mutate(original, rng))
            signal.alarm(30)  # a generous hang detector, not a speed bound
            try:
                read(seed_file)
                outcomes["read"] += 1
            except SimpeError as err:
                message = str(err)
                assert message and "\n" not in message.strip(), (example, message)  # one line
                outcomes["refused"] += 1
            except Exception as err:  # noqa: BLE001 - the property: nothing else escapes
                pytest.fail(f"{seed_file.name} mutant {example} (seed {seed}) raised {type(err).__name__}: {err}")
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
        seed_file.write_bytes(original)
    return outcomes


def _dataset(name: str, **params: str) -> Callable[[Path], object]:
    from simpe.datasets import DATASETS

    return lambda _path: DATASETS.build(name, **params).load("stream")


TEXT_EN = "Click OK.\nSave the file & close <it>.\nOpen the 3 drawings.\n"
TEXT_DE = "Klicken Sie auf OK.\nSpeichern Sie die Datei & schließen Sie <sie>.\nÖffnen Sie die 3 Zeichnungen.\n"
TMX = ('<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4"><header srclang="en"/><body>\n'
       '<tu><tuv xml:lang="en"><seg>Click OK.</seg></tuv><tuv xml:lang="de"><seg>Klicken Sie auf OK.</seg></tuv></tu>\n'
       '<tu><tuv xml:lang="en-US"><seg>Save <ph>&lt;b&gt;</ph>the file.</seg></tuv>'
       '<tuv xml:lang="de-DE"><seg>Speichern Sie die Datei.</seg></tuv></tu>\n</body></tmx>\n')


def test_fuzz_text_files(tmp_path: Path):
    (tmp_path / "a.en").write_text(TEXT_EN, encoding="utf-8")
    (tmp_path / "a.de").write_text(TEXT_DE, encoding="utf-8")
    read = _dataset("text", source=str(tmp_path / "a.en"), reference=str(tmp_path / "a.de"))
    out = fuzz(tmp_path / "a.de", read)
    assert out["read"] + out["refused"] == EXAMPLES and out["refused"] > 0 and out["read"] > 0, out


def test_fuzz_tsv(tmp_path: Path):
    path = tmp_path / "a.tsv"
    path.write_text("".join(f"{s}\t{r}\n" for s, r in zip(TEXT_EN.splitlines(), TEXT_DE.splitlines())), encoding="utf-8")
    out = fuzz(path, _dataset("tsv", path=str(path)))
    assert out["refused"] > 0 and out["read"] > 0, out


def test_fuzz_tmx(tmp_path: Path):
    path = tmp_path / "a.tmx"
    path.write_text(TMX, encoding="utf-8")
    out = fuzz(path, _dataset("tmx", path=str(path)))
    assert out["refused"] > 0 and out["read"] > 0, out


@pytest.mark.parametrize("name", ["deu.mt", "deu.mt.bz2"])
def test_fuzz_autodesk(tmp_path: Path, name: str):
    from tests.autodesk_files import write_corpus

    path = write_corpus(tmp_path / "autodesk", name=name)
    if name.endswith(".bz2"):  # damage the text, then compress it again (a cut or flipped bz2 is one case only)
        text = bz2.decompress(path.read_bytes())
        plain = tmp_path / "plain"
        plain.write_bytes(text)

        def read(_p: Path) -> object:
            path.write_bytes(bz2.compress(plain.read_bytes()))
            return _dataset("autodesk", path=str(tmp_path / "autodesk"))(path)

        out = fuzz(plain, read, examples=EXAMPLES // 2)
        path.write_bytes(bz2.compress(text))
        out_raw = fuzz(path, _dataset("autodesk", path=str(tmp_path / "autodesk")), examples=EXAMPLES // 2, seed=1)
        assert out_raw["refused"] > 0, out_raw
    else:
        out = fuzz(path, _dataset("autodesk", path=str(tmp_path / "autodesk")))
    assert out["refused"] > 0 and out["read"] > 0, out


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    """A complete two-segment knn run of the demo model: records, summary, config, store (keys and values)."""
    from simpe.config.files import load_config
    from simpe.loop.run import Loop

    torch.set_num_threads(1)
    runs = tmp_path_factory.mktemp("runs")
    loop = Loop(load_config("knn", [f"runs_dir={runs}", "data.segments=2", "device=cpu", "checkpoint_every=1"]), progress=False)
    loop.run()
    loop.timer.remove()
    return loop.path


@pytest.mark.parametrize("name", ["segments.jsonl", "summary.json", "config.yaml", "env.json"])
def test_fuzz_run_records(run_folder: Path, tmp_path: Path, name: str):
    from simpe.rundir.reader import load_run

    copy = tmp_path / "group" / "knn"
    shutil.copytree(run_folder, copy)
    out = fuzz(copy / name, lambda _p: load_run(copy), examples=EXAMPLES // 3)
    assert out["read"] + out["refused"] == EXAMPLES // 3, out


def test_fuzz_store(run_folder: Path, tmp_path: Path):
    from simpe.store.user import read_store

    store = tmp_path / "knn.safetensors"
    shutil.copy(run_folder / "store.safetensors", store)
    json.loads(json.dumps(read_store(store)[1].to_strings()))  # the unmutated store reads
    out = fuzz(store, read_store)
    assert out["refused"] > 0, out


def test_fuzz_checkpoint(tmp_path: Path):
    from simpe.rundir.writer import RunDir

    folder = tmp_path / "run"
    (folder / "state").mkdir(parents=True)
    checkpoint = folder / "state" / "checkpoint.pt"
    torch.save({"segments_done": 2, "method": {"w": torch.ones(3)}, "torch_rng": torch.get_rng_state()}, checkpoint)
    rundir = RunDir(folder)
    assert rundir.checkpoint_file == checkpoint
    out = fuzz(checkpoint, lambda _p: rundir.load_checkpoint(), examples=EXAMPLES // 3)
    assert out["refused"] > 0, out


def test_mutants_that_read_end_as_complete_runs(tmp_path: Path, capsys: pytest.CaptureFixture, one_torch_thread):
    """Three text mutants that the reader accepts each run to a complete run with one record per segment."""
    from simpe.cli import main
    from simpe.datasets import DATASETS
    from simpe.rundir.reader import load_run

    (tmp_path / "a.en").write_text(TEXT_EN, encoding="utf-8")
    original = TEXT_DE.encode("utf-8")
    ran = 0
    for example in range(200):
        if ran == 3:
            break
        mutant = mutate(original, random.Random(f"e2e:{example}"))
        (tmp_path / "a.de").write_bytes(mutant)
        try:
            segments = DATASETS.build("text", source=str(tmp_path / "a.en"), reference=str(tmp_path / "a.de")).load("stream")
        except SimpeError:
            continue
        if mutant == original:
            continue
        runs = tmp_path / f"runs{example}"
        code = main(["simulate", "--dataset", "text", "--set", f"data.params.source={tmp_path / 'a.en'}",
                     "--set", f"data.params.reference={tmp_path / 'a.de'}", "--preset", "full",
                     "--runs-dir", str(runs), "--no-progress", "--threads", "1"])
        assert code == 0, capsys.readouterr().err
        (run,) = [p.parent for p in runs.glob("*/*/segments.jsonl")]
        record = load_run(run)
        assert len(record.segments) == len(segments)
        ran += 1
    assert ran == 3


def test_fuzz_model_folder_config(tmp_path: Path):
    """A model folder's config.json, damaged: check_model reads it or refuses it in one line (never a traceback)."""
    from simpe.model import check_model

    folder = tmp_path / "model"
    shutil.copytree(Path(__file__).resolve().parents[2] / "models" / "demo-en-de", folder)
    out = fuzz(folder / "config.json", lambda _p: check_model(folder), examples=EXAMPLES // 3)
    assert out["refused"] > 0, out


def test_fuzz_resume_checkpoint_values(tmp_path: Path):
    """A real checkpoint's bytes, damaged, then its values checked as a resume checks them (structure, the method's
    state against the method on the demo model): each mutant loads or is refused in one line."""
    from simpe.config.files import load_config
    from simpe.loop.run import Loop

    loop = Loop(load_config("bias", [f"runs_dir={tmp_path}", "data.segments=3", "checkpoint_every=1", "snapshots.every=0",
                                     "device=cpu"]), progress=False)
    path = loop.run(stop_after=2)
    from simpe.rundir.writer import RunDir

    rundir = RunDir(path)

    def read(_p: Path) -> None:
        state = rundir.load_checkpoint()
        loop._check_checkpoint(rundir, state)

    out = fuzz(rundir.checkpoint_file, read, examples=EXAMPLES // 3)
    assert out["refused"] > 0, out
