"""Roadmap RNA-seq on chr20 genes: TSS windows, targets and free-text descriptions.

- **Genes.** `roadmap_57epigenomes.RPKM.pc.gz` names protein-coding genes by Ensembl gene id. A
  gene is placed on chr20 through its APPRIS principal isoforms (`hg19_appris_principal.txt`,
  Ensembl transcript ids, best tag first: PRINCIPAL:1 < PRINCIPAL:2 < ... < ALTERNATIVE:*) mapped
  to RefSeq by `ensembl_to_refseq.one2one.tsv` and found in hg19 refGene on chr20; among equal
  tags the lowest NM_ accession wins. A gene with no such mapping falls back to its APPRIS symbol
  among the chr20 refGene NM_ transcripts (lowest accession). Its TSS is that transcript's 5' end.
- **Window.** The expression task's window: 9,198 bp of the sense strand with the TSS base at
  index 4,599, i.e. plus[tss-4599, tss+4599) for '+' genes and the reverse complement of
  plus[tss-4598, tss+4600) for '-' genes (runner/workflows/tss_window.h).
- **Target.** ln(TPM + 1). Within each epigenome (column) TPM = RPKM / (sum of RPKM over all
  19,795 genes of the file) x 10^6: RPKM and TPM differ by a per-sample factor only (gene length
  cancels), so this is exact for the genes the file lists.
- **Descriptions.** The 56 epigenomes of the Roadmap summary table with RNA-seq (E000 has no row
  there and is left out). Each training example draws one of several wordings built from the
  standardized name, the EDACC name, the anatomy and the sample type; `canonical_description` is
  the fixed wording used for evaluation, `unseen_description` one no training example uses.
"""

import collections
import csv
import gzip
import math
import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from training import common

HALF_WINDOW = 4599
WINDOW_BP = 2 * HALF_WINDOW  # 9,198
EXPRESSION_DIR = os.path.join(common.SHARED_DATA, "expression")
ANNOTATION_DIR = os.path.join(common.SHARED_DATA, "annotation")
RPKM = os.path.join(EXPRESSION_DIR, "roadmap_57epigenomes.RPKM.pc.gz")
SUMMARY = os.path.join(EXPRESSION_DIR, "roadmap_epigenome_summary.tsv")
APPRIS = os.path.join(ANNOTATION_DIR, "hg19_appris_principal.txt")
ENSEMBL_TO_REFSEQ = os.path.join(ANNOTATION_DIR, "ensembl_to_refseq.one2one.tsv")


@dataclass
class Epigenome:
    eid: str
    name: str       # standardized epigenome name, e.g. "Liver"
    edacc: str      # EDACC release name, e.g. "Adult_Liver"
    anatomy: str    # e.g. "LIVER", "GI_INTESTINE"
    kind: str       # PrimaryTissue, PrimaryCell, PrimaryCulture, CellLine, ESCDerived
    sex: str


@dataclass
class Gene:
    ensembl: str
    symbol: str
    transcript: str  # the refGene accession whose 5' end is the TSS
    strand: str
    tss: int         # 0-based chr20 coordinate of the first transcribed base
    how: str         # "appris" or "symbol"

    def window_span(self) -> Tuple[int, int]:
        """The plus-strand bases [start, end) of the TSS window."""
        start = self.tss - HALF_WINDOW if self.strand == "+" else self.tss - (HALF_WINDOW - 1)
        return start, start + WINDOW_BP


def read_epigenomes(path: str = SUMMARY) -> Dict[str, Epigenome]:
    out = {}
    with open(common.require_shared(path), encoding="utf-8") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    header = rows[0]
    col = {name: header.index(name) for name in (
        "Epigenome ID (EID)", "Standardized Epigenome name",
        "Epigenome name (from EDACC Release 9 directory)", "ANATOMY", "TYPE")}
    sex_col = next(i for i, name in enumerate(header) if name.startswith("SEX"))
    for row in rows[1:]:
        if len(row) <= sex_col or not re.fullmatch(r"E\d{3}", row[col["Epigenome ID (EID)"]]):
            continue
        eid = row[col["Epigenome ID (EID)"]]
        out[eid] = Epigenome(eid=eid, name=" ".join(row[col["Standardized Epigenome name"]].split()),
                             edacc=row[col["Epigenome name (from EDACC Release 9 directory)"]],
                             anatomy=row[col["ANATOMY"]], kind=row[col["TYPE"]],
                             sex=row[sex_col])
    return out


def read_rpkm(path: str = RPKM) -> Tuple[List[str], List[str], np.ndarray]:
    """(epigenome ids, Ensembl gene ids, RPKM [genes, epigenomes] float64)."""
    genes, rows = [], []
    with gzip.open(common.require_shared(path), "rt", encoding="ascii") as handle:
        columns = handle.readline().split()[1:]
        for line in handle:
            fields = line.split()
            genes.append(fields[0])
            rows.append([float(x) for x in fields[1:]])
    return columns, genes, np.array(rows, dtype=np.float64)


def log_tpm(rpkm: np.ndarray) -> np.ndarray:
    """ln(TPM + 1) per column, TPM = RPKM / column sum x 1e6."""
    totals = rpkm.sum(axis=0, keepdims=True)
    return np.log1p(rpkm / totals * 1e6)


def _tag_rank(tag: str) -> Tuple[int, int]:
    kind, _, level = tag.partition(":")
    return (0 if kind == "PRINCIPAL" else 1, int(level) if level.isdigit() else 9)


def _accession_key(name: str) -> Tuple[str, int]:
    prefix, _, number = name.partition("_")
    return prefix, int(number) if number.isdigit() else 0


def map_genes(ensembl_ids: Sequence[str], transcripts: Sequence[common.Transcript],
              appris_path: str = APPRIS,
              e2r_path: str = ENSEMBL_TO_REFSEQ) -> List[Gene]:
    """The chr20 genes of `ensembl_ids` with their TSS (rules in the module docstring)."""
    by_name = {t.name: t for t in transcripts if t.name.startswith("NM_")}
    by_symbol = collections.defaultdict(list)
    for t in transcripts:
        if t.name.startswith("NM_"):
            by_symbol[t.gene].append(t)
    appris = collections.defaultdict(list)
    with open(common.require_shared(appris_path), encoding="utf-8") as handle:
        for line in handle:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 5:
                appris[fields[1]].append(fields)
    to_refseq = collections.defaultdict(list)
    with open(common.require_shared(e2r_path), encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) == 2:
                to_refseq[fields[0]].append(fields[1])
    genes = []
    for ensembl in ensembl_ids:
        rows = appris.get(ensembl, [])
        candidates = sorted(((_tag_rank(f[4]), _accession_key(nm), nm)
                             for f in rows for nm in to_refseq.get(f[2], []) if nm in by_name))
        how = "appris"
        if candidates:
            chosen = by_name[candidates[0][2]]
        else:
            symbols = sorted({f[0] for f in rows})
            pool = sorted((t for s in symbols for t in by_symbol.get(s, [])),
                          key=lambda t: _accession_key(t.name))
            if not pool:
                continue
            chosen, how = pool[0], "symbol"
        genes.append(Gene(ensembl=ensembl, symbol=chosen.gene, transcript=chosen.name,
                          strand=chosen.strand, tss=chosen.tss, how=how))
    return genes


def window_sequence(chr20: str, gene: Gene, shift: int = 0) -> str:
    """The gene's 9,198 bp sense-strand window (shifted by `shift` bp downstream)."""
    start, end = gene.window_span()
    offset = shift if gene.strand == "+" else -shift
    start, end = start + offset, end + offset
    piece = chr20[max(0, start):min(len(chr20), end)]
    piece = "N" * max(0, -start) + piece + "N" * max(0, end - len(chr20))
    return piece if gene.strand == "+" else common.reverse_complement(piece)


# --- descriptions --------------------------------------------------------------------------

KIND_WORDS = {
    "PrimaryTissue": ["tissue", "primary tissue", "tissue sample"],
    "PrimaryCell": ["primary cells", "cells", "sorted primary cells"],
    "PrimaryCulture": ["cultured cells", "primary culture", "cells in culture"],
    "CellLine": ["cell line", "cultured cell line"],
    "ESCDerived": ["ESC-derived cells", "differentiated stem cells"],
}


def anatomy_words(anatomy: str) -> str:
    return anatomy.replace("GI_", "").replace("_", " ").lower()


def training_descriptions(e: Epigenome) -> List[str]:
    """The wordings a training example may draw for epigenome `e`."""
    anatomy = anatomy_words(e.anatomy)
    edacc = e.edacc.replace("_", " ")
    out = [e.name, e.name.lower(), edacc, f"{e.name} ({anatomy})",
           f"RNA-seq of {e.name}", f"RNA-seq, {e.name.lower()}, {anatomy}",
           f"expression in {e.name.lower()}", f"{anatomy}: {e.name}",
           f"{e.name}, {anatomy}"]
    for word in KIND_WORDS.get(e.kind, []):
        out.append(f"{anatomy} {word}: {e.name}")
        out.append(f"{e.name.lower()} {word}")
    if e.sex in ("Male", "Female"):
        out.append(f"{e.name}, {e.sex.lower()} donor")
    return out


def canonical_description(e: Epigenome) -> str:
    """The fixed evaluation wording (also one of the training wordings)."""
    return f"{e.name}, {anatomy_words(e.anatomy)}"


def unseen_description(e: Epigenome) -> str:
    """A wording no training example uses, to check that the text encoder generalises."""
    return f"Sample from {anatomy_words(e.anatomy)}; epigenome {e.name.lower()}"


def text_ids(description: str, max_tokens: int) -> List[int]:
    """The worker's bytes text tokenizer: UTF-8 bytes truncated to max_tokens, id = byte + 1."""
    return [b + 1 for b in description.encode("utf-8")[:max_tokens]]


@dataclass
class Dataset:
    epigenomes: List[Epigenome]  # model columns, in order
    genes: List[Gene]
    targets: np.ndarray          # [genes, epigenomes] ln(TPM + 1)

    def split(self) -> Tuple[List[int], List[int]]:
        """(training gene indices, held-out gene indices): held out when the window touches
        HELD_OUT, training only when the window lies wholly in TRAIN."""
        train, held = [], []
        for i, g in enumerate(self.genes):
            start, end = g.window_span()
            if end > common.HELD_OUT[0]:
                held.append(i)
            elif common.in_train(start, end):
                train.append(i)
        return train, held


def load(transcripts: Optional[List[common.Transcript]] = None) -> Dataset:
    transcripts = transcripts if transcripts is not None else common.refgene_chr20()
    epigenomes = read_epigenomes()
    columns, ensembl_ids, rpkm = read_rpkm()
    targets = log_tpm(rpkm)
    keep = [i for i, c in enumerate(columns) if c in epigenomes]
    genes = map_genes(ensembl_ids, transcripts)
    row = {g: i for i, g in enumerate(ensembl_ids)}
    # One gene per TSS: the first Ensembl id in file order keeps a shared window.
    seen, unique = set(), []
    for g in genes:
        key = (g.strand, g.tss)
        if key not in seen:
            seen.add(key)
            unique.append(g)
    matrix = np.stack([targets[row[g.ensembl], keep] for g in unique]).astype(np.float32)
    if not math.isfinite(float(matrix.sum())):
        raise common.DataError(f"{RPKM}: non-finite expression values")
    return Dataset(epigenomes=[epigenomes[columns[i]] for i in keep], genes=unique,
                   targets=matrix)
