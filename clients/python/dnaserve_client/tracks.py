"""Merging the text tracks of many records into one valid file, and placing records on their
contigs.

Each record's track names its rows by the record's sequence_name, in coordinates relative to
the record. `place` moves one record's track onto its contig (`Placement`: the record is bases
start..end of chrom, 1-based inclusive), so that records cut from one chromosome land side by
side on it. `merge` then joins the records' tracks. What must not repeat is the header: one
`##gff-version 3` with one `##sequence-region` per sequence id spanning every record written on
it (all before any feature, as validators want), one `track` line per bedGraph track name. GFF3
`ID`s must be unique in a file, so a record whose IDs another record already used gets its IDs
(and the `Parent`/`Derives_from` references to them) prefixed with the record's name.
"""

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple
from urllib.parse import quote


@dataclass(frozen=True)
class Placement:
    """Where a record lies: bases `start`..`end` (1-based, inclusive) of `chrom`."""

    chrom: str
    start: int
    end: int

    @property
    def offset(self) -> int:
        """What is added to a record-relative coordinate (0-based or 1-based alike)."""
        return self.start - 1

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    @property
    def label(self) -> str:
        """The UCSC form the service's shift_coordinates reads: chrom:start-end."""
        return f"{self.chrom}:{self.start}-{self.end}"


# chrom:start-end (UCSC; commas allowed in the numbers, as the service accepts), or
# chrom_start-end: the viewer's form of the same label (igv reads a colon as a locus).
_NUMBER = r"[0-9][0-9,]*"
_REGION = re.compile(r"^(?P<chrom>[^\s]+?)(?P<sep>[:_])(?P<start>" + _NUMBER + r")-(?P<end>" +
                     _NUMBER + r")$")


def parse_region(label: str) -> Optional[Placement]:
    """The Placement a region label names, or None when `label` is not one."""
    match = _REGION.match(label.strip())
    if not match:
        return None
    chrom = match.group("chrom")
    try:
        start = int(match.group("start").replace(",", ""))
        end = int(match.group("end").replace(",", ""))
    except ValueError:
        return None
    if start < 1 or end < start or not chrom:
        return None
    return Placement(chrom, start, end)


def place(format: str, text: str, placement: Placement) -> str:
    """One record's track moved onto its contig: every row's sequence id becomes the contig and
    every coordinate is shifted by the record's offset (BED columns 2-3 and, for BED12, the
    thick span 7-8; bedGraph 2-3; GFF3 columns 4-5 and the record's `##sequence-region`).
    Header lines and attributes are kept as they are."""
    if format in ("bed", "bedgraph"):
        return _place_bed(text, placement, bed12=format == "bed")
    if format == "gff3":
        return _place_gff3(text, placement)
    raise ValueError(f"no placement rule for {format}")


def _place_bed(text: str, placement: Placement, bed12: bool) -> str:
    offset = placement.offset
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith(("track", "browser", "#")):
            out.append(line)
            continue
        columns = line.split("\t")
        columns[0] = placement.chrom
        shifted = (1, 2, 6, 7) if bed12 and len(columns) >= 8 else (1, 2)
        for i in shifted:
            columns[i] = str(int(columns[i]) + offset)
        out.append("\t".join(columns))
    return "".join(line + "\n" for line in out)


def _place_gff3(text: str, placement: Placement) -> str:
    offset = placement.offset
    seqid = gff3_seqid(placement.chrom)
    out = []
    for line in text.splitlines():
        if line.startswith("##sequence-region"):
            parts = line.split()
            if len(parts) == 4:
                line = f"##sequence-region {seqid} {int(parts[2]) + offset} {int(parts[3]) + offset}"
        elif line.startswith("##FASTA"):
            break
        elif line and not line.startswith("#"):
            columns = line.split("\t")
            if len(columns) >= 5:
                columns[0] = seqid
                columns[3] = str(int(columns[3]) + offset)
                columns[4] = str(int(columns[4]) + offset)
            line = "\t".join(columns)
        out.append(line)
    return "".join(line + "\n" for line in out)


def mark_cut_transcripts(text: str) -> str:
    """One record's annotation GFF3 with its genes and transcripts that run into an end of the
    record marked, as NCBI's GFF3 does: `partial=true`, with `start_range=.,<start>` when cut
    at the record's first base and `end_range=<end>,.` at its last. Such a model is not a whole
    gene: its TSS (or poly(A) site) lies outside what was scored. The record's extent is its
    `##sequence-region` (in the same coordinates as its features, shifted or not)."""
    extents: Dict[str, Tuple[int, int]] = {}
    out = []
    for line in text.splitlines():
        if line.startswith("##sequence-region"):
            parts = line.split()
            if len(parts) == 4:
                extents[parts[1]] = (int(parts[2]), int(parts[3]))
        elif line and not line.startswith("#"):
            line = _mark_if_cut(line, extents)
        out.append(line)
    return "".join(line + "\n" for line in out)


def _mark_if_cut(line: str, extents: Dict[str, Tuple[int, int]]) -> str:
    columns = line.split("\t")
    if len(columns) < 9 or columns[0] not in extents:
        return line
    is_model = columns[2] == "gene" or bool(_attribute_values(line, "tss_position"))
    if not is_model:
        return line
    first, last = extents[columns[0]]
    added = []
    if int(columns[3]) <= first:
        added.append(f"start_range=.,{columns[3]}")
    if int(columns[4]) >= last:
        added.append(f"end_range={columns[4]},.")
    if not added:
        return line
    attributes = "" if columns[8] == "." else columns[8] + ";"
    columns[8] = attributes + ";".join(added + ["partial=true"])
    return "\t".join(columns)


def gff3_seqid(name: str) -> str:
    """A sequence id as GFF3 column 1 allows it: the service's escaping (letters, digits and
    .:^*$@!+_?|- kept, everything else percent-encoded)."""
    return quote(name, safe=".:^*$@!+_?|-")


def merge(format: str, texts: Sequence[str], names: Optional[Sequence[str]] = None) -> str:
    """One file from many records' tracks, in order. `names` (the records' names, one per
    text) prefix a record's GFF3 IDs when an earlier record used them; without names the
    record's first sequence id is used."""
    if format == "bed":
        return merge_bed(texts)
    if format == "bedgraph":
        return merge_bedgraph(texts)
    if format == "gff3":
        return merge_gff3(texts, names)
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


def merge_gff3(texts: Sequence[str], names: Optional[Sequence[str]] = None) -> str:
    regions: Dict[str, Tuple[int, int]] = {}  # seqid -> (first, last) base written, in order
    other_directives: List[str] = []
    features: List[str] = []
    used_ids: set = set()
    for number, text in enumerate(texts):
        lines = text.splitlines()
        own_ids = set()
        for line in lines:
            if line and not line.startswith("#"):
                own_ids.update(_attribute_values(line, "ID"))
        prefix = ""
        if own_ids & used_ids:
            name = names[number] if names is not None else next(
                (l.split("\t", 1)[0] for l in lines if l and not l.startswith("#")), "r")
            prefix = name + "."
        used_ids.update(prefix + i for i in own_ids)
        record_features: List[str] = []
        for line in lines:
            if not line.strip():
                continue
            if line.startswith("##gff-version"):
                continue
            if line.startswith("##FASTA"):
                break  # sequences are not carried into the merged file
            if line.startswith("##sequence-region"):
                _widen_region(regions, line)
                continue
            if line.startswith("##species"):
                if line not in other_directives:
                    other_directives.append(line)
                continue
            if line.startswith("#"):
                if line != "###":
                    record_features.append(line)
                continue
            record_features.append(_prefix_ids(line, prefix) if prefix else line)
        if record_features:
            features.extend(record_features)
            features.append("###")  # no forward references across records
    directives = [f"##sequence-region {seqid} {first} {last}"
                  for seqid, (first, last) in regions.items()]
    return "".join(line + "\n" for line in ["##gff-version 3"] + directives + other_directives +
                   features)


def _widen_region(regions: Dict[str, Tuple[int, int]], line: str) -> None:
    """One `##sequence-region` per sequence id: records placed on one contig widen its span
    (GFF3 allows a sequence id's region to be declared once)."""
    parts = line.split()
    if len(parts) != 4:
        return
    seqid = parts[1]
    try:
        first, last = int(parts[2]), int(parts[3])
    except ValueError:
        return
    if seqid in regions:
        known = regions[seqid]
        first, last = min(first, known[0]), max(last, known[1])
    regions[seqid] = (first, last)


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
