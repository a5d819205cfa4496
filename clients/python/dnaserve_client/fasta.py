"""Multi-FASTA reading (plain or gzip/bgzip, told apart by the magic bytes, not the name)."""

import gzip
import io
from dataclasses import dataclass
from typing import IO, Iterator, List

NAME_LIMIT = 128  # the contract's sequence_name bound


@dataclass
class FastaRecord:
    name: str         # the header's first word: sent as sequence_name
    description: str  # the rest of the header
    sequence: str


def _open_text(path: str) -> IO[str]:
    if path == "-":
        import sys
        raw = sys.stdin.buffer.read()
        stream = io.BytesIO(raw)
    else:
        stream = open(path, "rb")
    magic = stream.read(2)
    stream.seek(0)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.GzipFile(fileobj=stream), encoding="ascii", errors="replace")
    return io.TextIOWrapper(stream, encoding="ascii", errors="replace")


def read_fasta(path: str) -> Iterator[FastaRecord]:
    """Yields the records of a FASTA file; raises ValueError on text before the first header,
    an empty header or a record without bases."""
    name, description, chunks = None, "", []  # type: ignore[var-annotated]
    with _open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            line = line.rstrip("\r\n")
            if line.startswith(">"):
                if name is not None:
                    yield _finish(path, name, description, chunks)
                header = line[1:].strip()
                if not header:
                    raise ValueError(f"{path}:{number}: a FASTA header without a name")
                parts = header.split(None, 1)
                name, description, chunks = parts[0], parts[1] if len(parts) > 1 else "", []
            elif line.startswith(";") or not line.strip():
                continue
            elif name is None:
                raise ValueError(f"{path}:{number}: sequence before the first '>' header "
                                 "(is this a FASTA file?)")
            else:
                chunks.append(line.strip())
    if name is None:
        raise ValueError(f"{path}: no FASTA records")
    yield _finish(path, name, description, chunks)


def _finish(path: str, name: str, description: str, chunks: List[str]) -> FastaRecord:
    sequence = "".join(chunks)
    if not sequence:
        raise ValueError(f"{path}: record {name!r} has no bases")
    if len(name) > NAME_LIMIT:
        raise ValueError(f"{path}: record name {name[:40]!r}... is longer than {NAME_LIMIT} "
                         "characters (the service's sequence_name limit)")
    return FastaRecord(name=name, description=description, sequence=sequence)
