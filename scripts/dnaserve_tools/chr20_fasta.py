"""GRCh37 chromosome 20 from Debian's vt-examples package (MIT), for tokenizer training and tests.

The package ships usr/share/doc/vt/examples/ref/20.fa.gz (bgzip, which Python's gzip reads: it
is a series of gzip members). Nothing here is written into the repository.
"""

import glob
import gzip
import os
import shutil
import subprocess
import tempfile

FASTA_IN_PACKAGE = "usr/share/doc/vt/examples/ref/20.fa.gz"
CHR20_LENGTH = 63025520


class FetchError(Exception):
    pass


def fetch_chr20(work_dir: str) -> str:
    """Downloads and unpacks vt-examples into work_dir; returns the path of 20.fa.gz."""
    try:
        subprocess.run(["apt-get", "download", "vt-examples"], cwd=work_dir, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except (OSError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", b"") or b""
        raise FetchError("`apt-get download vt-examples` failed (run `apt-get update` first?): "
                         + detail.decode(errors="replace").strip()) from e
    debs = glob.glob(os.path.join(work_dir, "vt-examples_*.deb"))
    if len(debs) != 1:
        raise FetchError(f"expected one vt-examples .deb in {work_dir}, found {len(debs)}")
    unpacked = os.path.join(work_dir, "unpacked")
    subprocess.run(["dpkg-deb", "-x", debs[0], unpacked], check=True)
    path = os.path.join(unpacked, FASTA_IN_PACKAGE)
    if not os.path.isfile(path):
        raise FetchError(f"{FASTA_IN_PACKAGE} is not in {os.path.basename(debs[0])}")
    return path


def read_chr20(path: str) -> str:
    """The sequence of the single record in 20.fa.gz, upper-cased."""
    with gzip.open(path, "rt") as handle:
        header = handle.readline()
        if not header.startswith(">"):
            raise FetchError(f"{path} does not start with a FASTA header")
        sequence = "".join(line.strip() for line in handle).upper()
    if len(sequence) != CHR20_LENGTH:
        raise FetchError(f"{path}: {len(sequence)} bp, expected {CHR20_LENGTH} (GRCh37 chr20)")
    return sequence


class Chr20:
    """Context manager: chr20 from --fasta PATH, or fetched into a temporary directory."""

    def __init__(self, fasta: str = ""):
        self.fasta = fasta
        self.tmp = ""

    def __enter__(self) -> str:
        path = self.fasta
        if not path:
            self.tmp = tempfile.mkdtemp(prefix="dnaserve-chr20-")
            path = fetch_chr20(self.tmp)
        return read_chr20(path)

    def __exit__(self, *exc) -> None:
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
