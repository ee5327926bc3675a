"""`simpe score`, `simpe rank` and `simpe sensitivity`: metrics and studies on plain files and models."""
from __future__ import annotations

import argparse
from pathlib import Path

from simpe.cli.common import DeprecatedFlag, add_model_settings, integer, model_section, seed, train_vocab


def add_score(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("score", help="score hypothesis files: BLEU, chrF, TER, SBLEU, R0/R1/R0+1 (and COMET)",
                       description="Score a hypothesis file against a reference file with every simpe metric "
                                   "(BLEU/chrF/TER through sacreBLEU, with signatures).")
    p.add_argument("-i", "--input", required=True, metavar="HYP", help="hypotheses, one detokenised segment per line "
                                                                       "(the text the command reads: see docs/cli.md)")
    ref = p.add_mutually_exclusive_group(required=True)  # required either way: the old spelling counts
    ref.add_argument("-r", "--ref", metavar="REF", help="references (post-edits), one per line")
    ref.add_argument("--refs", dest="ref", action=DeprecatedFlag, new="-r/--ref")
    p.add_argument("--src", metavar="SRC", help="sources, one per line (needed for --comet)")
    p.add_argument("--lang", default=None, help="target language: Moses tokeniser and default stopwords (default: metrics.lang "
                                                "of adapters/defaults.yaml)")
    p.add_argument("--truecaser", metavar="PATH|none",
                   help="MosesTruecaser model, or 'none' (default: the demo model's truecase.<lang>.model when it ships one, else none)")
    p.add_argument("--stopwords", metavar="LANG|PATH", help="stopword list: a code under stopwords/ or a file (default: --lang)")
    p.add_argument("--r-max-k", type=integer, default=None, metavar="K", help="report R0..RK and R0..K (default: metrics.r_max_k "
                                                                            "of adapters/defaults.yaml; R0+1 always)")
    p.add_argument("--stopword-case", choices=["exact", "insensitive"],
                   help="stopword matching (default: metrics.stopword_case, exact as the authors' rk.rb)")
    p.add_argument("--token-filter", choices=["punct-or-digits", "digits-punct-symbols"],
                   help="tokens that are never content words (default: metrics.token_filter, punct-or-digits as rk.rb)")
    p.add_argument("--scope", choices=["stream", "document"], help="R occurrence counts over the stream or per document "
                                                                   "(document needs --ids; default: metrics.scope)")
    p.add_argument("--ids", metavar="IDS", help="document id of each segment, one per line (tab-separated doc and segment id as "
                                                 "data/*/SPLIT.ids), for --scope document")
    p.add_argument("--novel-vocab", metavar="train|PATH", help="training vocabulary ('<count> <word>' lines as rk.rb -v, or one word "
                                                               "per line; 'train': the train vocabulary of --dataset): adds novel:r0 ...")
    p.add_argument("--dataset", default="libreoffice", metavar="NAME",
                   help="the data the hypotheses translate: whose train vocabulary '--novel-vocab train' means (default: "
                        "%(default)s, data/libreoffice/vocab.train.LANG; a dataset with no train vocabulary is refused there)")
    p.add_argument("--rare-threshold", type=integer, default=None, metavar="N",
                   help="novel words: vocabulary words seen at most N times still count (rk.rb -R; default: metrics.rare_threshold)")
    p.add_argument("--subword-model", metavar="SPM", help="SentencePiece model: adds the subword variants subword:r0 ...")
    p.add_argument("--subword", choices=["all", "content"], help="with --subword-model: count every piece (default) "
                                                                  "or only the pieces of content words")
    p.add_argument("--sbleu", choices=["nakov", "exp"], help="SBLEU smoothing (default: metrics.sbleu, nakov BLEU+1 as Simianer et al. (2019))")
    p.add_argument("--glossary", metavar="FILE|dataset",
                   help="a glossary (TSV or .tbx), or 'dataset' for --dataset's own: adds term accuracy, T0/T1, the repeated "
                        "term error and the R values outside the glossary (needs --src; docs/terms.md)")
    p.add_argument("--comet", metavar="MODEL", help="COMET hub id, model folder or model.ckpt (needs --src)")
    p.add_argument("--mt", metavar="MT", help="the raw MT output the references were post-edited from (e.g. a run's mt.de on "
                                              "the Autodesk corpus): also report its TER against the references (HTER-style)")
    p.add_argument("--comet-batch-size", type=integer, default=16, metavar="N", help="(default: %(default)s)")
    p.add_argument("--device", default="cpu", help="COMET device: cpu, cuda, cuda:N (default: %(default)s)")
    p.add_argument("--format", choices=["table", "json"], default="table", help="(default: %(default)s)")
    p.add_argument("--cumulative", action="store_true", help="also print every metric over segments 1..i for each i")
    p.set_defaults(func=cmd_score)


def cmd_score(args: argparse.Namespace) -> None:
    import json

    from simpe.config.files import defaults
    from simpe.config.tree import TRUECASER_OF_MODEL
    from simpe.datasets import DATASETS
    from simpe.errors import ConfigError
    from simpe.measure.score import format_cumulative, format_table, score_files

    if args.dataset not in DATASETS.names():
        raise ConfigError(f"unknown dataset {args.dataset!r}; known: {', '.join(DATASETS.names())}")
    base = defaults("metrics")
    lang = args.lang or base.lang
    truecaser = TRUECASER_OF_MODEL if args.truecaser is None else None if args.truecaser.lower() == "none" else args.truecaser
    given = {"stopword_case": args.stopword_case, "token_filter": args.token_filter, "scope": args.scope,
             "rare_threshold": args.rare_threshold, "subword": args.subword, "sbleu": args.sbleu}
    cfg = defaults("metrics", lang=lang, truecaser=truecaser, stopwords=args.stopwords or lang,
                   r_max_k=base.r_max_k if args.r_max_k is None else args.r_max_k, novel_vocab=args.novel_vocab,
                   **{key: value for key, value in given.items() if value is not None})
    if (args.scope == "document") != (args.ids is not None):
        raise ConfigError("--scope document needs --ids (the document of each segment), and --ids only means something with it")
    glossary = None
    if args.glossary is not None:
        from simpe.errors import SimpeError
        from simpe.terms.glossary import load_glossary, resolve_glossary

        if args.src is None:
            raise ConfigError("--glossary needs --src: a term counts where the source holds its source term")
        try:
            dataset = DATASETS.build(args.dataset)
        except SimpeError:  # text, tsv, tmx: files of the user's; the glossary file says its languages
            dataset = None
        if dataset is None and args.glossary == "dataset":
            raise ConfigError(f"--glossary dataset: dataset {args.dataset!r} has no glossary of its own; give a glossary file")
        glossary = load_glossary(resolve_glossary(args.glossary, dataset),
                                 getattr(dataset, "src_lang", "en"), lang)
    report = score_files(args.input, args.ref, args.src, cfg=cfg, comet=args.comet,
                         comet_batch_size=args.comet_batch_size, device=args.device,
                         subword_model=args.subword_model, cumulative=args.cumulative,
                         train_vocab=train_vocab(args.dataset, lang) if args.novel_vocab == "train" else None,
                         doc_ids=args.ids, mt_path=args.mt, glossary=glossary)
    if args.format == "json":
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        print(format_table(report))
        if args.cumulative:
            print()
            print(format_cumulative(report))


def add_rank(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rank", help="ranking model errors (kRG/kQRG, Yan et al. (2022)) of a model on a test set, "
                                    "or their correlation with MBR across models (--models)")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--model", default=None, help="model folder or hub id (default: the embedded demo model)")
    who.add_argument("--models", nargs="+", default=None,
                     help="two or more models, checkpoints or per-user stores (adapted models): per-model figures, MBR quality "
                          "and their correlation (Table 3)")
    p.add_argument("--src", type=Path, required=True, help="source sentences, one per line")
    p.add_argument("-r", "--ref", type=Path, required=True, help="reference translations, aligned with --src")
    p.add_argument("--limit", type=integer, default=None, help="only the first N sentence pairs (after --max-words)")
    p.add_argument("--max-words", type=integer, default=None, help="only sources of at most N words")
    p.add_argument("-o", "--out", type=Path, required=True, help="output folder: records.jsonl and summary.json "
                                                            "(--models: one folder per model and correlation.json)")
    p.add_argument("--overwrite", action="store_true", help="replace earlier outputs in --out")
    # every ranking setting defaults to the ranking section of adapters/defaults.yaml
    p.add_argument("--k", type=integer, help="top-region size (default: ranking.k)")
    p.add_argument("--quality", help="Q: a utility (bleu, sbleu, chrf, chrf++, ter, comet; default: ranking.quality)")
    p.add_argument("--comet", dest="comet_model", default=None, metavar="MODEL",
                   help="COMET model (hub id, folder or .ckpt) for --quality/--mbr-utility comet")
    p.add_argument("--comet-model", dest="comet_model", action=DeprecatedFlag, new="--comet")
    p.add_argument("--samples", type=integer, help="Monte Carlo samples per sentence (default: ranking.samples)")
    p.add_argument("--sample-seed", type=seed, help="sampling seed; sentence i uses seed + i (default: ranking.sample_seed)")
    p.add_argument("--seed", dest="sample_seed", type=seed, action=DeprecatedFlag, new="--sample-seed")
    p.add_argument("--beam-size", type=integer, help="beam whose output is checked for search errors (default: ranking.beam_size)")
    p.add_argument("--max-expansions", type=integer, help="limit per exact search; 0 = none (default: ranking.max_expansions)")
    p.add_argument("--max-seconds", type=float, help="limit per exact search; 0 = none (default: ranking.max_seconds)")
    p.add_argument("--batch-size", type=integer, help="prefixes per forward pass of the exact search (default: ranking.batch_size)")
    p.add_argument("--gain", help="kRG gain: exp (2^f - 1) or linear (f), f = k - rank in [0, k-1] (default: ranking.gain)")
    p.add_argument("--ties", help="hypotheses of equal Q: mean (share the mean gain of their positions) or model "
                                  "(ordered as the model ordered them) (default: ranking.ties)")
    p.add_argument("--no-top", action="store_true", help="skip the top-region (exact top-k) evaluation")
    p.add_argument("--no-sampling", action="store_true", help="skip the Monte Carlo sampling evaluation")
    p.add_argument("--mbr-samples", type=integer, default=100, help="--models: MBR samples per sentence (default: %(default)s)")
    p.add_argument("--mbr-utility", default=None, help="--models: MBR utility, any --quality value (default: --quality)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda (default: %(default)s)")
    p.add_argument("--threads", type=integer, default=0,
                   help="torch CPU threads; 0 = torch's default (on a small machine shared with other jobs, 1 is often fastest)")
    add_model_settings(p)
    p.set_defaults(func=cmd_rank)


def ranking_config(args: argparse.Namespace):  # -> simpe.config.tree.RankingConfig
    """The ranking section of adapters/defaults.yaml with the flags that were given."""
    from simpe.config.files import defaults

    flags = {"k": args.k, "quality": args.quality, "samples": args.samples, "sample_seed": args.sample_seed,
             "beam_size": args.beam_size, "batch_size": args.batch_size, "gain": args.gain, "ties": args.ties,
             "max_expansions": args.max_expansions, "max_seconds": args.max_seconds}
    given = {key: value for key, value in flags.items() if value is not None}
    for key in ("max_expansions", "max_seconds"):
        if given.get(key) == 0:
            given[key] = None  # 0 = no limit
    if args.no_top:
        given["top_region"] = False
    if args.no_sampling:
        given["sampling"] = False
    return defaults("ranking", **given)


def cmd_rank(args: argparse.Namespace) -> None:
    from simpe.errors import ConfigError
    from simpe.measure.rank import read_test_set, run_correlation, run_protocol
    from simpe.metrics.utility import check_utility
    from simpe.model import model_family

    cfg = ranking_config(args)
    check_utility(cfg.quality, args.comet_model)
    if args.models and args.mbr_utility is not None:
        check_utility(args.mbr_utility, args.comet_model)
    uses_comet = cfg.quality == "comet" or (args.models and args.mbr_utility == "comet")
    if args.models is not None and len(args.models) < 2:
        raise ConfigError("--models needs at least two models; for one model use --model")
    if args.threads < 0:
        raise ConfigError(f"--threads must be >= 0, got {args.threads}")
    sources, references = read_test_set(args.src, args.ref, args.limit, args.max_words)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    comet = None
    if uses_comet:
        from simpe.metrics.comet import CometScorer

        comet = CometScorer(args.comet_model, device="cuda" if args.device == "cuda" else "cpu")
    if args.models:
        model_cfg = model_section(args)
        for model_id in args.models:  # every model's family and settings (a store: the file) checked before any loads
            if str(model_id).endswith(".safetensors"):
                from simpe.store.user import read_store

                read_store(Path(model_id))
            else:
                model_family(model_id, model_cfg.family, model_cfg.family_settings())
        result = run_correlation(args.models, sources, references, cfg, args.out, device=args.device, comet=comet,
                                 model_settings=model_cfg.family_settings(),
                                 mbr_samples=args.mbr_samples, mbr_utility=args.mbr_utility, mbr_seed=cfg.sample_seed,
                                 overwrite=args.overwrite)
        print(f"{'model':30s} {'mc.kqrg':>8s} {'top.kqrg':>8s} {'beam Q':>8s} {'sample Q':>8s} {'MBR Q':>8s}")
        for row in result["models"]:
            cells = [row.get(k) for k in ("mc.kqrg", "top.kqrg", "beam.quality", "mc.mean_quality", "mbr.quality")]
            print(f"{row['name'][:30]:30s} " + " ".join(f"{c:8.4f}" if c is not None else f"{'-':>8s}" for c in cells))
        print(f"correlation with MBR {cfg.quality} quality over {len(args.models)} models ({len(sources)} sentences):")
        for name, corr in result["correlation"].items():
            cells = " ".join(f"{k} {v:+.3f}" if v is not None else f"{k} -" for k, v in corr.items())
            print(f"  {name:16s} {cells}")
        print(f"wrote {args.out / 'correlation.json'}")
        return
    from simpe.model import load_model
    from simpe.rundir.layout import RANK_RECORDS_FILE, RANK_SUMMARY_FILE
    from simpe.rundir.output import OutputDir

    model_cfg = model_section(args)
    family = model_family(args.model, model_cfg.family, model_cfg.family_settings())  # checked before the model loads
    OutputDir(args.out, [RANK_RECORDS_FILE, RANK_SUMMARY_FILE], args.overwrite)  # refuses before the model loads
    loaded = load_model(args.model, args.device, family, model_cfg.dtype, family_name=model_cfg.family,
                        settings=model_cfg.family_settings())
    summary = run_protocol(loaded.model, loaded.tokenizer, sources, references, cfg, args.out, comet=comet,
                           meta={"model": str(args.model or loaded.path), "src": str(args.src), "ref": str(args.ref)},
                           overwrite=args.overwrite)
    figures = summary["figures"]
    print(f"{loaded.name}: {len(sources)} sentences, k={cfg.k}, Q={cfg.quality}, gain {cfg.gain}")
    for key, value in figures.items():
        if isinstance(value, float):
            print(f"  {key:20s} {value:.4f}")
    for name, sig in summary["signatures"].items():
        print(f"  {name} signature: {sig}")
    print(f"wrote {args.out / 'records.jsonl'} and {args.out / 'summary.json'}")


def add_sensitivity(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sensitivity", help="MBR-based sensitivity of a utility to changed numbers, named entities and "
                                           "nouns (Amrhein and Sennrich (2022)), against copy / hallucination / alternative controls")
    p.add_argument("--src", type=Path, help="source sentences, one per line (default: the libreoffice dev split)")
    p.add_argument("-r", "--ref", type=Path, help="reference translations, one per line (with --src)")
    p.add_argument("--model", help="model folder or hub id drawing the support samples (default: the demo model)")
    p.add_argument("--utility", default="chrf++", help="utility: bleu, sbleu, chrf, chrf++, ter or comet (default: %(default)s)")
    p.add_argument("--comet", help="COMET model for --utility comet (hub id or local folder)")
    p.add_argument("--samples", type=integer, default=100, help="support samples per sentence (default: %(default)s)")
    p.add_argument("--limit", type=integer, default=200, help="the first N pairs (default: %(default)s)")
    p.add_argument("--sample-seed", type=seed, default=0, help="seed of the samples and of the changes (default: %(default)s)")
    p.add_argument("--lang", default="de", choices=["de", "en"], help="the references' language (default: %(default)s)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("-o", "--out", type=Path, help="write the table as JSON here too")
    p.set_defaults(func=cmd_sensitivity)


def cmd_sensitivity(args: argparse.Namespace) -> None:
    import json

    from simpe.errors import ConfigError
    from simpe.measure.sensitivity import analyse, format_table
    from simpe.metrics.utility import check_utility

    for flag, value in (("--samples", args.samples), ("--limit", args.limit)):
        if value < 1:
            raise ConfigError(f"{flag} must be >= 1, got {value}")
    if args.sample_seed < 0:
        raise ConfigError(f"--sample-seed must be >= 0, got {args.sample_seed}")
    check_utility(args.utility, args.comet)
    if (args.src is None) != (args.ref is None):
        raise ConfigError("give --src and --ref together (or neither: the libreoffice dev split)")
    if args.src is not None:
        from simpe.textfile import read_lines

        sources, references = read_lines(args.src, "source file"), read_lines(args.ref, "reference file")
    else:
        from simpe.datasets import DATASETS

        pairs = DATASETS.build("libreoffice").load("dev")
        sources, references = [p.source for p in pairs], [p.reference for p in pairs]
    sources, references = sources[: args.limit], references[: args.limit]
    from simpe.model import check_model, load_model

    check_model(args.model)
    loaded = load_model(args.model, args.device)
    result = analyse(loaded.model, loaded.tokenizer, sources, references, args.utility, args.samples, args.sample_seed,
                     args.lang, comet=args.comet, progress=True)
    print(format_table(result))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
