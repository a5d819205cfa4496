"""AUGUSTUS (Debian package `augustus`, `--species=human`) on the evaluation requests, as the
baseline of the annotation model.

Each request of the held-out region is written as one FASTA record and predicted on both strands
with `--genemodel=partial` (genes may run off a request's ends, as the model's may), twice: with
`--UTR=off` (coding structures only, AUGUSTUS's default) and `--UTR=on` (exons with UTRs and
transcription start/end sites, which the human parameter set supports). Output is cached under
the data cache per AUGUSTUS version, mode and request, since it never changes for a given input.
"""

import os
import shutil
import subprocess
from typing import Dict, List, Optional, Sequence, Tuple

from training import common
from training.annotation_metrics import Structure

MODES = {"cds": ["--UTR=off"], "utr": ["--UTR=on"]}


def available(log=print) -> Optional[str]:
    """The augustus binary, installed with apt-get when missing and possible; None (with a
    message saying why) when the baseline cannot run."""
    path = shutil.which("augustus")
    if path:
        return path
    if os.geteuid() == 0 and shutil.which("apt-get"):
        log("annotation: installing the Debian package augustus for the baseline")
        result = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "augustus"],
                                env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
                                capture_output=True, text=True)
        if result.returncode == 0 and shutil.which("augustus"):
            return shutil.which("augustus")
        log("annotation: SKIPPING the AUGUSTUS baseline: apt-get install augustus failed: "
            + (result.stderr.strip().splitlines() or ["?"])[-1])
        return None
    log("annotation: SKIPPING the AUGUSTUS baseline: augustus is not installed and this user "
        "cannot install it (apt-get install augustus)")
    return None


def version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True)
    text = (out.stdout + out.stderr).split("\n")[0]
    return text.split("(")[-1].split(")")[0] if "(" in text else "unknown"


def parse_gff3(text: str, offset: int) -> List[Structure]:
    """AUGUSTUS GFF3 -> structures in chr20 coordinates: exons from `exon` features when there
    are any (UTR mode), otherwise from the CDS segments."""
    exons: Dict[str, List[Tuple[int, int]]] = {}
    cds: Dict[str, List[Tuple[int, int]]] = {}
    strand: Dict[str, str] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 9 or cols[2] not in ("exon", "CDS"):
            continue
        parent = next((kv.split("=", 1)[1] for kv in cols[8].split(";")
                       if kv.startswith("Parent=")), "")
        span = (int(cols[3]) - 1 + offset, int(cols[4]) + offset)
        strand[parent] = cols[6]
        (exons if cols[2] == "exon" else cds).setdefault(parent, []).append(span)
    out = []
    for parent in strand:
        segments = sorted(cds.get(parent, []))
        body = sorted(exons.get(parent, [])) or _merge_adjacent(segments)
        out.append(Structure(strand=strand[parent], exons=body, cds=_merge_adjacent(segments),
                             name=parent))
    return out


def _merge_adjacent(spans: Sequence[Tuple[int, int]]) -> List[Tuple[int, int]]:
    merged: List[Tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def predict(binary: str, mode: str, requests: Sequence[Tuple[int, int]],
            log=print) -> List[Structure]:
    """AUGUSTUS structures over every request [start, end) of chr20 (cached)."""
    cache = os.path.join(common.DATA_CACHE, "augustus", version(binary), mode)
    os.makedirs(cache, exist_ok=True)
    chr20 = common.chr20()
    out: List[Structure] = []
    for start, end in requests:
        path = os.path.join(cache, f"chr20_{start}_{end}.gff3")
        if not os.path.isfile(path):
            fasta = path + ".fa"
            with open(fasta, "w", encoding="ascii") as handle:
                handle.write(f">chr20_{start}_{end}\n")
                sequence = chr20[start:end]
                for i in range(0, len(sequence), 80):
                    handle.write(sequence[i:i + 80] + "\n")
            log(f"annotation: augustus ({mode}) on chr20:{start}-{end}")
            result = subprocess.run([binary, "--species=human", "--strand=both",
                                     "--genemodel=partial", "--gff3=on", *MODES[mode], fasta],
                                    capture_output=True, text=True)
            os.remove(fasta)
            if result.returncode != 0:
                raise RuntimeError(f"augustus failed on chr20:{start}-{end}: "
                                   + result.stderr.strip()[-500:])
            with open(path + ".tmp", "w", encoding="utf-8") as handle:
                handle.write(result.stdout)
            os.rename(path + ".tmp", path)
        with open(path, encoding="utf-8") as handle:
            out += parse_gff3(handle.read(), start)
    return out
