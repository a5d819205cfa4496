"""Shared ground for training and evaluating the bundled models on real public data.

Every training and evaluation script imports this module, so that all models agree on:

- the genome: GRCh37 chr20 from Debian's `vt-examples` (fetched with `apt-get download`, cached
  under the data cache, never committed);
- the annotation: hg19 refGene transcripts on chr20 from `../shared/data` (read in place);
- the **held-out region** (`HELD_OUT`): the last 10 Mb of chr20. No model trains or selects
  hyper-parameters on it; evaluation happens only there. A training example is admitted only when
  its whole input span lies in `TRAIN` (`in_train`), so not even context bases leak.
- how packages are written (`write_package`): the format of worker/README.md, staged and swapped
  in so a reader never sees half a package.

Run scripts with Debian's interpreter (`/usr/bin/python3`, which has python3-torch).
"""

import gzip
import hashlib
import json
import os
import random
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from dnaserve_tools.chr20_fasta import CHR20_LENGTH, fetch_chr20, read_chr20

SCRIPTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(SCRIPTS_DIR)

SHARED_DATA = os.path.normpath(os.environ.get("DNASERVE_SHARED_DATA",
                                              os.path.join(ROOT, "..", "shared", "data")))
DATA_CACHE = os.path.normpath(os.environ.get("DNASERVE_DATA_CACHE",
                                             os.path.join(ROOT, "build", "data-cache")))
REFGENE = os.path.join(SHARED_DATA, "annotation", "hg19_refGene.txt.gz")

FORMAT_VERSION = 1

# Half-open, 0-based intervals on chr20 (GRCh37, 63,025,520 bp).
HELD_OUT = (CHR20_LENGTH - 10_000_000, CHR20_LENGTH)  # chr20:53,025,520-63,025,520
TRAIN = (0, HELD_OUT[0])
# The last 5 Mb of TRAIN, for choosing epochs and watching training (never the held-out region).
# Models that use it fit on FIT only.
VALIDATION = (HELD_OUT[0] - 5_000_000, HELD_OUT[0])  # chr20:48,025,520-53,025,520
FIT = (0, VALIDATION[0])

COMPLEMENT = str.maketrans("ACGTNacgtn", "TGCANtgcan")
# Char tokenizer ids of the worker (worker/README.md): PAD=0 A=1 C=2 G=3 T=4 N=5.
CHAR_IDS = {"A": 1, "C": 2, "G": 3, "T": 4, "N": 5}


class DataError(Exception):
    pass


def reverse_complement(seq: str) -> str:
    return seq.translate(COMPLEMENT)[::-1]


def in_train(start: int, end: int) -> bool:
    """True when [start, end) lies wholly in the training part of chr20."""
    return TRAIN[0] <= start and end <= TRAIN[1]


def wanted(model_id: str) -> bool:
    """Whether a training run should write `model_id`: all of a module's packages unless
    $DNASERVE_TRAIN_IDS (scripts/train-models --ids) names some."""
    ids = [x.strip() for x in os.environ.get("DNASERVE_TRAIN_IDS", "").split(",") if x.strip()]
    return not ids or model_id in ids


def in_fit(start: int, end: int) -> bool:
    """True when [start, end) lies wholly in FIT (TRAIN without the validation slice)."""
    return FIT[0] <= start and end <= FIT[1]


def in_validation(start: int, end: int) -> bool:
    return VALIDATION[0] <= start and end <= VALIDATION[1]


def in_held_out(start: int, end: int) -> bool:
    """True when [start, end) lies wholly in the held-out part of chr20."""
    return HELD_OUT[0] <= start and end <= HELD_OUT[1]


def require_shared(path: str) -> str:
    if not os.path.exists(path):
        raise DataError(f"{path} is missing: the shared reference data (../shared/data beside the "
                        "repository, or $DNASERVE_SHARED_DATA) is needed for training and evaluation")
    return path


def chr20_fasta_path() -> str:
    """Path of GRCh37 chr20 (bgzip FASTA from vt-examples), downloaded once into the data cache."""
    cache = os.path.join(DATA_CACHE, "vt-examples")
    path = os.path.join(cache, "unpacked", "usr", "share", "doc", "vt", "examples", "ref",
                        "20.fa.gz")
    if not os.path.isfile(path):
        os.makedirs(cache, exist_ok=True)
        path = fetch_chr20(cache)
    return path


_CHR20: Optional[str] = None


def chr20() -> str:
    """The whole chr20 sequence, upper case (63 Mb string; read once per process)."""
    global _CHR20
    if _CHR20 is None:
        _CHR20 = read_chr20(chr20_fasta_path())
    return _CHR20


@dataclass
class Transcript:
    name: str            # NM_/NR_ accession
    gene: str            # symbol
    strand: str          # "+" or "-"
    tx_start: int        # 0-based
    tx_end: int          # exclusive
    cds_start: int
    cds_end: int
    exons: List[Tuple[int, int]] = field(default_factory=list)  # sorted, half-open

    @property
    def coding(self) -> bool:
        return self.name.startswith("NM_") and self.cds_end > self.cds_start

    @property
    def tss(self) -> int:
        """0-based genomic position of the first transcribed base (5' end)."""
        return self.tx_start if self.strand == "+" else self.tx_end - 1

    @property
    def tes(self) -> int:
        """0-based genomic position of the last transcribed base (3' end)."""
        return self.tx_end - 1 if self.strand == "+" else self.tx_start

    def junctions(self) -> Tuple[List[int], List[int]]:
        """Genomic donor and acceptor bases (SpliceAI convention: donor = last exonic base before
        an intron, acceptor = first exonic base after it, in transcript orientation)."""
        donors, acceptors = [], []
        for left, right in zip(self.exons, self.exons[1:]):
            if self.strand == "+":
                donors.append(left[1] - 1)
                acceptors.append(right[0])
            else:
                donors.append(right[0])
                acceptors.append(left[1] - 1)
        return donors, acceptors


def chr20_ids():
    """chr20 as worker char ids (numpy uint8, A=1 C=2 G=3 T=4 N=5), cached as .npy."""
    import numpy as np
    from training.nets import char_ids
    path = os.path.join(DATA_CACHE, "chr20_ids.npy")
    if not os.path.isfile(path):
        os.makedirs(DATA_CACHE, exist_ok=True)
        np.save(path + ".tmp.npy", char_ids(chr20()))
        os.replace(path + ".tmp.npy", path)
    ids = np.load(path)
    if ids.shape != (CHR20_LENGTH,):
        raise DataError(f"{path} holds {ids.shape[0]} bases, expected {CHR20_LENGTH}")
    return ids


def debian_file(package: str, member: str) -> str:
    """A file out of a Debian package (apt-get download into the data cache, never committed)."""
    from dnaserve_tools.debian_files import package_file
    return package_file(package, member, DATA_CACHE)


def refgene_chr20(path: str = REFGENE) -> List[Transcript]:
    """The chr20 transcripts of hg19 refGene (UCSC column order, column 1 a bin)."""
    out = []
    with gzip.open(require_shared(path), "rt", encoding="ascii") as handle:
        for line in handle:
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 13 or cols[2] != "chr20":
                continue
            starts = [int(x) for x in cols[9].split(",") if x]
            ends = [int(x) for x in cols[10].split(",") if x]
            out.append(Transcript(name=cols[1], gene=cols[12], strand=cols[3],
                                  tx_start=int(cols[4]), tx_end=int(cols[5]),
                                  cds_start=int(cols[6]), cds_end=int(cols[7]),
                                  exons=sorted(zip(starts, ends))))
    if not out:
        raise DataError(f"{path} has no chr20 transcripts")
    return out


def char_ids(seq: str) -> List[int]:
    """Worker char-tokenizer ids of a sequence (anything outside ACGT counts as N)."""
    return [CHAR_IDS.get(b, 5) for b in seq.upper()]


def seeded(seed: int) -> random.Random:
    """A private RNG; also seeds torch and numpy when they are importable."""
    try:
        import torch
        torch.manual_seed(seed)
    except ImportError:
        pass
    try:
        import numpy
        numpy.random.seed(seed)
    except ImportError:
        pass
    return random.Random(seed)


def sha256_file(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def trained_manifest(model_id: str, task: str, description: str, is_default: bool,
                     tokenizer: Dict, context: int, output_labels: List[str], seed: int,
                     **fields) -> Dict:
    """A manifest (worker/README.md) of a package this project trained; `fields` adds the
    task's own (stride_bp, flank_bp, output_window_bp, ...)."""
    manifest = {
        "format_version": FORMAT_VERSION,
        "id": model_id,
        "task": task,
        "description": description,
        "is_default": is_default,
        "tokenizer": tokenizer,
        "context_window_bp": context,
        "trained_window_bp": None,
    }
    manifest.update(fields)
    manifest.update({"output_labels": output_labels, "trained": True, "seed": seed,
                     "weights": "model.pt", "model_card": "MODEL_CARD.md"})
    return manifest


def write_package(out_dir: str, manifest: Dict, scripted_module, model_card: str,
                  extra_files: Optional[Dict[str, bytes]] = None) -> str:
    """Writes <out_dir>/<manifest id>/ (manifest.json, the TorchScript weights, MODEL_CARD.md and
    any extra files such as a vocab or tokenizer.json), staged in a dot-directory the worker
    ignores and swapped in at the end. Returns the package directory."""
    package_id = manifest["id"]
    final_dir = os.path.join(out_dir, package_id)
    staging = os.path.join(out_dir, f".{package_id}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    scripted_module.save(os.path.join(staging, manifest["weights"]))
    with open(os.path.join(staging, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=2)
        handle.write("\n")
    with open(os.path.join(staging, manifest["model_card"]), "w", encoding="utf-8") as handle:
        handle.write(model_card)
    for name, data in (extra_files or {}).items():
        with open(os.path.join(staging, name), "wb") as handle:
            handle.write(data)
    shutil.rmtree(final_dir, ignore_errors=True)
    os.rename(staging, final_dir)
    return final_dir


def git_revision() -> str:
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
