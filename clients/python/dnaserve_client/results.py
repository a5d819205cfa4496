"""Typed views of the service's envelopes. The raw `data` and `meta` stay available as dicts:
the contract lets fields be added, and `summary` keys are explicitly unstable."""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass
class Result:
    """A finished prediction or workflow: `{data, meta}`."""

    data: Dict[str, Any]
    meta: Dict[str, Any]
    request_id: Optional[str] = None

    @classmethod
    def from_body(cls, body: Dict[str, Any], response=None) -> "Result":
        meta = body.get("meta") or {}
        request_id = meta.get("request_id")
        if request_id is None and response is not None:
            request_id = response.headers.get("X-Request-Id")
        return cls(data=body.get("data") or {}, meta=meta, request_id=request_id)

    @property
    def task(self) -> str:
        return self.data.get("task") or self.meta.get("task", "")

    @property
    def model(self) -> Optional[str]:
        return self.meta.get("model") or self.data.get("model")

    @property
    def job_id(self) -> Optional[str]:
        return self.meta.get("job_id")

    @property
    def sequence_name(self) -> Optional[str]:
        return (self.data.get("input") or {}).get("sequence_name")

    @property
    def formats(self) -> Dict[str, str]:
        """Pre-rendered text tracks by format name (empty when there are none)."""
        formats = self.data.get("formats") or {}
        if self.task == "find_genes_and_predict_expression":
            formats = (self.data.get("annotation") or {}).get("formats") or {}
        return {k: v for k, v in formats.items() if isinstance(v, str)}

    def text(self, format: str) -> str:
        try:
            return self.formats[format]
        except KeyError:
            raise KeyError(f"this {self.task} result has no {format} rendering "
                           f"(it has: {', '.join(sorted(self.formats)) or 'none'})") from None

    # Task-specific views (empty when the task has no such field).
    @property
    def regions(self) -> List[dict]:
        return self.data.get("regions") or []

    @property
    def sites(self) -> List[dict]:
        return self.data.get("sites") or []

    @property
    def windows(self) -> List[dict]:
        return self.data.get("windows") or []

    @property
    def transcripts(self) -> List[dict]:
        if "annotation" in self.data:
            return (self.data.get("annotation") or {}).get("transcripts") or []
        return self.data.get("transcripts") or []

    @property
    def prediction(self) -> Optional[Dict[str, Any]]:
        return self.data.get("prediction")

    @property
    def expression_predictions(self) -> List[dict]:
        return self.data.get("expression_predictions") or []


@dataclass
class Job:
    """An accepted async job (the 202 submit envelope)."""

    job_id: str
    task: str
    status: str = "accepted"
    result_path: Optional[str] = None
    request_id: Optional[str] = None

    @classmethod
    def from_body(cls, body: Dict[str, Any], response=None) -> "Job":
        data, meta = body.get("data") or {}, body.get("meta") or {}
        return cls(job_id=data.get("job_id") or meta.get("job_id"), task=meta.get("task", ""),
                   status=data.get("status", "accepted"),
                   result_path=(data.get("links") or {}).get("result"),
                   request_id=response.headers.get("X-Request-Id") if response is not None
                   else None)


@dataclass
class JobProgress:
    """A poll of a job still running (202)."""

    job_id: str
    task: str
    status: str
    percent: float = 0.0
    message: str = ""
    elapsed_seconds: float = 0.0
    raw: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_body(cls, body: Dict[str, Any]) -> "JobProgress":
        data, meta = body.get("data") or {}, body.get("meta") or {}
        progress = data.get("progress") or {}
        return cls(job_id=data.get("job_id") or meta.get("job_id", ""), task=meta.get("task", ""),
                   status=data.get("status", "running"),
                   percent=float(progress.get("current_percent") or 0),
                   message=progress.get("message") or "",
                   elapsed_seconds=float(progress.get("elapsed_seconds") or 0), raw=body)
