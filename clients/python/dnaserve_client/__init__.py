"""dnaserve client: a Python SDK and the `dnaserve` command line for the Sequence Analysis
Service. `Client` is the entry point; every failure is a `DnaserveError`."""

from .client import ASYNC_THRESHOLD_BP, TASKS, TEXT_FORMATS, Client
from .errors import DnaserveError
from .fasta import FastaRecord, read_fasta
from .results import Job, JobProgress, Result

__all__ = ["Client", "DnaserveError", "Result", "Job", "JobProgress", "FastaRecord",
           "read_fasta", "TASKS", "TEXT_FORMATS", "ASYNC_THRESHOLD_BP"]
__version__ = "0.1.0"
