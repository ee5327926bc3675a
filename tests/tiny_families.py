"""Tiny seeded checkpoints of every model family, with real tokenizers built offline (no hub).

Each builder writes a folder with ``save_pretrained`` of the real model class and the real
tokenizer class, so ``simpe.model.load_model`` reads it exactly as it reads a hub checkpoint:

* ``mbart``: ``MBartForConditionalGeneration`` + ``MBart50Tokenizer`` (en_XX, de_DE ...);
* ``m2m100``: ``M2M100ForConditionalGeneration`` + ``M2M100Tokenizer`` (en, de ...);
* ``nllb``: ``M2M100ForConditionalGeneration`` + ``NllbTokenizer`` (eng_Latn, deu_Latn ...);
* ``t5``: ``T5ForConditionalGeneration`` + ``T5Tokenizer`` whose vocabulary holds MADLAD's ``<2de>``;
* ``llama``: ``LlamaForCausalLM`` + ``LlamaTokenizer``, no chat template (the plain prompt);
* ``qwen2``: ``Qwen2ForCausalLM`` + a byte-level BPE ``PreTrainedTokenizerFast`` (the ``tokenizers``
  library) with a ChatML chat template (``<|im_start|>``, ``<|im_end|>``).

The SentencePiece models are trained on the first lines of the shipped ``data/libreoffice/dev``
split (both sides), 200 pieces; every model has one layer per stack, d_model 16. Folders are built
once per process (``build``). ``token_model`` builds a tokenizer-free model of a family over a
12-token vocabulary for brute-force checks.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data" / "libreoffice"
FAMILY_OF = {"mbart": "mbart", "m2m100": "m2m100", "nllb": "m2m100", "t5": "t5", "llama": "causal", "qwen2": "causal"}
SETTINGS = {  # the model section's languages for each tiny model
    "mbart": {"src_lang": "en_XX", "tgt_lang": "de_DE"}, "m2m100": {"src_lang": "en", "tgt_lang": "de"},
    "nllb": {"src_lang": "eng_Latn", "tgt_lang": "deu_Latn"}, "t5": {"tgt_lang": "de"}, "llama": {}, "qwen2": {},
}
KINDS = tuple(FAMILY_OF)
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
_BUILT: dict[tuple[str, str], Path] = {}


def training_lines(count: int = 300) -> list[str]:
    lines = []
    for side in ("en", "de"):
        lines += (DATA / f"dev.{side}").read_text(encoding="utf-8").splitlines()[:count]
    return lines


def train_spm(path: Path, **ids: int) -> Path:
    """A 200-piece unigram SentencePiece model of the shipped dev text; ``ids``: pad_id, unk_id, bos_id, eos_id."""
    import sentencepiece as spm

    out = io.BytesIO()
    settings = {"pad_id": -1, "unk_id": 0, "bos_id": -1, "eos_id": -1, **ids}
    spm.SentencePieceTrainer.train(sentence_iterator=iter(training_lines()), model_writer=out, vocab_size=200,
                                   model_type="unigram", character_coverage=1.0, user_defined_symbols=["<2de>", "<2en>"],
                                   minloglevel=2, **settings)
    path.write_bytes(out.getvalue())
    return path


def _vocab_size(tokenizer) -> int:
    """Every id the tokenizer can give (M2M100's language ids lie beyond its get_vocab())."""
    ids = list(tokenizer.get_vocab().values()) + list((getattr(tokenizer, "lang_code_to_id", None) or {}).values())
    return max(max(ids) + 1, len(tokenizer))


def _from_spm(cls, model: Path, folder: Path, **settings):
    """``cls`` read from a folder holding only its SentencePiece file, as a hub checkpoint without tokenizer.json is:
    transformers 4 builds its slow (SentencePiece) class, transformers 5 converts the file to its ``tokenizers``
    class (5 has no slow class for mBART-50, NLLB, T5 and Llama, and their constructors take vocabularies, not files)."""
    own = folder / "own"
    own.mkdir(exist_ok=True)
    (own / cls.vocab_files_names["vocab_file"]).write_bytes(model.read_bytes())
    return cls.from_pretrained(str(own), **settings)


def _tokenizer(kind: str, folder: Path):
    import transformers
    from transformers import LlamaTokenizer, M2M100Tokenizer, MBart50Tokenizer, NllbTokenizer, T5Tokenizer

    folder.mkdir(parents=True, exist_ok=True)
    if kind == "mbart":
        return _from_spm(MBart50Tokenizer, train_spm(folder / "spm.model"), folder, src_lang="en_XX", tgt_lang="de_DE")
    if kind == "nllb":
        codes = {}
        if int(transformers.__version__.split(".")[0]) >= 5:  # 5 takes the SentencePiece file's own symbols (<2de>, <2en>)
            from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES  # for its language codes: name them

            codes = {"extra_special_tokens": list(FAIRSEQ_LANGUAGE_CODES)}
        return _from_spm(NllbTokenizer, train_spm(folder / "spm.model"), folder, src_lang="eng_Latn", tgt_lang="deu_Latn", **codes)
    if kind == "m2m100":
        import sentencepiece as spm

        model = train_spm(folder / "spm.model")
        pieces = [spm.SentencePieceProcessor(model_file=str(model)).id_to_piece(i) for i in range(200)]
        vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
        for piece in pieces:
            vocab.setdefault(piece, len(vocab))
        (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
        return M2M100Tokenizer(str(folder / "vocab.json"), str(model), src_lang="en", tgt_lang="de")
    if kind == "t5":
        return _from_spm(T5Tokenizer, train_spm(folder / "spm.model", pad_id=0, eos_id=1, unk_id=2), folder, extra_ids=0)
    if kind == "llama":
        return _from_spm(LlamaTokenizer, train_spm(folder / "spm.model", unk_id=0, bos_id=1, eos_id=2), folder,
                         add_bos_token=True, add_eos_token=False)
    if kind == "qwen2":
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        from transformers import PreTrainedTokenizerFast

        bpe = Tokenizer(models.BPE())
        bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        bpe.decoder = decoders.ByteLevel()
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        bpe.train_from_iterator(training_lines(), trainers.BpeTrainer(vocab_size=400, special_tokens=specials, show_progress=False,
                                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        fast = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                       additional_special_tokens=["<|im_start|>"])
        fast.chat_template = CHATML
        return fast
    raise ValueError(kind)


def _model(kind: str, tokenizer, seed: int):
    import transformers as tf

    torch.manual_seed(seed)
    vocab = _vocab_size(tokenizer)
    seq2seq = dict(vocab_size=vocab, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                   decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=256,
                   dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, scale_embedding=True)
    if kind == "mbart":
        cfg = tf.MBartConfig(**seq2seq, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
        return tf.MBartForConditionalGeneration(cfg)
    if kind in ("m2m100", "nllb"):
        cfg = tf.M2M100Config(**seq2seq, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
        return tf.M2M100ForConditionalGeneration(cfg)
    if kind == "t5":
        cfg = tf.T5Config(vocab_size=vocab, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_decoder_layers=1, num_heads=2,
                          dropout_rate=0.0, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, feed_forward_proj="gated-gelu",
                          tie_word_embeddings=False, n_positions=256)
        model = tf.T5ForConditionalGeneration(cfg)
        if model.lm_head.weight is model.shared.weight:  # transformers 5 builds every T5 tied (it unties one whose
            model.config.tie_word_embeddings = False  # checkpoint holds its own lm_head): give it its own, as 4 does
            model.lm_head.weight = torch.nn.Parameter(torch.randn_like(model.shared.weight))
        return model
    causal = dict(vocab_size=vocab, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=1, max_position_embeddings=512)
    if kind == "llama":
        return tf.LlamaForCausalLM(tf.LlamaConfig(**causal, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False))
    if kind == "qwen2":
        return tf.Qwen2ForCausalLM(tf.Qwen2Config(**causal, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                                                  bos_token_id=None, tie_word_embeddings=True))
    raise ValueError(kind)


def build(kind: str, root: Path, seed: int = 0) -> Path:
    """The folder of tiny model ``kind`` (built once per process under ``root``)."""
    key = (kind, str(root))
    if key not in _BUILT:
        folder = root / f"tiny-{kind}"
        tokenizer = _tokenizer(kind, folder / "spm")
        model = _model(kind, tokenizer, seed)
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        _BUILT[key] = folder
    return _BUILT[key]


def token_model(kind: str, seed: int, scale: float = 1.0):
    """A tokenizer-free random model of family ``kind`` over 12 tokens, its family bound from the config:
    hypotheses are made of 10 ordinary tokens and one stop token (see ``PLAIN_TOKENS``)."""
    import transformers as tf

    from simpe.models import family_of

    torch.manual_seed(seed)
    small = dict(vocab_size=12, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                 encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64, dropout=0.0, scale_embedding=True)
    if kind == "mbart":  # pad 1, eos 2 = decoder start, forced BOS 11 (a "language code")
        model = tf.MBartForConditionalGeneration(tf.MBartConfig(**small, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                                                decoder_start_token_id=2, forced_bos_token_id=11))
    elif kind in ("m2m100", "nllb"):
        model = tf.M2M100ForConditionalGeneration(tf.M2M100Config(**small, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                                                  decoder_start_token_id=2, forced_bos_token_id=11))
    elif kind == "t5":  # pad 0 = decoder start, eos 1
        model = tf.T5ForConditionalGeneration(tf.T5Config(vocab_size=12, d_model=16, d_kv=8, d_ff=32, num_layers=1,
                                                          num_decoder_layers=1, num_heads=2, dropout_rate=0.0, pad_token_id=0,
                                                          eos_token_id=1, decoder_start_token_id=0,
                                                          relative_attention_num_buckets=8, relative_attention_max_distance=6))
    else:  # causal: pad 0, eos 2
        cls, cfg = (tf.LlamaForCausalLM, tf.LlamaConfig) if kind == "llama" else (tf.Qwen2ForCausalLM, tf.Qwen2Config)
        model = cls(cfg(vocab_size=12, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                        num_key_value_heads=1, max_position_embeddings=64, pad_token_id=0, bos_token_id=1, eos_token_id=2))
    if kind in ("mbart", "m2m100", "nllb"):  # transformers 5 keeps forced_bos_token_id in the generation config only
        model.generation_config.forced_bos_token_id = 11
    if scale != 1.0:
        with torch.no_grad():
            family_of(model).output_projection(model).weight.mul_(scale)
    model.eval()
    family_of(model)  # bind the config's family
    return model


PLAIN_TOKENS = {  # the ordinary tokens (neither pad nor stop) of token_model's vocabulary, per family
    "mbart": (0, *range(3, 12)), "m2m100": (0, *range(3, 12)), "nllb": (0, *range(3, 12)), "t5": tuple(range(2, 12)),
    "llama": (1, *range(3, 12)), "qwen2": (1, *range(3, 12)),
}
STOP = {"mbart": 2, "m2m100": 2, "nllb": 2, "t5": 1, "llama": 2, "qwen2": 2}
