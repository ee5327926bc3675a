"""Shape-true models of real size, built offline: the published configurations of five models, random weights.

Each ``Shape`` holds the configuration values of a published checkpoint, written here from the ``config.json``
of its Hugging Face repository (no download: the values are in this file; each entry names its source). Only the
sizes matter (vocabulary, widths, layers, heads, feed-forward widths, tied or untied embeddings, activation); the
token ids are the offline tokenizer's (said where they differ from the published ones: no size depends on them).
The weights are random (``from_config`` under a seed): quality means nothing, memory and time are real.

``write(name, folder)`` writes a model folder that ``simpe.model.load_model`` reads like any other: config.json,
the tokenizer files and ``random-init.json`` (the seed) instead of weights; the model is built in memory when it
loads (``build_random``), so a 3-billion-parameter model is never written to disk or carried to another machine.
The tokenizer has the published vocabulary size: a SentencePiece model trained on the shipped dev split
(``data/libreoffice/dev``, both sides, ``BASE_PIECES`` pieces), then filled up to the published size with
pieces of type UNUSED (in the vocabulary, never produced by encoding). Segments are therefore cut into pieces of
an in-domain vocabulary of a few thousand, not of the published one: token counts per segment are of the same
order, not equal.

This module never downloads and never trains a model.
"""
from __future__ import annotations

import io
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simpe.errors import ConfigError

RANDOM_INIT_FILE = "random-init.json"  # a model folder whose weights are built at load time from config.json and a seed
BASE_PIECES = 4000  # pieces the offline SentencePiece model learns from the dev split before it is filled up
UNUSED = 5  # sentencepiece.ModelProto.SentencePiece.Type.UNUSED


@dataclass(frozen=True)
class Shape:
    """One published model's configuration (sizes from its config.json), and how its tokenizer is built."""

    hub_id: str  # the published checkpoint these sizes are from
    kind: str  # the tokenizer built: nllb, m2m100, mbart, t5, llama
    config_class: str  # the transformers configuration class
    config: dict[str, Any]
    pieces: int  # SentencePiece pieces (or vocab.json entries for m2m100) of the published tokenizer
    settings: dict[str, str] = field(default_factory=dict)  # the model section's languages for en -> de


# Sizes of the encoder-decoders below (M2M100Config / MBartConfig): d_model, layers, heads and feed-forward widths.
_FAIRSEQ_BIG = dict(d_model=1024, encoder_layers=12, decoder_layers=12, encoder_attention_heads=16, decoder_attention_heads=16,
                    encoder_ffn_dim=4096, decoder_ffn_dim=4096, max_position_embeddings=1024, scale_embedding=True,
                    dropout=0.1, attention_dropout=0.1, activation_dropout=0.0, encoder_layerdrop=0.0, decoder_layerdrop=0.0,
                    init_std=0.02, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)

SHAPES: dict[str, Shape] = {
    # huggingface.co/facebook/nllb-200-distilled-600M, config.json (M2M100Config, model_type m2m_100): vocab 256206,
    # d_model 1024, 12 + 12 layers, 16 heads, ffn 4096, relu, scale_embedding, tied embeddings. Tokenizer: NllbTokenizer
    # over a 256,000-piece SentencePiece model (+ 1 fairseq offset, 202 language codes, <mask>: 256,204 ids).
    "nllb-600m": Shape("facebook/nllb-200-distilled-600M", "nllb", "M2M100Config",
                       dict(_FAIRSEQ_BIG, vocab_size=256206, activation_function="relu", tie_word_embeddings=True),
                       256000, {"src_lang": "eng_Latn", "tgt_lang": "deu_Latn"}),
    # huggingface.co/facebook/m2m100_418M, config.json (M2M100Config): vocab 128112, the same sizes as NLLB-600M's.
    # Tokenizer: M2M100Tokenizer, vocab.json of 128,004 entries (4 specials + 128,000 pieces), 100 language codes.
    "m2m100-418m": Shape("facebook/m2m100_418M", "m2m100", "M2M100Config",
                         dict(_FAIRSEQ_BIG, vocab_size=128112, activation_function="relu", tie_word_embeddings=True),
                         128000, {"src_lang": "en", "tgt_lang": "de"}),
    # huggingface.co/facebook/mbart-large-50-many-to-many-mmt, config.json (MBartConfig): vocab 250054, d_model 1024,
    # 12 + 12 layers, 16 heads, ffn 4096, gelu, scale_embedding, tied embeddings. Tokenizer: MBart50Tokenizer over a
    # 250,000-piece SentencePiece model (+ 1 offset, 52 language codes, <mask>: 250,054 ids).
    "mbart50-mmt": Shape("facebook/mbart-large-50-many-to-many-mmt", "mbart", "MBartConfig",
                         dict(_FAIRSEQ_BIG, vocab_size=250054, activation_function="gelu", tie_word_embeddings=True,
                              forced_eos_token_id=2),
                         250000, {"src_lang": "en_XX", "tgt_lang": "de_DE"}),
    # huggingface.co/google/madlad400-3b-mt, config.json (T5Config): vocab 256000, d_model 1024, d_kv 128, d_ff 8192,
    # 32 + 32 layers, 16 heads, gated-gelu, untied embeddings, relative attention 32 buckets / distance 128. Token ids:
    # the offline tokenizer's (pad 0 = decoder start, eos 1, unk 2; the published ones are pad 1, eos 2, start 0).
    "madlad400-3b": Shape("google/madlad400-3b-mt", "t5", "T5Config",
                          dict(vocab_size=256000, d_model=1024, d_kv=128, d_ff=8192, num_layers=32, num_decoder_layers=32,
                               num_heads=16, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                               relative_attention_num_buckets=32, relative_attention_max_distance=128, dropout_rate=0.1,
                               layer_norm_epsilon=1e-6, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0),
                          256000, {"tgt_lang": "de"}),
    # huggingface.co/meta-llama/Llama-3.2-1B, config.json (LlamaConfig): vocab 128256, hidden 2048, 16 layers, 32 heads,
    # 8 key/value heads (head_dim 64), intermediate 8192, silu, rms_norm_eps 1e-5, rope_theta 500000 with llama3 scaling
    # (factor 32), tied embeddings. Token ids: the offline tokenizer's (bos 1, eos 2; published 128000, 128001); its
    # tokenizer is a SentencePiece LlamaTokenizer of 128,256 pieces where the published one is tiktoken BPE.
    "llama3.2-1b": Shape("meta-llama/Llama-3.2-1B", "llama", "LlamaConfig",
                         dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                              num_attention_heads=32, num_key_value_heads=8, head_dim=64, hidden_act="silu",
                              max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
                              rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                            "original_max_position_embeddings": 8192, "rope_type": "llama3"},
                              tie_word_embeddings=True, attention_bias=False, mlp_bias=False, bos_token_id=1, eos_token_id=2),
                         128256, {}),
}
CLASS_OF = {"M2M100Config": "M2M100ForConditionalGeneration", "MBartConfig": "MBartForConditionalGeneration",
            "T5Config": "T5ForConditionalGeneration", "LlamaConfig": "LlamaForCausalLM"}


def shape(name: str) -> Shape:
    """The shape of that name (one line naming the known ones otherwise)."""
    if name not in SHAPES:
        raise ConfigError(f"unknown model shape {name!r}; known: {', '.join(SHAPES)}")
    return SHAPES[name]


def config(name: str, **overrides: Any) -> Any:
    """The transformers configuration of shape ``name`` (``overrides``: smaller sizes for a quick check)."""
    import transformers

    entry = shape(name)
    return getattr(transformers, entry.config_class)(**{**entry.config, **overrides})


# ---------------------------------------------------------------------------------------------- tokenizers
def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _unused_piece(text: str) -> bytes:
    """One ``pieces`` entry (field 1) of a SentencePiece ModelProto: piece ``text``, score 0, type UNUSED."""
    body = text.encode("utf-8")
    message = b"\x0a" + _varint(len(body)) + body + b"\x15" + struct.pack("<f", 0.0) + b"\x18" + _varint(UNUSED)
    return b"\x0a" + _varint(len(message)) + message


def filled_spm(model: bytes, pieces: int) -> bytes:
    """A SentencePiece model of ``pieces`` pieces: ``model``'s, then UNUSED ones (``<unused_N>``) up to the count.

    A repeated protobuf field may be continued anywhere in the message, so the new pieces are appended to the
    serialized model; no protobuf library is needed (sentencepiece's own Python protobuf module needs a newer
    protobuf than comet's pinned one)."""
    import sentencepiece as spm

    have = spm.SentencePieceProcessor(model_proto=model).get_piece_size()
    if pieces < have:
        raise ValueError(f"the base model has {have} pieces, more than the {pieces} asked for")
    return model + b"".join(_unused_piece(f"<unused_{i}>") for i in range(pieces - have))


def _dev_lines(repo: Path) -> list[str]:
    lines: list[str] = []
    for side in ("en", "de"):
        lines += (repo / "data" / "libreoffice" / f"dev.{side}").read_text(encoding="utf-8").splitlines()
    return lines


def base_spm(repo: Path, symbols: tuple[str, ...] = ("<2de>", "<2en>"), **ids: int) -> bytes:
    """A ``BASE_PIECES``-piece unigram SentencePiece model of the shipped dev split; ``symbols``: its user-defined
    pieces (MADLAD's target tags); ``ids``: pad_id, unk_id, bos_id, eos_id."""
    import sentencepiece as spm

    out = io.BytesIO()
    settings = {"pad_id": -1, "unk_id": 0, "bos_id": -1, "eos_id": -1, **ids}
    spm.SentencePieceTrainer.train(sentence_iterator=iter(_dev_lines(repo)), model_writer=out, vocab_size=BASE_PIECES,
                                   model_type="unigram", character_coverage=1.0, hard_vocab_limit=False,
                                   user_defined_symbols=list(symbols), minloglevel=2, num_threads=1, **settings)
    return out.getvalue()


def tokenizer(name: str, folder: Path, repo: Path) -> Any:
    """The tokenizer of shape ``name`` (its class and vocabulary size), its SentencePiece files under ``folder``."""
    from transformers import LlamaTokenizer, M2M100Tokenizer, MBart50Tokenizer, NllbTokenizer, T5Tokenizer

    entry = shape(name)
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / "spm.model"

    def from_spm(cls: Any, data: bytes, **settings: Any) -> Any:
        """``cls`` read from a folder holding only its SentencePiece file, as a hub checkpoint without tokenizer.json
        is: transformers 4 builds the slow class, 5 converts the file (5's constructors take vocabularies, not files)."""
        model.write_bytes(data)
        own = folder / "own"
        own.mkdir(exist_ok=True)
        (own / cls.vocab_files_names["vocab_file"]).write_bytes(data)
        return cls.from_pretrained(str(own), **settings)

    if entry.kind == "nllb":
        import transformers

        codes = {}
        if int(transformers.__version__.split(".")[0]) >= 5:  # 5 takes the SentencePiece file's own symbols for its
            from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES  # language codes: name them

            codes = {"extra_special_tokens": list(FAIRSEQ_LANGUAGE_CODES)}
        return from_spm(NllbTokenizer, filled_spm(base_spm(repo), entry.pieces), src_lang="eng_Latn", tgt_lang="deu_Latn", **codes)
    if entry.kind == "mbart":
        # no user-defined pieces: transformers 5 adds them as tokens after the language codes and <mask> (250,056 ids)
        return from_spm(MBart50Tokenizer, filled_spm(base_spm(repo, symbols=()), entry.pieces), src_lang="en_XX",
                        tgt_lang="de_DE")
    if entry.kind == "t5":
        return from_spm(T5Tokenizer, filled_spm(base_spm(repo, pad_id=0, eos_id=1, unk_id=2), entry.pieces), extra_ids=0)
    if entry.kind == "llama":
        return from_spm(LlamaTokenizer, filled_spm(base_spm(repo, unk_id=0, bos_id=1, eos_id=2), entry.pieces),
                        add_bos_token=True, add_eos_token=False)
    if entry.kind == "m2m100":
        import sentencepiece as spm

        model.write_bytes(base_spm(repo))
        processor = spm.SentencePieceProcessor(model_file=str(model))
        vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
        for i in range(processor.get_piece_size()):
            vocab.setdefault(processor.id_to_piece(i), len(vocab))
        for i in range(4 + entry.pieces - len(vocab)):
            vocab[f"<unused_{i}>"] = len(vocab)
        (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
        return M2M100Tokenizer(str(folder / "vocab.json"), str(model), src_lang="en", tgt_lang="de")
    raise AssertionError(entry.kind)


def vocabulary_size(tok: Any) -> int:
    """Every id the tokenizer can give (M2M100's language ids lie beyond its get_vocab())."""
    ids = list(tok.get_vocab().values()) + list((getattr(tok, "lang_code_to_id", None) or {}).values())
    return max(max(ids) + 1, len(tok))


# ---------------------------------------------------------------------------------------------- folders and models
def write(name: str, folder: Path, repo: Path | None = None, seed: int = 0, **overrides: Any) -> Path:
    """Write the model folder of shape ``name``: config.json, the tokenizer, ``random-init.json``; no weights.

    ``overrides``: configuration values replacing the published ones (fewer layers for a quick check); the folder
    then says so in ``random-init.json``."""
    from simpe.paths import REPO_ROOT as REPO

    repo = repo or REPO
    entry = shape(name)
    folder = Path(folder)
    tok = tokenizer(name, folder / "spm", repo)
    cfg = config(name, **overrides)
    if vocabulary_size(tok) > cfg.vocab_size:
        raise AssertionError(f"{name}: the tokenizer gives {vocabulary_size(tok)} ids, the model has {cfg.vocab_size}")
    cfg.architectures = [CLASS_OF[entry.config_class]]
    cfg.save_pretrained(folder)
    tok.save_pretrained(folder)
    (folder / RANDOM_INIT_FILE).write_text(json.dumps({"shape": name, "hub_id": entry.hub_id, "seed": seed,
                                                       "overrides": overrides, "settings": entry.settings}, indent=1) + "\n",
                                           encoding="utf-8")
    return folder


def random_init(folder: Path) -> dict[str, Any] | None:
    """The ``random-init.json`` of a model folder (None when it has none: its weights are in files)."""
    path = Path(folder) / RANDOM_INIT_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict) or isinstance(data.get("seed"), bool) or not isinstance(data.get("seed"), int):
        from simpe.errors import ModelError

        raise ModelError(f"{path} must be a JSON object with an integer seed (written by simpe.models.shapes.write)")
    return data


def untie_as_configured(model: Any, untied: bool) -> Any:
    """``model`` with its own output projection when ``untied`` (config.json's ``tie_word_embeddings: false``):
    transformers 5 builds every new T5 tied, whatever its config says (it unties only one whose checkpoint holds
    its own lm_head), and MADLAD's output projection is its own."""
    import torch

    out, inp = model.get_output_embeddings(), model.get_input_embeddings()
    if untied and out is not None and out.weight is inp.weight:
        out.weight = torch.nn.Parameter(inp.weight.detach().clone())
    return model


def build_random(auto_class: str, folder: Path, dtype: Any, seed: int) -> Any:
    """The model of ``folder``'s config.json with random weights drawn under ``seed``, built at ``dtype`` directly (a
    float32 copy of a 3B model is never made)."""
    import torch
    import transformers

    cfg = transformers.AutoConfig.from_pretrained(str(folder))
    previous = torch.get_default_dtype()
    torch.manual_seed(seed)
    torch.set_default_dtype(dtype)
    try:
        untied = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("tie_word_embeddings") is False
        model = untie_as_configured(getattr(transformers, auto_class).from_config(cfg), untied)
    finally:
        torch.set_default_dtype(previous)
    model = model.to(dtype)
    _reset_peak_memory()
    return model


def _reset_peak_memory() -> None:
    """Reset this process's peak resident memory (VmHWM) to what it holds now (Linux: ``/proc/self/clear_refs``).

    Drawing random weights passes through a transient that loading a checkpoint does not (transformers builds each
    side's embedding before tying it to the shared one: 2 GB above the model for NLLB-600M in float32, measured), so
    the peak a run of a random-weight model reports (``simpe.loop.dryrun.measured_peak``, ``make bench-size``) starts
    from the model as built. Elsewhere, or where the kernel refuses, nothing changes."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
    except OSError:
        pass


def parameter_count(name_or_config: Any) -> int:
    """The parameters of a model of this shape name or transformers config (tied tensors once), counted on the meta
    device: nothing is allocated."""
    import torch
    import transformers

    cfg = config(name_or_config) if isinstance(name_or_config, str) else name_or_config
    untied = shape(name_or_config).config.get("tie_word_embeddings") is False if isinstance(name_or_config, str) else \
        getattr(cfg, "tie_word_embeddings", True) is False
    auto = "AutoModelForCausalLM" if not getattr(cfg, "is_encoder_decoder", False) else "AutoModelForSeq2SeqLM"
    with torch.device("meta"):
        model = untie_as_configured(getattr(transformers, auto).from_config(cfg), untied)
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
