"""Hostile input, round 2: received input cannot hang or exhaust the machine, and every refusal is one line.

Class 3 (exhaustion): special files where a file is expected, YAML alias bombs, prompt templates with a format
width, a Ray address nobody answers at. Class 5 (tracebacks where one line is promised). Class 6 (writing by
rename over special files). Each case runs the real command (``simpe.cli.main``) and pins the key fragments of
its one line: the bad value and what would be valid. (Classes 1, 2 and 4: test_report_inert.py,
test_checkpoint_values.py and test_bad_input.py.)
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from messages import one_line_error, simulate_args

from simpe.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "models" / "demo-en-de"
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" + "".join(
    f"{chr(99 + i)}: &{chr(99 + i)} [{', '.join([f'*{chr(98 + i)}'] * 10)}]\n" for i in range(10))


def _one_line(args: list[str], capsys: pytest.CaptureFixture, *fragments: str, seconds: float = 60.0) -> str:
    return one_line_error(args, capsys, *fragments, seconds=seconds)


_simulate = simulate_args


def _text(source: Path, reference: Path) -> list[str]:
    return ["--dataset", "text", "--set", f"data.params.source={source}", "--set", f"data.params.reference={reference}"]


# ---------------------------------------------------------------- class 3: special files, bombs, templates, waits
def test_a_named_pipe_or_a_device_as_a_data_file_is_refused_at_once(tmp_path: Path, capsys):
    good = tmp_path / "two.en"
    good.write_text("One.\nTwo.\n", encoding="utf-8")
    pipe = tmp_path / "pipe.de"
    os.mkfifo(pipe)  # nobody writes it: a plain read would wait forever
    _one_line(_simulate(tmp_path, *_text(good, pipe)), capsys, str(pipe), "is a named pipe, not a regular file", seconds=20)
    _one_line(_simulate(tmp_path, *_text(good, Path("/dev/zero"))), capsys, "/dev/zero", "is a character device", seconds=20)
    _one_line(_simulate(tmp_path, "--dataset", "tmx", "--set", f"data.params.path={pipe}"), capsys, "TMX file", "named pipe",
              seconds=20)
    _one_line(_simulate(tmp_path, "--config", str(pipe)), capsys, "config file", "named pipe", seconds=20)
    assert not (tmp_path / "runs").exists()


def test_a_yaml_alias_bomb_is_refused_not_expanded(tmp_path: Path, capsys):
    config = tmp_path / "bomb.yaml"
    config.write_text(BOMB, encoding="utf-8")
    _one_line(_simulate(tmp_path, "--config", str(config)), capsys, "bomb.yaml", "more than 100 aliases", seconds=10)
    flow = "{" + BOMB.replace("\n", ", ").rstrip(", ") + "}"
    _one_line(_simulate(tmp_path, "--set", f"update.lr={flow}"), capsys, "bad --set update.lr", "more than 100 aliases", seconds=10)


def test_a_prompt_template_with_a_format_width_is_refused():
    from simpe.models.causal import CausalFamily

    for template in ("{source:>999999999}", "{source!r}", "Translate: {source:{src_lang}}"):
        with pytest.raises(ConfigError, match=r"model.prompt_template's fields take no format spec or conversion: \{source"):
            CausalFamily(prompt_template=template)
    assert CausalFamily(prompt_template="Translate {src_lang} to {tgt_lang}: {source}\n").prompt_template  # plain fields


def test_a_ray_address_nobody_answers_at_is_refused_in_seconds(tmp_path: Path, capsys):
    sweep = ["sweep", "--preset", "bias", "--segments", "2", "--runs-dir", str(tmp_path / "runs"), "--no-progress"]
    _one_line([*sweep, "--address", "127.0.0.1:9"], capsys, "--address 127.0.0.1:9", "no Ray head answers", seconds=10)
    # the Ray Client needs grpc: without it simpe says which packages; with it (tensorboard brings grpcio into the
    # lock) the client is tried and nobody answers
    import importlib.util

    client = "no Ray head answers" if importlib.util.find_spec("grpc") else "ray[client]"
    _one_line([*sweep, "--address", "ray://127.0.0.1:10001"], capsys, "ray://127.0.0.1:10001", client, seconds=10)
    _one_line([*sweep, "--address", "nowhere"], capsys, "'nowhere'", "HOST:PORT", seconds=10)


# ---------------------------------------------------------------- class 5: one line, not a traceback
def test_a_config_file_that_is_not_utf8(tmp_path: Path, capsys):
    config = tmp_path / "latin1.yaml"
    config.write_bytes("update: {lr: 0.01}  # Größe\n".encode("latin-1"))
    _one_line(_simulate(tmp_path, "--config", str(config)), capsys, "latin1.yaml", "not UTF-8", "byte 24")


def _demo_copy(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    shutil.copytree(DEMO, folder)
    return folder


def test_a_safetensors_header_that_is_not_an_object_and_a_garbage_tokenizer(tmp_path: Path, capsys, one_torch_thread):
    folder = _demo_copy(tmp_path, "list_header")
    header = b"[]"
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    _one_line(_simulate(tmp_path, "--model", str(folder)), capsys, "model.safetensors", "not a JSON object of tensor entries")
    folder = _demo_copy(tmp_path, "garbage_spm")
    (folder / "source.spm").write_bytes(b"\x00garbage, not a SentencePiece model" * 10)
    _one_line(_simulate(tmp_path, "--model", str(folder)), capsys, "the tokenizer of", "garbage_spm", "cannot be loaded")
    assert not (tmp_path / "runs").exists()


def test_a_chat_template_that_fails_to_render(tmp_path: Path, one_torch_thread):
    from tiny_families import build

    from simpe.errors import ModelError
    from simpe.model import load_model

    folder = build("qwen2", tmp_path)
    config_file = folder / "tokenizer_config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config["chat_template"] = "{{ raise_exception('no translation here') }}"
    config_file.write_text(json.dumps(config), encoding="utf-8")
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    with pytest.raises(ModelError, match=r"^the tokenizer's chat template fails to render \(.*no translation here\); .*--prompt-template"):
        load_model(folder, "cpu")


def test_translate_and_report_outputs_that_cannot_be_written(tmp_path: Path, capsys):
    source = tmp_path / "in.en"
    source.write_text("Hello.\n", encoding="utf-8")
    translate = ["translate", "-i", str(source), "--device", "cpu"]
    _one_line([*translate, "-o", str(tmp_path)], capsys, f"-o {tmp_path} is a folder")
    _one_line([*translate, "-o", str(tmp_path / "no" / "hyp.txt")], capsys, "the folder", "does not exist")
    a_file = tmp_path / "a_file"
    a_file.write_text("x", encoding="utf-8")
    for command in ("report", "plot"):
        _one_line([command, str(tmp_path / "nogroup"), "-o", str(a_file)], capsys)  # refused (no group), never a traceback


def test_report_onto_a_file_is_one_line(tmp_path: Path):
    from simpe.rundir.output import OutputDir

    a_file = tmp_path / "report.html"
    a_file.write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^-o .*report.html is a file; the outputs \(report.html\) go into a folder"):
        OutputDir(a_file, ["report.html"])


def test_a_full_disk_at_the_very_start_leaves_nothing(tmp_path: Path, capsys, one_torch_thread):
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(small)], capture_output=True).returncode == 0
    if not mounted:
        pytest.skip("needs root to mount a tiny tmpfs (a real full disk)")
    try:
        (small / "fill").write_bytes(b"\0" * 8192)
        _one_line(["simulate", "--preset", "baseline", "--segments", "2", "--no-progress", "--runs-dir", str(small / "runs")],
                  capsys, ".lock", "the disk is full (ENOSPC)")
        assert sorted(p.name for p in small.iterdir()) == ["fill"]
    finally:
        subprocess.run(["umount", str(small)], check=False)


# ---------------------------------------------------------------- class 6: never rename over a special file
def test_export_store_never_replaces_a_special_file(tmp_path: Path, capsys, one_torch_thread):
    from simpe.config.files import load_config
    from simpe.loop.run import Loop

    run = Loop(load_config("bias", [f"runs_dir={tmp_path / 'runs'}", "data.segments=2", "device=cpu", "snapshots.every=0"]),
               progress=False).run()
    pipe = tmp_path / "store.safetensors"
    os.mkfifo(pipe)
    _one_line(["export-store", str(run), "-o", str(pipe), "--overwrite"], capsys, str(pipe), "is a named pipe",
              "only regular files or new paths")
    assert pipe.is_fifo()
    from simpe.errors import RunDirError
    from simpe.rundir.writer import write_text_atomic

    with pytest.raises(RunDirError, match="is a named pipe; simpe writes only regular files or new paths"):
        write_text_atomic(pipe, "text")
    assert pipe.is_fifo() and not (tmp_path / "store.safetensors.tmp").exists()
