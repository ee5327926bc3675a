"""simpe simulate --dry-run: the estimate of the demo model's memory within 30 % of a measured run's peak, and a run that
cannot fit refused in one line naming the setting that fits."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simpe.loop.dryrun import measured_command, measured_peak

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _simpe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simpe", *args], cwd=REPO, env=ENV, capture_output=True, text=True, timeout=300)


def _estimated_mib(preset: str) -> float:
    done = _simpe("simulate", "--dry-run", "--preset", preset, "--segments", "8")
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith(f"{preset}:"))
    value, unit = re.search(r"memory ([\d.]+) (MiB|GiB)", line).groups()
    return float(value) * (1024 if unit == "GiB" else 1)


@pytest.mark.slow  # two real runs of the demo model (about 50 s on 2 busy cores)
@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads the peak from /proc (Linux)")
@pytest.mark.parametrize("preset", ["baseline", "full"])
def test_the_dry_run_estimates_the_demo_models_peak_memory_within_30_percent(preset: str, tmp_path: Path) -> None:
    estimated = _estimated_mib(preset)
    command = measured_command(["simulate", "--preset", preset, "--segments", "8", "--runs-dir", str(tmp_path),
                                "--no-progress", "--set", "snapshots.every=0", "--threads", "1"])
    done = subprocess.run(command, cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    measured = measured_peak(done.stderr)  # the child's VmHWM, not wait4's maxrss (simpe.loop.dryrun says why)
    print(f"{preset}: estimated {estimated:.0f} MiB, measured peak {measured:.0f} MiB")
    assert abs(estimated - measured) / measured < 0.30, f"estimated {estimated:.0f} MiB, measured {measured:.0f} MiB"
    records = [json.loads(line) for line in next(tmp_path.glob(f"*/{preset}/segments.jsonl")).read_text().splitlines()]
    assert len(records) == 8


def test_a_run_that_cannot_fit_is_refused_naming_what_fits() -> None:
    # the runtime part of an estimate is this process's own footprint (it moves with the library stack): the limit
    # is set between what full and lora need, as this machine measures them
    both = _simpe("simulate", "--dry-run", "--preset", "full", "lora").stdout
    need = {name: int(mib) for name, mib in re.findall(r"^(full|lora): .*?; memory (\d+) MiB", both, flags=re.M)}
    assert need["lora"] < need["full"], both
    limit = (need["full"] + need["lora"]) / 2
    done = _simpe("simulate", "--dry-run", "--preset", "full", "--memory", f"{limit / 1024:.4f}")
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1
    assert re.fullmatch(r"simpe: error: full needs about \d+ MiB on cpu, more than the \d+ MiB available; "
                        r"--preset lora would need \d+ MiB\n", done.stderr), done.stderr


def test_memory_without_dry_run_is_refused() -> None:
    done = _simpe("simulate", "--memory", "4")
    assert done.returncode == 2 and "--memory takes a size in GiB > 0 and goes with --dry-run" in done.stderr


def test_the_datastore_grows_at_the_keys_dtype() -> None:
    """knn's datastore per 1,000 segments: 21 entries a segment, each a key of the demo model's 256 values (4 bytes each,
    or 2 with key_dtype float16), a float32 norm and an int64 value."""
    from simpe.config.files import load_config
    from simpe.loop.dryrun import estimate

    float32, float16 = (estimate(load_config(preset, [])).datastore_per_1000 for preset in ("knn", "knn-fp16"))
    assert float32 == 1000 * 21 * (256 * 4 + 4 + 8) == 21_756_000
    assert float16 == 1000 * 21 * (256 * 2 + 4 + 8) == 11_004_000


def test_constrained_beam_is_timed_as_beam_and_says_so() -> None:
    """constrained_beam runs beam search's forward passes: the same s/segment, and the line says what it leaves out."""
    from simpe.config.files import load_config
    from simpe.loop.dryrun import estimate, report

    beam, constrained = (estimate(load_config("full", ["data.segments=8", f"decoder.name={name}"]), "cpu")
                         for name in ("beam", "constrained_beam"))
    assert constrained.seconds_per_segment is not None
    assert (constrained.translate_seconds, constrained.update_seconds) == (beam.translate_seconds, beam.update_seconds)
    (line,) = report([load_config("full", ["data.segments=8", "decoder.name=constrained_beam"])], "cpu", 1 << 40)[1:]
    assert line.endswith("(constrained_beam timed as beam: the same forward passes; the constraints' host work and "
                         "longer outputs not included)")
