"""A BERT encoder with dnaserve task heads, loadable from Hugging Face BERT checkpoints.

The architecture is the one of Hugging Face's `BertModel` (absolute position embeddings,
post-LayerNorm blocks), plus the pre-LayerNorm variant of GENA-LM (config "pre_layer_norm": true:
`x + attn(ln(x))`, `x + ffn(ln(x))`, a final LayerNorm). The modules are written for
`torch.jit.script`, take only token ids (the worker sends nothing else) and return exactly the
tensors the worker's task runners expect (worker/README.md, "Model inputs and outputs per task"):

  sequence heads (promoter, enhancer, chromatin): ids [B, T] -> [B] (promoter) or [B, C]
  token heads (splice):                            ids [B, T] -> [B, T, C]

Special tokens and padding. The worker sends the DNA tokens of each window only (worker/README.md,
"Tokenizers": a package's model adds its own template, so output token t is input token t). The
module therefore wraps each row in the tokenizer's single-sequence template itself ([CLS] ... [SEP]
for BERT, read from tokenizer.json by the exporter), so the encoder sees exactly what a Hugging
Face tokenizer with add_special_tokens would have given it, and token heads drop the template's
rows again. Windows whose encodings differ in length arrive right-padded with the tokenizer's
padding id: the suffix goes right after each row's last real token, as Hugging Face would put it,
and padding is masked out of attention as Hugging Face's attention_mask would mask it. The worker
pads short windows with N bases, never with the padding id, so a batch of equally long encodings
has no padding and nothing is masked.

Windows longer than the model. BERT has max_position_embeddings positions, and a vocabulary
without merges for N turns every padding N into a token of its own, so a padded window can encode
to more tokens than fit. Sequence heads keep the first max_position_embeddings - template tokens
(Hugging Face's truncation=True, max_length=...): the worker's padding sits at the end, so that is
what goes. Token heads must return a row per token, so they encode the row in consecutive chunks
of that many tokens, each chunk wrapped in the template, and put the rows back in order.
"""

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

# hidden_act values of Hugging Face configs -> our activation codes.
ACTIVATIONS = {
    "gelu": "gelu",                    # exact (erf)
    "gelu_new": "gelu_tanh",           # tanh approximation
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
}

# Added to the attention scores of padded keys (Hugging Face uses torch.finfo(dtype).min).
_MASKED = float(torch.finfo(torch.float32).min)

# Output activations of the heads.
OUTPUT_ACTIVATIONS = ("softmax", "sigmoid", "none")


class ConfigError(Exception):
    """A config.json (or a weight set) the exporter cannot turn into this architecture."""


@dataclass
class BertSpec:
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    activation: str
    max_positions: int
    type_vocab_size: int
    layer_norm_eps: float
    pad_token_id: int
    pre_layer_norm: bool
    last_layer_norm: bool
    id2label: Dict[int, str] = field(default_factory=dict)
    problem_type: Optional[str] = None
    name_or_path: str = ""
    architectures: List[str] = field(default_factory=list)
    transformers_version: str = ""

    @staticmethod
    def from_config(config: dict) -> "BertSpec":
        """Validates a Hugging Face config.json; refuses what this architecture cannot run."""
        def need(key, kind=int):
            if key not in config:
                raise ConfigError(f"config.json: missing {key!r}")
            value = config[key]
            if kind is int and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ConfigError(f"config.json: {key!r} must be a positive integer")
            return value

        model_type = config.get("model_type", "bert")
        if model_type != "bert":
            raise ConfigError(f"config.json: model_type {model_type!r}; only BERT-family "
                              "checkpoints (model_type \"bert\") are supported")
        refusals = {
            "alibi_starting_size": "ALiBi attention and gated MLPs (the DNABERT-2/MosaicBERT "
                                   "architecture) are not supported",
            "sparse_config_cls": "sparse (DeepSpeed) attention is not supported; use a "
                                 "full-attention checkpoint",
        }
        for key, why in refusals.items():
            if config.get(key):
                raise ConfigError(f"config.json: {key!r} is set: {why}")
        if config.get("is_decoder") or config.get("add_cross_attention"):
            raise ConfigError("config.json: decoder / cross-attention BERTs are not supported")
        position_type = config.get("position_embedding_type", "absolute")
        if position_type != "absolute":
            raise ConfigError(f"config.json: position_embedding_type {position_type!r}; only "
                              "\"absolute\" is supported")
        hidden = need("hidden_size")
        heads = need("num_attention_heads")
        if hidden % heads:
            raise ConfigError(f"config.json: hidden_size {hidden} is not a multiple of "
                              f"num_attention_heads {heads}")
        if config.get("embedding_size", hidden) != hidden:
            raise ConfigError("config.json: embedding_size differs from hidden_size (factorised "
                              "embeddings are not supported)")
        act = config.get("hidden_act", "gelu")
        if act not in ACTIVATIONS:
            raise ConfigError(f"config.json: hidden_act {act!r} is not one of "
                              f"{', '.join(sorted(ACTIVATIONS))}")
        pre_ln = bool(config.get("pre_layer_norm", False))
        last_ln = bool(config.get("last_layer_norm", pre_ln))
        if last_ln and not pre_ln:
            raise ConfigError("config.json: last_layer_norm needs pre_layer_norm")
        id2label = {}
        for key, value in (config.get("id2label") or {}).items():
            try:
                id2label[int(key)] = str(value)
            except ValueError:
                raise ConfigError(f"config.json: id2label key {key!r} is not an integer") from None
        eps = config.get("layer_norm_eps", 1e-12)
        if not isinstance(eps, (int, float)) or eps <= 0:
            raise ConfigError("config.json: layer_norm_eps must be a positive number")
        pad = config.get("pad_token_id", 0)
        if pad is None:
            pad = 0
        return BertSpec(
            vocab_size=need("vocab_size"),
            hidden_size=hidden,
            num_layers=need("num_hidden_layers"),
            num_heads=heads,
            intermediate_size=need("intermediate_size"),
            activation=ACTIVATIONS[act],
            max_positions=need("max_position_embeddings"),
            type_vocab_size=int(config.get("type_vocab_size", 2)),
            layer_norm_eps=float(eps),
            pad_token_id=int(pad),
            pre_layer_norm=pre_ln,
            last_layer_norm=last_ln,
            id2label=id2label,
            problem_type=config.get("problem_type"),
            name_or_path=str(config.get("_name_or_path", "")),
            architectures=list(config.get("architectures") or []),
            transformers_version=str(config.get("transformers_version", "")),
        )


class Activation(nn.Module):
    kind: torch.jit.Final[str]

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "gelu":
            return F.gelu(x)
        if self.kind == "gelu_tanh":
            return F.gelu(x, approximate="tanh")
        if self.kind == "relu":
            return F.relu(x)
        return F.silu(x)


class SelfAttention(nn.Module):
    num_heads: torch.jit.Final[int]
    head_size: torch.jit.Final[int]

    def __init__(self, spec: BertSpec):
        super().__init__()
        h = spec.hidden_size
        self.num_heads = spec.num_heads
        self.head_size = h // spec.num_heads
        self.query = nn.Linear(h, h)
        self.key = nn.Linear(h, h)
        self.value = nn.Linear(h, h)
        self.output = nn.Linear(h, h)

    def forward(self, x: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
        b, t, h = x.size(0), x.size(1), x.size(2)
        q = self.query(x).view(b, t, self.num_heads, self.head_size).transpose(1, 2)
        k = self.key(x).view(b, t, self.num_heads, self.head_size).transpose(1, 2)
        v = self.value(x).view(b, t, self.num_heads, self.head_size).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        if bias is not None:
            scores = scores + bias
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.output(context.transpose(1, 2).reshape(b, t, h))


class PostNormLayer(nn.Module):
    """Original BERT block: x = LN(x + attn(x)); x = LN(x + ffn(x))."""

    def __init__(self, spec: BertSpec):
        super().__init__()
        self.attention = SelfAttention(spec)
        self.attention_norm = nn.LayerNorm(spec.hidden_size, eps=spec.layer_norm_eps)
        self.intermediate = nn.Linear(spec.hidden_size, spec.intermediate_size)
        self.act = Activation(spec.activation)
        self.ffn_output = nn.Linear(spec.intermediate_size, spec.hidden_size)
        self.ffn_norm = nn.LayerNorm(spec.hidden_size, eps=spec.layer_norm_eps)

    def forward(self, x: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
        x = self.attention_norm(x + self.attention(x, bias))
        return self.ffn_norm(x + self.ffn_output(self.act(self.intermediate(x))))


class PreNormLayer(nn.Module):
    """GENA-LM pre-LayerNorm block: x = x + attn(LN(x)); x = x + ffn(LN(x))."""

    def __init__(self, spec: BertSpec):
        super().__init__()
        self.pre_attention_norm = nn.LayerNorm(spec.hidden_size, eps=spec.layer_norm_eps)
        self.attention = SelfAttention(spec)
        self.pre_ffn_norm = nn.LayerNorm(spec.hidden_size, eps=spec.layer_norm_eps)
        self.intermediate = nn.Linear(spec.hidden_size, spec.intermediate_size)
        self.act = Activation(spec.activation)
        self.ffn_output = nn.Linear(spec.intermediate_size, spec.hidden_size)

    def forward(self, x: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
        x = x + self.attention(self.pre_attention_norm(x), bias)
        return x + self.ffn_output(self.act(self.intermediate(self.pre_ffn_norm(x))))


class BertEncoder(nn.Module):
    """ids [B, T] (wrapped in the template already) -> hidden states [B, T, H]."""

    pad_id: torch.jit.Final[int]
    max_positions: torch.jit.Final[int]
    final_norm_enabled: torch.jit.Final[bool]
    masked: torch.jit.Final[float]

    def __init__(self, spec: BertSpec):
        super().__init__()
        h = spec.hidden_size
        self.pad_id = spec.pad_token_id
        self.masked = _MASKED
        self.max_positions = spec.max_positions
        self.word_embeddings = nn.Embedding(spec.vocab_size, h)
        self.position_embeddings = nn.Embedding(spec.max_positions, h)
        self.token_type_embeddings = nn.Embedding(max(spec.type_vocab_size, 1), h)
        self.embedding_norm = nn.LayerNorm(h, eps=spec.layer_norm_eps)
        layer = PreNormLayer if spec.pre_layer_norm else PostNormLayer
        self.layers = nn.ModuleList([layer(spec) for _ in range(spec.num_layers)])
        self.final_norm_enabled = spec.last_layer_norm
        self.final_norm = nn.LayerNorm(h, eps=spec.layer_norm_eps)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.size(1)
        if t > self.max_positions:  # the task models cut or chunk rows before they get here
            raise RuntimeError("more tokens than the model's max_position_embeddings")
        positions = torch.arange(t, device=ids.device)
        x = (self.word_embeddings(ids) + self.position_embeddings(positions).unsqueeze(0) +
             self.token_type_embeddings.weight[0])
        x = self.embedding_norm(x)
        bias: Optional[torch.Tensor] = None
        padding = ids == self.pad_id
        if bool(padding.any()):
            # [B, 1, 1, T]: padded keys get the most negative float, as in Hugging Face BERT.
            bias = padding.to(x.dtype).mul(self.masked)[:, None, None, :]
        for layer in self.layers:
            x = layer(x, bias)
        if self.final_norm_enabled:
            x = self.final_norm(x)
        return x


class SpecialTokens(nn.Module):
    """Wraps each row of DNA token ids in the tokenizer's template (e.g. [CLS] ids [SEP])."""

    pad_id: torch.jit.Final[int]

    def __init__(self, prefix: List[int], suffix: List[int], pad_id: int):
        super().__init__()
        self.pad_id = pad_id
        self.register_buffer("prefix", torch.tensor(prefix, dtype=torch.long))
        self.register_buffer("suffix", torch.tensor(suffix, dtype=torch.long))

    def length(self) -> int:
        """Positions the template adds to a row."""
        return int(self.prefix.numel() + self.suffix.numel())

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        b, t = ids.size(0), ids.size(1)
        p, s = self.prefix.numel(), self.suffix.numel()
        out = torch.full((b, p + t + s), self.pad_id, dtype=ids.dtype, device=ids.device)
        if p > 0:
            out[:, :p] = self.prefix
        out[:, p:p + t] = ids
        if s > 0:
            # Real tokens come first in a row, padding after: the suffix follows the last real
            # token, where a Hugging Face tokenizer puts it.
            lengths = (ids != self.pad_id).sum(dim=1)
            columns = p + lengths.unsqueeze(1) + torch.arange(s, device=ids.device).unsqueeze(0)
            out.scatter_(1, columns, self.suffix.unsqueeze(0).expand(b, s))
        return out


class SequenceTaskModel(nn.Module):
    """BertForSequenceClassification for the worker: ids [B, T] -> [B] or [B, C].

    `select` >= 0 returns that column only ([B], the promoter probability); -1 returns all.
    """

    output_activation: torch.jit.Final[str]
    select: torch.jit.Final[int]
    max_tokens: torch.jit.Final[int]

    def __init__(self, spec: BertSpec, specials: SpecialTokens, num_labels: int,
                 output_activation: str, select: int):
        super().__init__()
        self.specials = specials
        self.max_tokens = spec.max_positions - specials.length()
        self.encoder = BertEncoder(spec)
        self.pooler = nn.Linear(spec.hidden_size, spec.hidden_size)
        self.classifier = nn.Linear(spec.hidden_size, num_labels)
        self.output_activation = output_activation
        self.select = select

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        # A window longer than the model is cut to its first max_tokens tokens, as a Hugging Face
        # tokenizer called with truncation=True, max_length=max_position_embeddings would cut it.
        # The worker pads windows at their end with N, so what goes first is padding.
        hidden = self.encoder(self.specials(ids[:, :self.max_tokens]))
        pooled = torch.tanh(self.pooler(hidden[:, 0]))
        logits = self.classifier(pooled)
        if self.output_activation == "softmax":
            logits = torch.softmax(logits, dim=-1)
        elif self.output_activation == "sigmoid":
            logits = torch.sigmoid(logits)
        if self.select >= 0:
            return logits[:, self.select]
        return logits


class TokenTaskModel(nn.Module):
    """BertForTokenClassification for the worker: ids [B, T] -> [B, T, C], row t for input token
    t (the template's positions are dropped; rows of padding carry no meaning)."""

    output_activation: torch.jit.Final[str]
    prefix_len: torch.jit.Final[int]
    max_tokens: torch.jit.Final[int]
    pad_id: torch.jit.Final[int]

    def __init__(self, spec: BertSpec, specials: SpecialTokens, num_labels: int,
                 output_activation: str):
        super().__init__()
        self.specials = specials
        self.prefix_len = int(specials.prefix.numel())
        self.max_tokens = spec.max_positions - specials.length()
        self.pad_id = spec.pad_token_id
        self.encoder = BertEncoder(spec)
        self.classifier = nn.Linear(spec.hidden_size, num_labels)
        self.output_activation = output_activation

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        b, t = ids.size(0), ids.size(1)
        n = (t + self.max_tokens - 1) // self.max_tokens
        if n <= 1:
            hidden = self.encoder(self.specials(ids))[:, self.prefix_len:self.prefix_len + t]
        else:
            # A window longer than the model: every token still needs its row, so the row is cut
            # into chunks of max_tokens, each wrapped in the template and encoded on its own (as
            # chunked Hugging Face inference would), and the chunks' rows are put back in order.
            width = n * self.max_tokens
            chunks = torch.full((b, width), self.pad_id, dtype=ids.dtype, device=ids.device)
            chunks[:, :t] = ids
            chunks = chunks.view(b * n, self.max_tokens)
            hidden = self.encoder(self.specials(chunks))
            hidden = hidden[:, self.prefix_len:self.prefix_len + self.max_tokens]
            hidden = hidden.reshape(b, width, hidden.size(2))[:, :t]
        logits = self.classifier(hidden)
        if self.output_activation == "softmax":
            return torch.softmax(logits, dim=-1)
        if self.output_activation == "sigmoid":
            return torch.sigmoid(logits)
        return logits


# --- Hugging Face parameter names -> ours ----------------------------------------------------

_EMBEDDINGS = {
    "embeddings.word_embeddings.weight": "encoder.word_embeddings.weight",
    "embeddings.position_embeddings.weight": "encoder.position_embeddings.weight",
    "embeddings.token_type_embeddings.weight": "encoder.token_type_embeddings.weight",
    "embeddings.LayerNorm.weight": "encoder.embedding_norm.weight",
    "embeddings.LayerNorm.bias": "encoder.embedding_norm.bias",
}
_LAYER_COMMON = {
    "attention.self.query": "attention.query",
    "attention.self.key": "attention.key",
    "attention.self.value": "attention.value",
    "attention.output.dense": "attention.output",
    "intermediate.dense": "intermediate",
    "output.dense": "ffn_output",
}
_LAYER_POST_NORM = {
    "attention.output.LayerNorm": "attention_norm",
    "output.LayerNorm": "ffn_norm",
}
_LAYER_PRE_NORM = {
    "pre_attention_ln": "pre_attention_norm",
    "post_attention_ln": "pre_ffn_norm",
}
# Present in many checkpoints, never needed to serve a task head.
_IGNORABLE_PREFIXES = ("cls.", "embeddings.position_ids", "embeddings.token_type_ids")


def hf_name_map(spec: BertSpec, head: str) -> Dict[str, str]:
    """Every Hugging Face name (without the "bert." prefix; heads keep theirs) the model needs,
    mapped to its name in SequenceTaskModel / TokenTaskModel."""
    names = dict(_EMBEDDINGS)
    per_layer = dict(_LAYER_COMMON)
    per_layer.update(_LAYER_PRE_NORM if spec.pre_layer_norm else _LAYER_POST_NORM)
    for i in range(spec.num_layers):
        for hf, ours in per_layer.items():
            for p in ("weight", "bias"):
                names[f"encoder.layer.{i}.{hf}.{p}"] = f"encoder.layers.{i}.{ours}.{p}"
    if spec.last_layer_norm:
        for p in ("weight", "bias"):
            names[f"encoder.last_layer_ln.{p}"] = f"encoder.final_norm.{p}"
    if head == "sequence":
        for p in ("weight", "bias"):
            names[f"pooler.dense.{p}"] = f"pooler.{p}"
    for p in ("weight", "bias"):
        names[f"classifier.{p}"] = f"classifier.{p}"
    return names


def _strip_prefix(name: str) -> str:
    return name[len("bert."):] if name.startswith("bert.") else name


def map_state_dict(spec: BertSpec, head: str, hf_state: Dict[str, torch.Tensor],
                   model: nn.Module) -> Tuple[Dict[str, torch.Tensor], List[str]]:
    """HF tensors -> a complete state_dict for `model`, checking every name and shape.

    Returns the mapped state and the names that were ignored (MLM head, buffers, an unused
    pooler). Unknown names are an error: they mean an architecture this module does not run.
    """
    wanted = hf_name_map(spec, head)
    stripped: Dict[str, Tuple[str, torch.Tensor]] = {}
    for name, tensor in hf_state.items():
        key = _strip_prefix(name)
        if key in stripped:
            raise ConfigError(f"weights: {name!r} appears twice (with and without 'bert.')")
        stripped[key] = (name, tensor)
    missing = sorted(k for k in wanted if k not in stripped)
    if missing:
        hint = ""
        if any(k.startswith("classifier.") for k in missing):
            hint = (" (the checkpoint has no task head: export a checkpoint fine-tuned with "
                    "BertForSequenceClassification or BertForTokenClassification)")
        raise ConfigError("weights: missing " + ", ".join(missing[:6]) +
                          (f" and {len(missing) - 6} more" if len(missing) > 6 else "") + hint)
    ignored, unknown = [], []
    for key, (name, _) in stripped.items():
        if key in wanted:
            continue
        if key.startswith(_IGNORABLE_PREFIXES) or (head == "token" and key.startswith("pooler.")):
            ignored.append(name)
        else:
            unknown.append(name)
    if unknown:
        raise ConfigError("weights: unexpected tensors " + ", ".join(sorted(unknown)[:6]) +
                          " (an architecture this exporter does not support)")
    own = model.state_dict()
    mapped: Dict[str, torch.Tensor] = {}
    for key, ours in wanted.items():
        name, tensor = stripped[key]
        if ours not in own:
            raise AssertionError(f"internal: no parameter {ours}")
        if tuple(tensor.shape) != tuple(own[ours].shape):
            raise ConfigError(f"weights: {name} has shape {list(tensor.shape)}, config.json "
                              f"implies {list(own[ours].shape)}")
        mapped[ours] = tensor
    for name in own:  # buffers that are ours, not the checkpoint's
        if name not in mapped:
            mapped[name] = own[name]
    return mapped, sorted(ignored)
