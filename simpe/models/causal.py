"""``causal``: decoder-only LLM translators (Llama-style: Tower, Llama; Qwen2/Qwen3; Mistral).

There is no encoder: the source becomes a prompt, and the prompt is the target's prefix. The
prompt is the tokenizer's chat template when it has one (one user turn asking for the
translation, ``add_generation_prompt``), else a plain template (``model.prompt_template``,
default ``PLAIN``); an explicit ``model.prompt_template`` is used even where a chat template
exists. In-context examples (the ``icl`` method) go in front of the query: as earlier user /
assistant turns under a chat template, as earlier blocks under a plain one, in the order given
(the most similar last, closest to the query). ``model.src_lang`` / ``model.tgt_lang`` are the
language *names* the prompt says (default English and German, the shipped data's pair).

A target is the reference's tokens (tokenised on their own, no special tokens) and the stop
token: the chat template's end-of-turn token (``<|im_end|>``, ``<|eot_id|>``, ``<end_of_turn>``,
``<|end|>``, when the tokenizer has one), else EOS; generation stops at any of EOS, the config's
EOS ids and the end of turn. The update's loss counts the target tokens only: teacher forcing
runs prompt + target and reads the logits at the target positions alone, so the prompt's tokens
are never a label. The "top layer" is the top decoder block; LoRA targets the attention and MLP
projections. Batched prompts of different lengths are left-padded, and every row's positions
(rotary) come from its attention mask, so rows of different lengths batch exactly.
"""
from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import torch

from simpe.errors import ConfigError, ModelError
from simpe.models.base import FAMILIES, ModelFamily, cache_keyword, returned_cache

PLAIN = "Translate the following text from {src_lang} into {tgt_lang}.\n{examples}{terms}{src_lang}: {source}\n{tgt_lang}:"
EXAMPLE = "{src_lang}: {source}\n{tgt_lang}: {target}\n\n"  # one example block of the plain template
INSTRUCTION = "Translate the following text from {src_lang} into {tgt_lang}.\n{terms}{src_lang}: {source}\n{tgt_lang}:"  # a chat turn
TERMS = "Use these term translations: {pairs}.\n"  # data.glossary_prompt: the glossary's terms that apply to the source
TERM_PAIR = "{source} = {target}"  # one term of TERMS, joined with "; "
FIELDS = ("source", "src_lang", "tgt_lang", "examples", "terms")
END_OF_TURN = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>")
DEFAULT_LANGUAGES = ("English", "German")


@FAMILIES.add("causal")
class CausalFamily(ModelFamily):
    """AutoModelForCausalLM (Llama, Mistral, Qwen2, Qwen3) + its tokenizer; a chat template or a plain prompt."""

    model_types = ("llama", "mistral", "qwen2", "qwen3")
    encoder_decoder = False
    auto_class = "AutoModelForCausalLM"
    lora_targets = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    hub_example = "Unbabel/TowerInstruct-7B-v0.2"
    uses = ("src_lang", "tgt_lang", "prompt_template")

    def __init__(self, src_lang: str | None = None, tgt_lang: str | None = None, prompt_template: str | None = None) -> None:
        super().__init__(src_lang, tgt_lang, prompt_template)
        if prompt_template is not None:
            try:
                fields = [(field, spec, conversion) for _, field, spec, conversion in string.Formatter().parse(prompt_template)
                          if field is not None]
            except ValueError as err:
                raise ConfigError(f"model.prompt_template is not a format string ({err}): {prompt_template!r}") from None
            names = {field for field, _, _ in fields}
            shaped = [f"{{{field}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}}" for field, spec, conversion in fields
                      if spec or conversion]
            if shaped:  # {source:>999999999} pads every prompt to a billion characters
                raise ConfigError(f"model.prompt_template's fields take no format spec or conversion: {shaped[0][:60]} in "
                                  f"{prompt_template[:200]!r}; write {{{fields[0][0]}}}")
            unknown = sorted(names - set(FIELDS))
            if unknown or "source" not in names:
                raise ConfigError(f"model.prompt_template must contain {{source}} and only the fields {', '.join(FIELDS)}; "
                                  f"got {prompt_template!r}")
        self.languages = (src_lang or DEFAULT_LANGUAGES[0], tgt_lang or DEFAULT_LANGUAGES[1])
        self.chat = False
        self.end_of_turn: int | None = None

    # ------------------------------------------------------------------ binding
    def attach(self, model: Any, tokenizer: Any = None) -> ModelFamily:
        """As every family; first decide the prompt: the chat template when the tokenizer has one and no
        ``prompt_template`` is given, else the plain template."""
        self.chat = tokenizer is not None and bool(getattr(tokenizer, "chat_template", None)) and self.prompt_template is None
        if self.chat:  # render it once now: a template that fails does so here, in one line, not at segment 1
            try:
                tokenizer.apply_chat_template([{"role": "user", "content": "Hello."}], add_generation_prompt=True, tokenize=False)
            except Exception as err:  # jinja2's TemplateError, or whatever the template raises
                raise ModelError(f"the tokenizer's chat template fails to render ({type(err).__name__}: "
                                 f"{str(err).strip()[:160]}); fix chat_template in tokenizer_config.json, or give "
                                 "--prompt-template to use a plain prompt") from None
        return super().attach(model, tokenizer)

    def decoder_prefix(self, config: Any, tokenizer: Any) -> tuple[int, ...]:
        return ()  # the prompt is each source's own prefix

    def stop_ids(self, config: Any, tokenizer: Any) -> tuple[int, ...]:
        """The end of turn (chat template) or the tokenizer's EOS first, then the config's EOS ids."""
        first: list[int] = []
        if self.chat:
            vocab = tokenizer.get_vocab()
            found = next((vocab[token] for token in END_OF_TURN if token in vocab), None)
            self.end_of_turn = found
            if found is not None:
                first.append(int(found))
        if tokenizer is not None and tokenizer.eos_token_id is not None:
            first.append(int(tokenizer.eos_token_id))
        ids = first + list(super().stop_ids(config, tokenizer))
        if not ids:
            raise ConfigError("this causal LM has no EOS token (config eos_token_id and the tokenizer's are both unset)")
        return tuple(dict.fromkeys(ids))

    def max_tokens(self, config: Any) -> int:
        return int(getattr(config, "max_position_embeddings", None) or 2048)

    # ------------------------------------------------------------------ text -> ids
    def prompt_text(self, tokenizer: Any, source: str, examples: Sequence[tuple[str, str]],
                    terms: Sequence[tuple[str, str]] = ()) -> str | list[int]:
        """The prompt: ids from the chat template, or the plain template's text. ``terms``: (source term, target term)
        pairs said before the source line of the query ("Use these term translations: Cells = Zellen; ..."), a
        template's ``{terms}`` field; none: the prompt is what it is without a glossary."""
        src_lang, tgt_lang = self.languages
        said = TERMS.format(pairs="; ".join(TERM_PAIR.format(source=s, target=t) for s, t in terms)) if terms else ""
        if self.chat:
            messages: list[dict[str, str]] = []
            for ex_source, ex_target in examples:
                messages += [{"role": "user", "content": INSTRUCTION.format(src_lang=src_lang, tgt_lang=tgt_lang, source=ex_source,
                                                                            terms="")},
                             {"role": "assistant", "content": ex_target}]
            messages.append({"role": "user", "content": INSTRUCTION.format(src_lang=src_lang, tgt_lang=tgt_lang, source=source,
                                                                           terms=said)})
            ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
        shots = "".join(EXAMPLE.format(src_lang=src_lang, tgt_lang=tgt_lang, source=s, target=t) for s, t in examples)
        return (self.prompt_template or PLAIN).format(src_lang=src_lang, tgt_lang=tgt_lang, source=source, examples=shots,
                                                      terms=said)

    def takes_terms(self) -> bool:
        """A prompt says the terms (``data.glossary_prompt``): the chat template's, the plain one, or a
        ``prompt_template`` with a ``{terms}`` field."""
        return self.prompt_template is None or "{terms}" in self.prompt_template

    def encode_source(self, tokenizer: Any, source: str, device: Any, examples: Sequence[tuple[str, str]] = (),
                      terms: Sequence[tuple[str, str]] = ()) -> tuple[Any, bool]:
        """The prompt's ids (``terms``: said in it, ``prompt_text``); a source longer than half the model's length is
        cut (its tokens, then the prompt built)."""
        budget = self._limit() // 2
        ids = tokenizer(source, add_special_tokens=False)["input_ids"]
        cut = len(ids) > budget
        if cut:
            source = tokenizer.decode(ids[:budget], skip_special_tokens=True)
        prompt = self.prompt_text(tokenizer, source, examples, terms)
        tokens = prompt if isinstance(prompt, list) else tokenizer(prompt)["input_ids"]  # the plain prompt: with BOS if the tokenizer adds one
        return torch.tensor([tokens], dtype=torch.long, device=device), cut

    def encode_target(self, tokenizer: Any, reference: str) -> tuple[list[int], bool]:
        limit = self._limit() // 2
        ids = tokenizer(reference, add_special_tokens=False)["input_ids"]
        return list(ids[: limit - 1]) + [self.special.eos], len(ids) + 1 > limit

    # ------------------------------------------------------------------ roles
    def top_layer_prefixes(self, model: Any) -> tuple[str, ...]:
        prefix = model.base_model_prefix
        return (f"{prefix}.layers.{len(getattr(model, prefix).layers) - 1}.",)

    # ------------------------------------------------------------------ teacher forcing
    def pair_logits(self, model: Any, input_ids: Any, labels: Any, attention_mask: Any = None) -> Any:
        """(batch, tgt_len, vocab) logits at the target positions of prompt + target: the prompt is never scored."""
        body = labels[:, :-1].masked_fill(labels[:, :-1] == -100, 0)  # (batch, tgt_len - 1)
        sequence = torch.cat([input_ids, body], dim=1)  # (batch, P + tgt_len - 1)
        mask = None if attention_mask is None else torch.cat([attention_mask, (labels[:, :-1] != -100).long()], dim=1)
        return model(input_ids=sequence, attention_mask=mask, use_cache=False, logits_to_keep=labels.shape[1]).logits

    # ------------------------------------------------------------------ incremental decoding
    def encode(self, model: Any, ids: Any) -> Any:
        return None

    def forward(self, model: Any, tokens: Any, cache: Any, *, hidden: Any = None, src_mask: Any = None,
                mask: Any = None) -> tuple[Any, Any]:
        """Tokens appended to the cache; with a mask (left-padded prompts, padded prefixes) every row's positions
        are counted from its own mask, so each row sees its own rotary positions."""
        positions = None
        if mask is not None:
            positions = (mask.cumsum(dim=1) - 1).clamp(min=0)[:, -tokens.shape[1]:]  # (rows, t)
        out = model(input_ids=tokens, attention_mask=mask, position_ids=positions, **{cache_keyword(model): cache},
                    use_cache=True, return_dict=True, logits_to_keep=1)
        return out.logits[:, -1, :], returned_cache(out)
