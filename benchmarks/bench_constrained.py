"""Glossary-constrained decoding's cost and yield: seconds per segment of constrained_beam against plain beam search of
the same width, side by side on the same stream segments, and how many applicable glossary terms each output holds.

    python benchmarks/bench_constrained.py --glossary data/libreoffice/glossary.tsv [--segments 200] [--beam-size 5] [--threads 2]

For each stream segment (the libreoffice stream, the demo model unless --model, not adapted): the glossary entries whose
source term occurs in the source (``ConstrainedBeamDecoder.applicable``: the term metrics' rule, ``simpe.terms.match``),
then both decoders, in alternating order (so that neither always runs on a warm cache). A term counts as placed where
its target term stands in the detokenised output as whole Moses tokens, case ignored (the term metrics' rule: the text
a translator sees; a form glued to a word before or after it, which the constraint's tokens allow, does not count).
Printed: segments, those with a term, the terms applicable, placed by each decoder, left out for the length limit;
seconds per segment of each over all segments and over those with a term (mean, median), and their ratio.

The glossary: a TSV or TBX file as ``simpe simulate --glossary`` reads it (``simpe.terms.glossary``; docs/terms.md).
"""
from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time

import torch
from entry import run_main
from record import record

from simpe import log
from simpe.config.files import load_config
from simpe.decoders import DECODERS
from simpe.loop.run import load_stream
from simpe.model import load_model
from simpe.terms.glossary import load_glossary
from simpe.terms.match import TermMatcher


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--glossary", required=True, help="a TSV or TBX glossary (docs/terms.md)")
    parser.add_argument("--segments", type=int, default=200)
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--model", default=None)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--no-record", action="store_true", help="print only: leave docs/benchmarks.json as it is")
    args = parser.parse_args()
    overrides = [f"data.segments={args.segments}", "device=cpu"] + ([f"model={args.model}"] if args.model else [])
    cfg = load_config("baseline", overrides)
    dataset, segments = load_stream(cfg)
    # a bad file is refused before the model loads
    glossary = load_glossary(args.glossary, dataset.src_lang, dataset.tgt_lang)
    matcher = TermMatcher(glossary.pairs(), glossary.source_lang, glossary.target_lang)
    beam = DECODERS.build("beam", beam_size=args.beam_size)
    constrained = DECODERS.build("constrained_beam", beam_size=args.beam_size)
    constrained.use_glossary(glossary.pairs(), glossary.source_lang, glossary.target_lang)
    if args.threads:
        torch.set_num_threads(args.threads)
    log.setup()
    logging.getLogger("simpe").setLevel(logging.ERROR)  # the length-limit warnings are counted below, not printed
    loaded = load_model(cfg.model.path, "cpu", dtype=cfg.model.dtype, family_name=cfg.model.family,
                        settings=cfg.model.family_settings())
    model, tokenizer = loaded.model, loaded.tokenizer
    beam.bind(tokenizer)
    constrained.bind(tokenizer)
    seconds: dict[str, list[float]] = {"beam": [], "constrained": []}
    with_terms: list[int] = []
    applicable_terms = dropped = 0
    hits = {"beam": 0, "constrained": 0}
    for index, seg in enumerate(segments):
        ids = loaded.family.encode_source(tokenizer, seg.source, loaded.device)[0]
        targets = [target for _, target in constrained.applicable(seg.source)]
        order = ("beam", "constrained") if index % 2 == 0 else ("constrained", "beam")
        for name in order:
            decoder = beam if name == "beam" else constrained
            start = time.perf_counter()
            with torch.inference_mode():
                result = decoder.decode(model, ids, index=index, source=seg.source)
            seconds[name].append(time.perf_counter() - start)
            text = tokenizer.decode(list(result.hypotheses[0].tokens), skip_special_tokens=True)
            hits[name] += len(matcher.targets_in(matcher.target_tokens(text), targets))
            if name == "constrained":
                dropped += len(result.info["dropped"])
        if targets:
            with_terms.append(index)
            applicable_terms += len(targets)
    device = f"cpu, {torch.get_num_threads()} threads"
    print(f"\nbench-constrained: {len(segments)} segments of the libreoffice stream, beam {args.beam_size}, "
          f"glossary {args.glossary} ({len(glossary)} entries), {device}")
    print(f"segments with a term: {len(with_terms)}; terms applicable: {applicable_terms}; placed by beam: {hits['beam']}, "
          f"by constrained_beam: {hits['constrained']}; left out for the length limit: {dropped}")
    figures = {"terms placed": f"{hits['constrained']} of {applicable_terms} applicable terms in {len(with_terms)} of "
                               f"{len(segments)} segments (plain beam: {hits['beam']}; {dropped} left out for the length limit)"}
    print(f"{'segments':14s} {'n':>5s} {'beam s/seg':>11s} {'constr. s/seg':>14s} {'ratio':>6s}  (mean; median)")
    for label, chosen in (("all", list(range(len(segments)))), ("with a term", with_terms)):
        if not chosen:
            continue
        free = [seconds["beam"][i] for i in chosen]
        held = [seconds["constrained"][i] for i in chosen]
        ratio = statistics.mean(held) / statistics.mean(free)
        print(f"{label:14s} {len(chosen):5d} {statistics.mean(free):11.4f} {statistics.mean(held):14.4f} {ratio:6.2f}  "
              f"({statistics.median(free):.4f}; {statistics.median(held):.4f})")
        figures[f"s/segment, {label}"] = (f"beam {statistics.mean(free):.3f}, constrained_beam {statistics.mean(held):.3f} "
                                          f"({ratio:.2f}x; {len(chosen)} segments)")
    if not args.no_record:
        record("bench-constrained", figures)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
