"""What the exporter needs from a Hugging Face tokenizer.json: vocabulary size and special tokens.

The worker encodes DNA with its own C++ BPE tokenizer from the same file (manifest
"tokenizer": {"type": "bpe", "file": "tokenizer.json"}); this module only reads the facts the
exported TorchScript module must agree with:
  - the largest token id (it must index the model's word embedding),
  - the [CLS]/[SEP] ids the post-processor wraps a single sequence in, which the exported module
    adds itself (see hf_bert.py),
  - the padding id, which the exported module masks out of attention.
"""

import json
from dataclasses import dataclass, field
from typing import Dict, List, Optional


class TokenizerJsonError(Exception):
    """A tokenizer.json the exporter cannot use; the message says why."""


@dataclass
class TokenizerFacts:
    model_type: str
    vocab: Dict[str, int]                 # model vocabulary plus added tokens
    max_id: int
    prefix_ids: List[int] = field(default_factory=list)   # special ids before the sequence
    suffix_ids: List[int] = field(default_factory=list)   # special ids after it
    pad_id: Optional[int] = None
    unk_id: Optional[int] = None
    special_tokens: Dict[str, int] = field(default_factory=dict)

    def id_of(self, token: str) -> Optional[int]:
        return self.vocab.get(token)


def _special_ids(processor: dict, vocab: Dict[str, int], name: str) -> List[int]:
    """Ids of one special-token entry of a TemplateProcessing post-processor."""
    specials = processor.get("special_tokens", {})
    entry = specials.get(name)
    if isinstance(entry, dict) and isinstance(entry.get("ids"), list):
        return [int(i) for i in entry["ids"]]
    if name in vocab:
        return [vocab[name]]
    raise TokenizerJsonError(f"post_processor names special token {name!r}, which has no id")


def _template_specials(processor: dict, vocab: Dict[str, int]):
    """(prefix ids, suffix ids) of a single sequence under the post-processor."""
    kind = processor.get("type")
    if kind == "TemplateProcessing":
        prefix: List[int] = []
        suffix: List[int] = []
        seen_sequence = False
        for item in processor.get("single", []):
            if "Sequence" in item:
                if seen_sequence:
                    raise TokenizerJsonError("post_processor template repeats the sequence")
                seen_sequence = True
            elif "SpecialToken" in item:
                ids = _special_ids(processor, vocab, item["SpecialToken"]["id"])
                (suffix if seen_sequence else prefix).extend(ids)
            else:
                raise TokenizerJsonError(f"post_processor template item {item!r} not understood")
        if not seen_sequence:
            raise TokenizerJsonError("post_processor template has no sequence slot")
        return prefix, suffix
    if kind in ("BertProcessing", "RobertaProcessing"):
        cls_token, cls_id = processor["cls"]
        sep_token, sep_id = processor["sep"]
        return [int(cls_id)], [int(sep_id)]
    if kind == "Sequence":
        found = [p for p in processor.get("processors", [])
                 if p.get("type") in ("TemplateProcessing", "BertProcessing", "RobertaProcessing")]
        if len(found) > 1:
            raise TokenizerJsonError("post_processor Sequence holds several templates")
        if found:
            return _template_specials(found[0], vocab)
        return [], []
    if kind in ("ByteLevel",):
        return [], []
    raise TokenizerJsonError(f"post_processor type {kind!r} is not supported")


def read_tokenizer_json(path: str) -> TokenizerFacts:
    try:
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except FileNotFoundError:
        raise TokenizerJsonError(f"{path}: not found") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise TokenizerJsonError(f"{path}: not JSON ({error})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise TokenizerJsonError(f"{path}: has no 'model' object")
    model = doc["model"]
    model_type = model.get("type")
    if model_type != "BPE":
        raise TokenizerJsonError(
            f"{path}: model type {model_type!r}; the worker serves BPE tokenizers only "
            "(GENA-LM and DNABERT-2 ship BPE)")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not vocab:
        raise TokenizerJsonError(f"{path}: model.vocab is missing or empty")
    vocab = {str(k): int(v) for k, v in vocab.items()}
    special: Dict[str, int] = {}
    for token in doc.get("added_tokens") or []:
        content, token_id = token.get("content"), token.get("id")
        if not isinstance(content, str) or not isinstance(token_id, int):
            raise TokenizerJsonError(f"{path}: malformed added token {token!r}")
        vocab.setdefault(content, token_id)
        if token.get("special"):
            special[content] = token_id
    facts = TokenizerFacts(model_type=model_type, vocab=vocab, max_id=max(vocab.values()),
                           special_tokens=special)
    processor = doc.get("post_processor")
    if processor is not None:
        facts.prefix_ids, facts.suffix_ids = _template_specials(processor, vocab)
    unk = model.get("unk_token")
    if unk is not None:
        facts.unk_id = vocab.get(unk)
    padding = doc.get("padding")
    if isinstance(padding, dict) and isinstance(padding.get("pad_id"), int):
        facts.pad_id = padding["pad_id"]
    elif "[PAD]" in vocab:
        facts.pad_id = vocab["[PAD]"]
    elif "<pad>" in vocab:
        facts.pad_id = vocab["<pad>"]
    return facts
