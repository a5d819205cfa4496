"""Merging the text tracks of many records into one valid file.

Each record's track already names its rows by the record's sequence_name. What must not repeat
is the header: one `##gff-version 3` (with every `##sequence-region` before any feature, as
validators want), one `track` line per bedGraph track name. GFF3 `ID`s must be unique in a file,
so a record whose IDs another record already used gets its IDs (and the `Parent`/`Derives_from`
references to them) prefixed with its sequence name.
"""

from typing import Dict, List, Sequence
from urllib.parse import quote


def merge(format: str, texts: Sequence[str]) -> str:
    if format == "bed":
        return merge_bed(texts)
    if format == "bedgraph":
        return merge_bedgraph(texts)
    if format == "gff3":
        return merge_gff3(texts)
    raise ValueError(f"no merge rule for {format}")


def merge_bed(texts: Sequence[str]) -> str:
    header: List[str] = []
    rows: List[str] = []
    for text in texts:
        for line in text.splitlines():
            if not line.strip():
                continue
            if line.startswith(("track", "browser", "#")):
                if not header:
                    header.append(line)
                continue
            rows.append(line)
    return "".join(line + "\n" for line in header + rows)


def merge_bedgraph(texts: Sequence[str]) -> str:
    order: List[str] = []
    tracks: Dict[str, List[str]] = {}
    for text in texts:
        current = None
        for line in text.splitlines():
            if not line.strip() or line.startswith(("browser", "#")):
                continue
            if line.startswith("track"):
                current = line
                if current not in tracks:
                    order.append(current)
                    tracks[current] = []
                continue
            if current is None:
                current = "track type=bedGraph"
                order.append(current)
                tracks.setdefault(current, [])
            tracks[current].append(line)
    out = []
    for track in order:
        out.append(track)
        out.extend(tracks[track])
    return "".join(line + "\n" for line in out)


_ID_ATTRIBUTES = ("ID", "Parent", "Derives_from")


def merge_gff3(texts: Sequence[str]) -> str:
    directives: List[str] = []
    features: List[str] = []
    used_ids: set = set()
    for text in texts:
        lines = text.splitlines()
        own_ids = set()
        for line in lines:
            if line and not line.startswith("#"):
                own_ids.update(_attribute_values(line, "ID"))
        prefix = ""
        if own_ids & used_ids:
            seqid = next((l.split("\t", 1)[0] for l in lines if l and not l.startswith("#")), "r")
            prefix = seqid + "."
        used_ids.update(prefix + i for i in own_ids)
        record_features: List[str] = []
        for line in lines:
            if not line.strip():
                continue
            if line.startswith("##gff-version"):
                continue
            if line.startswith("##FASTA"):
                break  # sequences are not carried into the merged file
            if line.startswith("##sequence-region") or line.startswith("##species"):
                if line not in directives:
                    directives.append(line)
                continue
            if line.startswith("#"):
                if line != "###":
                    record_features.append(line)
                continue
            record_features.append(_prefix_ids(line, prefix) if prefix else line)
        if record_features:
            features.extend(record_features)
            features.append("###")  # no forward references across records
    return "".join(line + "\n" for line in ["##gff-version 3"] + directives + features)


def _attribute_values(line: str, key: str) -> List[str]:
    columns = line.split("\t")
    if len(columns) < 9:
        return []
    for attribute in columns[8].split(";"):
        name, _, value = attribute.partition("=")
        if name == key:
            return value.split(",")
    return []


def _prefix_ids(line: str, prefix: str) -> str:
    columns = line.split("\t")
    if len(columns) < 9:
        return line
    escaped = quote(prefix, safe=":|.-_ ")
    attributes = []
    for attribute in columns[8].split(";"):
        name, sep, value = attribute.partition("=")
        if sep and name in _ID_ATTRIBUTES:
            value = ",".join(escaped + v for v in value.split(","))
        attributes.append(name + sep + value)
    columns[8] = ";".join(attributes)
    return "\t".join(columns)
