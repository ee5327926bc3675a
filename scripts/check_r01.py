"""Check simpe's R0/R1/R0+1 counts against the script of Simianer et al. (2019)'s authors, rk.rb (github.com/lilt/r01).

For every run directory given (or every run of a group folder), this runs

    ruby -I ZIPF/lib R01/rk.rb -i hyp.tok.LANG -r ref.tok.LANG -s STOPWORDS -Z -O -C [-k K] [-v VOCAB -R N]

on the token files the run wrote, and compares its numerators and denominators with the sums
of the per-segment [matched, types] pairs simpe logged in segments.jsonl. Identical counts
print "same"; any difference exits 1. ``--classes`` also compares the script's punctuation
and digit classes (Ruby's [[:punct:]] and [[:digit:]]) with simpe's on every code point.

Needs Ruby with optimist (Debian: ``apt-get install ruby ruby-optimist``) and the two public
repositories: ``git clone https://github.com/lilt/r01`` and ``git clone https://github.com/pks/zipf``
(rk.rb requires 'zipf'). CI does not need Ruby: this is a verification script, not a test.

Only runs scored with the script's rules can agree (``metrics.stopword_case: exact``,
``token_filter: punct-or-digits``, ``scope: stream``; the defaults).

Usage: python scripts/check_r01.py --r01 R01_DIR --zipf ZIPF_DIR RUN_OR_GROUP... [--classes]
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

from simpe.config.files import load_saved_config
from simpe.metrics.online import resolve_vocab
from simpe.metrics.stopwords import stopwords_path
from simpe.metrics.text import is_digit_token, is_punct_token
from simpe.rundir.layout import hyp_tok_file, is_run_dir, ref_tok_file
from simpe.rundir.reader import read_jsonl

_RESULT = re.compile(r"(R[0-9+]+)=[-0-9.naN]+ \[(\d+)/(\d+)\]")


def run_script(r01: Path, zipf: Path, hyp: Path, ref: Path, stopwords: Path, k: int = 1,
               vocab: Path | None = None, rare: int = 0) -> dict[str, tuple[int, int]]:
    """rk.rb's counts: {"R0": (num, den), "R1": ..., "R01": ...}."""
    cmd = ["ruby", "-I", str(zipf / "lib"), str(r01 / "rk.rb"), "-i", str(hyp), "-r", str(ref), "-s", str(stopwords),
           "-Z", "-O", "-C", "-k", str(k)]
    if vocab is not None:
        cmd += ["-v", str(vocab), "-R", str(rare)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {name: (int(num), int(den)) for name, num, den in _RESULT.findall(out)}


def simpe_counts(run: Path, prefix: str = "") -> dict[str, tuple[int, int]]:
    """Sums of the logged per-segment [matched, types] of r0, r1, r0+1 (rk.rb's names R0, R1, R01)."""
    sums = {"R0": [0, 0], "R1": [0, 0], "R01": [0, 0]}
    for record in read_jsonl(run / "segments.jsonl"):
        for ours, theirs in (("r0", "R0"), ("r1", "R1"), ("r0+1", "R01")):
            num, den = record["metrics"][prefix + ours]
            sums[theirs][0] += int(num)
            sums[theirs][1] += int(den)
    return {name: (num, den) for name, (num, den) in sums.items()}


def check_run(run: Path, r01: Path, zipf: Path) -> bool:
    cfg = load_saved_config(run / "config.yaml")
    metrics = cfg.metrics
    if (metrics.stopword_case, metrics.token_filter, metrics.scope) != ("exact", "punct-or-digits", "stream"):
        print(f"{run.name}: scored with stopword_case={metrics.stopword_case}, token_filter={metrics.token_filter}, "
              f"scope={metrics.scope}; the script's rules are exact, punct-or-digits, stream: skipped")
        return True
    lang = metrics.lang
    hyp, ref = run / hyp_tok_file(lang), run / ref_tok_file(lang)
    stop = stopwords_path(metrics.stopwords)
    ok = True
    variants = [("", None)]
    if metrics.novel_vocab is not None:
        from simpe.datasets import DATASETS

        dataset = DATASETS.build(cfg.data.name, **cfg.data.params)
        variants.append(("novel:", resolve_vocab(metrics.novel_vocab, dataset.train_vocab(lang))))
    for prefix, vocab in variants:
        theirs = run_script(r01, zipf, hyp, ref, stop, vocab=vocab, rare=metrics.rare_threshold)
        ours = simpe_counts(run, prefix)
        same = theirs == ours
        ok &= same
        cells = "  ".join(f"{name} {ours[name][0]}/{ours[name][1]} vs {theirs.get(name, ('?', '?'))[0]}/"
                          f"{theirs.get(name, ('?', '?'))[1]}" for name in ("R0", "R1", "R01"))
        print(f"{run.name:<12} {prefix or 'words:':<7} simpe vs rk.rb: {cells}  {'same' if same else 'DIFFERENT'}")
    return ok


def check_classes(zipf: Path, r01: Path) -> bool:
    """Compare rk.rb's is_punct / is_num with simpe's on every code point (surrogates excluded)."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "classes.rb"
        script.write_text(f"require_relative {json.dumps(str(r01 / 'util'))}\n"
                          "(0..0x10FFFF).each { |cp| next if cp >= 0xD800 && cp <= 0xDFFF; c = [cp].pack('U');"
                          " puts \"#{cp} #{is_punct(c) ? 1 : 0}#{is_num(c) ? 1 : 0}\" if is_punct(c) || is_num(c) }\n",
                          encoding="utf-8")
        out = subprocess.run(["ruby", "-I", str(zipf / "lib"), str(script)], check=True, capture_output=True, text=True).stdout
        version = subprocess.run(["ruby", "-e", "puts RbConfig::CONFIG['UNICODE_VERSION']"], capture_output=True,
                                 text=True).stdout.strip()
    ruby = {int(cp): flags for cp, flags in (line.split() for line in out.splitlines())}
    ours = {cp: f"{int(is_punct_token(chr(cp)))}{int(is_digit_token(chr(cp)))}" for cp in range(0x110000)
            if not 0xD800 <= cp <= 0xDFFF and (is_punct_token(chr(cp)) or is_digit_token(chr(cp)))}
    differ = sorted(cp for cp in set(ruby) | set(ours) if ruby.get(cp) != ours.get(cp))
    print(f"character classes: ruby (Unicode {version}) {len(ruby)} code points, simpe (Unicode {unicodedata.unidata_version}) "
          f"{len(ours)}; {len(differ)} differ" + (f": {', '.join(f'U+{cp:04X}' for cp in differ[:30])}" if differ else ""))
    if differ and version != unicodedata.unidata_version:
        print("  (the two Unicode versions differ: code points assigned between them may be classed differently)")
        return True
    return not differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--r01", type=Path, required=True, help="a clone of github.com/lilt/r01 (holds rk.rb)")
    parser.add_argument("--zipf", type=Path, required=True, help="a clone of github.com/pks/zipf (rk.rb requires it)")
    parser.add_argument("--classes", action="store_true", help="also compare the punctuation/digit classes per code point")
    parser.add_argument("paths", nargs="*", type=Path, help="run directories or group folders")
    args = parser.parse_args()
    runs = [p for path in args.paths for p in ([path] if is_run_dir(path) else sorted(q for q in path.iterdir() if is_run_dir(q)))]
    ok = all([check_run(run, args.r01, args.zipf) for run in runs])
    if args.classes:
        ok &= check_classes(args.zipf, args.r01)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
