"""Reads the weights of a Hugging Face checkpoint directory into a {name: tensor} dict.

Supported layouts, tried in this order:
  model.safetensors                       one safetensors file
  model.safetensors.index.json            sharded safetensors ({"weight_map": {name: file}})
  pytorch_model.bin                       one torch.save'd state_dict
  pytorch_model.bin.index.json            sharded state_dicts

Debian ships no `safetensors` package, so this module reads the format itself. A safetensors file
is: an unsigned 64-bit little-endian header length N, N bytes of JSON
({name: {"dtype", "shape", "data_offsets": [begin, end]}, optional "__metadata__"}), then one
byte buffer holding every tensor (row-major, little-endian) at its offsets.
"""

import json
import os
import struct
from typing import Dict, List, Tuple

import torch

# Safetensors dtype names -> (torch dtype, bytes per element).
_SAFETENSORS_DTYPES = {
    "F64": (torch.float64, 8),
    "F32": (torch.float32, 4),
    "F16": (torch.float16, 2),
    "BF16": (torch.bfloat16, 2),
    "I64": (torch.int64, 8),
    "I32": (torch.int32, 4),
    "I16": (torch.int16, 2),
    "I8": (torch.int8, 1),
    "U8": (torch.uint8, 1),
    "BOOL": (torch.bool, 1),
}
# A header larger than this is not a checkpoint we can serve (and protects against a garbage
# length field allocating gigabytes).
_MAX_HEADER_BYTES = 100 * 1024 * 1024


class CheckpointError(Exception):
    """A checkpoint that cannot be read; the message says which file and why."""


def read_safetensors(path: str) -> Dict[str, torch.Tensor]:
    """All tensors of one .safetensors file, as CPU tensors that own their memory."""
    with open(path, "rb") as handle:
        data = handle.read()
    name = os.path.basename(path)
    if len(data) < 8:
        raise CheckpointError(f"{name}: too short to be a safetensors file")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len == 0 or header_len > _MAX_HEADER_BYTES or 8 + header_len > len(data):
        raise CheckpointError(f"{name}: header length {header_len} does not fit the file "
                              f"({len(data)} bytes)")
    try:
        header = json.loads(data[8:8 + header_len].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{name}: header is not JSON ({error})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{name}: header is not a JSON object")
    buffer = memoryview(data)[8 + header_len:]
    tensors: Dict[str, torch.Tensor] = {}
    spans: List[Tuple[int, int, str]] = []
    for key, info in header.items():
        if key == "__metadata__":
            continue
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise CheckpointError(f"{name}: entry {key!r} must have exactly dtype, shape and "
                                  "data_offsets")
        dtype_name, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if dtype_name not in _SAFETENSORS_DTYPES:
            raise CheckpointError(f"{name}: tensor {key!r} has unsupported dtype {dtype_name!r}")
        if (not isinstance(shape, list) or
                not all(isinstance(d, int) and d >= 0 for d in shape)):
            raise CheckpointError(f"{name}: tensor {key!r} has a malformed shape {shape!r}")
        if (not isinstance(offsets, list) or len(offsets) != 2 or
                not all(isinstance(o, int) for o in offsets) or
                not 0 <= offsets[0] <= offsets[1] <= len(buffer)):
            raise CheckpointError(f"{name}: tensor {key!r} has data_offsets {offsets!r} outside "
                                  f"the {len(buffer)}-byte data buffer")
        dtype, width = _SAFETENSORS_DTYPES[dtype_name]
        count = 1
        for d in shape:
            count *= d
        if offsets[1] - offsets[0] != count * width:
            raise CheckpointError(f"{name}: tensor {key!r} of shape {shape} and dtype "
                                  f"{dtype_name} needs {count * width} bytes, its offsets give "
                                  f"{offsets[1] - offsets[0]}")
        spans.append((offsets[0], offsets[1], key))
        raw = bytearray(buffer[offsets[0]:offsets[1]])  # a private copy the tensor can own
        if count == 0:
            tensors[key] = torch.empty(shape, dtype=dtype)
        else:
            tensors[key] = torch.frombuffer(raw, dtype=dtype).reshape(shape)
    spans.sort()
    for (_, end_a, key_a), (begin_b, _, key_b) in zip(spans, spans[1:]):
        if begin_b < end_a:
            raise CheckpointError(f"{name}: tensors {key_a!r} and {key_b!r} overlap")
    return tensors


def _read_torch_bin(path: str) -> Dict[str, torch.Tensor]:
    try:
        # weights_only refuses arbitrary pickled objects: a state_dict holds only tensors.
        state = torch.load(path, map_location="cpu", weights_only=True)
    except TypeError:  # a torch without weights_only
        state = torch.load(path, map_location="cpu")
    except Exception as error:  # torch raises many types for a corrupt archive
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise CheckpointError(f"{os.path.basename(path)}: cannot be read by torch.load "
                              f"({reason})") from None
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"{os.path.basename(path)}: is not a state_dict of tensors")
    return dict(state)


def _read_sharded(directory: str, index_name: str, reader) -> Dict[str, torch.Tensor]:
    with open(os.path.join(directory, index_name), encoding="utf-8") as handle:
        try:
            index = json.load(handle)
        except json.JSONDecodeError as error:
            raise CheckpointError(f"{index_name}: not JSON ({error})") from None
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(f"{index_name}: has no weight_map")
    tensors: Dict[str, torch.Tensor] = {}
    for shard in sorted(set(weight_map.values())):
        if os.path.basename(shard) != shard:
            raise CheckpointError(f"{index_name}: shard {shard!r} is not a plain file name")
        path = os.path.join(directory, shard)
        if not os.path.exists(path):
            raise CheckpointError(f"{index_name}: shard {shard} is missing")
        tensors.update(reader(path))
    missing = sorted(set(weight_map) - set(tensors))
    if missing:
        raise CheckpointError(f"{index_name}: tensors listed but not found in the shards: "
                              f"{', '.join(missing[:5])}")
    return tensors


def load_state_dict(directory: str) -> Tuple[Dict[str, torch.Tensor], List[str]]:
    """The checkpoint's tensors (converted to float32 where floating) and the files read."""
    candidates = [
        ("model.safetensors", read_safetensors, False),
        ("model.safetensors.index.json", read_safetensors, True),
        ("pytorch_model.bin", _read_torch_bin, False),
        ("pytorch_model.bin.index.json", _read_torch_bin, True),
    ]
    for file_name, reader, sharded in candidates:
        path = os.path.join(directory, file_name)
        if not os.path.exists(path):
            continue
        if sharded:
            tensors = _read_sharded(directory, file_name, reader)
        else:
            tensors = reader(path)
        converted = {k: (v.float() if v.is_floating_point() else v) for k, v in tensors.items()}
        return converted, [file_name]
    raise CheckpointError(f"{directory}: no weights found (looked for model.safetensors, "
                          "pytorch_model.bin and their sharded .index.json forms)")
