"""Figures of one record's results: `plot_results(results)` returns a matplotlib `Figure`.

Panels, top to bottom, on one shared axis of the record (genome positions when the record is
named `contig:start-end`, as chr20_records.py and the CLI's --region name them):
  promoter    the score of every window (a step at each window's centre stride) with the
              threshold and the called regions shaded
  splice      donor and acceptor sites as stems, height = score
  chromatin   a heatmap of the top features (by their highest probability) across the windows;
              white where a feature was not reported (below the request's threshold)
  annotation  transcripts: exons as thin boxes, CDS as thick boxes, the intron line with strand
              chevrons, one row per overlapping transcript
and, on its own axis, `expression`: one bar per context (expression results, or find-genes
results, one per description; grouped by gene when several genes were found).

matplotlib is an optional extra (`pip install 'dnaserve-client[plot]'`, or Debian's
python3-matplotlib with a venv made with --system-site-packages); the rest of the SDK does not
need it. The figure is a plain `matplotlib.figure.Figure` (no pyplot state), so it displays in a
notebook as it is and can be drawn from several threads.
"""

import os
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .results import Result

MISSING_MATPLOTLIB = (
    "dnaserve plot needs matplotlib, which is not installed for this Python. Install Debian's "
    "python3-matplotlib (apt install python3-matplotlib) and make the venv with "
    "--system-site-packages, or pip install 'dnaserve-client[plot]'.")

try:
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import FuncFormatter, MaxNLocator
except ImportError as e:  # the core SDK works without it; this module says what to install
    raise ImportError(MISSING_MATPLOTLIB) from e

PANELS = ("promoter", "splice", "chromatin", "annotation", "expression")
FORMATS = ("png", "svg", "pdf")

DONOR_COLOUR = "#1a7837"
ACCEPTOR_COLOUR = "#b2182b"
PROMOTER_COLOUR = "#2c5fa8"
STRAND_COLOURS = {"+": "#2c5fa8", "-": "#c2571a"}
BAR_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
               "#8c8c8c")

# Margins in pixels, so that the layout reads the same at 1024 x 768 and at 1400 x 900.
_LEFT_PX, _RIGHT_PX, _TOP_PX, _BOTTOM_PX, _GAP_PX = 190, 60, 56, 44, 34
_TRACKS_TO_BARS_PX = 78
_WEIGHTS = {"promoter": 1.0, "splice": 1.0, "chromatin": 1.7, "annotation": 1.0,
            "expression": 1.3}

_NAMED_RANGE = re.compile(r"^(?P<contig>.+):(?P<start>[0-9,]+)-(?P<end>[0-9,]+)$")


# ---- where the record lies ---------------------------------------------------------------
@dataclass
class RecordFrame:
    """One record: its name, length, and where it lies on its contig when its name says so
    (`chr20:31012001-31024000`: contig chr20, offset 31012000)."""

    name: str
    length: int
    contig: Optional[str] = None
    offset: int = 0  # 0-based contig position of the record's first base

    @classmethod
    def from_name(cls, name: str, length: int) -> "RecordFrame":
        match = _NAMED_RANGE.match(name or "")
        if match:
            start = int(match["start"].replace(",", ""))
            end = int(match["end"].replace(",", ""))
            if start >= 1 and end - start + 1 == length:
                return cls(name, length, match["contig"], start - 1)
        return cls(name, length)

    def parse_region(self, text: str) -> Tuple[int, int]:
        """`START-END` (1-based, inclusive, within the record) or `CONTIG:START-END` (on the
        contig, when the record's name places it there, or when the record is the contig
        itself) -> a 0-based half-open range of the record."""
        text = text.strip()
        named = _NAMED_RANGE.match(text)
        if named:
            start = int(named["start"].replace(",", ""))
            end = int(named["end"].replace(",", ""))
            contig = named["contig"]
            if contig == self.contig:
                start -= self.offset
                end -= self.offset
            elif contig != self.name:
                where = f"{self.contig}:{self.offset + 1:,}-{self.offset + self.length:,}" \
                    if self.contig else "a contig position (its name is not contig:start-end)"
                raise ValueError(f"region {text}: the record {self.name} is not on {contig} "
                                 f"(it covers {where})")
        else:
            bounds = re.match(r"^([0-9,]+)-([0-9,]+)$", text)
            if not bounds:
                raise ValueError(f"region {text!r}: write START-END (1-based, inclusive, in the "
                                 "record) or CONTIG:START-END")
            start, end = (int(x.replace(",", "")) for x in bounds.groups())
        if start < 1 or end < start or end > self.length:
            raise ValueError(f"region {text}: outside the record {self.name} "
                             f"(1-{self.length:,} in the record"
                             + (f", {self.contig}:{self.offset + 1:,}-"
                                f"{self.offset + self.length:,}" if self.contig else "") + ")")
        return start - 1, end

    def sub_name(self, start: int, end: int) -> str:
        """The name of the sub-record [start, end), placed on the contig when known (the record
        itself as the contig otherwise)."""
        contig = self.contig or self.name
        return f"{contig}:{self.offset + start + 1}-{self.offset + end}"

    def axis_label(self) -> str:
        if self.contig:
            return f"{self.contig} position (bp)"
        return f"position in {self.name} (bp)"


# ---- results in -----------------------------------------------------------------------------
def _as_results(results: Union[Result, dict, Iterable[Union[Result, dict]]]) -> List[Result]:
    if isinstance(results, (Result, dict)):
        results = [results]
    out = []
    for item in results:
        if isinstance(item, Result):
            out.append(item)
        elif isinstance(item, dict) and "data" in item:
            out.append(Result(data=item.get("data") or {}, meta=item.get("meta") or {}))
        else:
            raise TypeError("plot_results takes Result objects or {data, meta} dicts "
                            f"(got {type(item).__name__})")
    return out


def record_names(results) -> List[str]:
    """The distinct sequence_names of results, in order of appearance."""
    names: List[str] = []
    for result in _as_results(results):
        name = _name_of(result)
        if name not in names:
            names.append(name)
    return names


def _name_of(result: Result) -> str:
    return (result.data.get("input") or {}).get("sequence_name") or "sequence"


@dataclass
class _Inputs:
    frame: RecordFrame
    promoter: Optional[Result] = None
    splice: Optional[Result] = None
    chromatin: Optional[Result] = None
    annotation: Optional[Dict[str, Any]] = None  # the annotation data payload
    annotation_model: Optional[str] = None
    expression: Optional[List[Result]] = None  # expression and find-genes results


def _gather(results: List[Result]) -> _Inputs:
    if not results:
        raise ValueError("no results to plot")
    names = record_names(results)
    if len(names) > 1:
        raise ValueError("these results are of several records (" + ", ".join(names[:5]) +
                         "); plot one record's results at a time")
    length = max((int(r.meta.get("sequence_length") or 0) for r in results), default=0)
    if length <= 0:
        length = _extent(results)
    inputs = _Inputs(frame=RecordFrame.from_name(names[0], length))
    expression: List[Result] = []
    for result in results:
        task = result.task
        if task in ("promoter", "splice", "chromatin"):
            setattr(inputs, task, result)
        elif task == "annotation":
            inputs.annotation, inputs.annotation_model = result.data, result.model
        elif task == "find_genes_and_predict_expression":
            if inputs.annotation is None:
                inputs.annotation = result.data.get("annotation") or {}
                inputs.annotation_model = result.data.get("annotation_model")
            expression.append(result)
        elif task == "expression":
            expression.append(result)
        # Other tasks (enhancer, variant) have no panel yet: they are left out.
    inputs.expression = expression or None
    return inputs


def _extent(results: List[Result]) -> int:
    ends = [0]
    for result in results:
        for key in ("window_details", "windows", "sites"):
            ends.extend(int(item.get("end", 0)) for item in result.data.get(key) or [])
        ends.extend(int(t.get("end", 0)) for t in result.transcripts)
    return max(ends)


# ---- the figure -----------------------------------------------------------------------------
def plot_results(results, *, tasks: Optional[Sequence[str]] = None,
                 region: Union[None, str, Tuple[int, int]] = None,
                 figsize: Tuple[float, float] = (14.0, 9.0), dpi: float = 100.0,
                 top_features: int = 12, title: Optional[str] = None) -> Figure:
    """A figure of one record's results.

    results: `Result`s (or `{data, meta}` dicts, as `dnaserve predict --format json` writes
      them) of one record: any of promoter, splice, chromatin, annotation, expression and
      find-genes results; several expression or find-genes results make one bar per context.
    tasks: the panels to draw, from PANELS (default: every panel the results can fill); asking
      for one the results cannot fill is a ValueError.
    region: a part of the record: (start, end) 0-based half-open in the record, or a string
      `START-END` (1-based, in the record) / `CONTIG:START-END` (see RecordFrame.parse_region).
    figsize, dpi: inches and dots per inch (a PNG is figsize * dpi pixels).
    top_features: chromatin rows (the features with the highest probability in the region).
    """
    inputs = _gather(_as_results(results))
    frame = inputs.frame
    chosen = _choose_panels(inputs, tasks)
    if region is None:
        start, end = 0, frame.length
    elif isinstance(region, str):
        start, end = frame.parse_region(region)
    else:
        start, end = int(region[0]), int(region[1])
        if not 0 <= start < end <= frame.length:
            raise ValueError(f"region {region}: not within 0-{frame.length}")
    x0, x1 = frame.offset + start, frame.offset + end

    fig = Figure(figsize=figsize, dpi=dpi)
    width_px, height_px = figsize[0] * dpi, figsize[1] * dpi
    track_panels = [p for p in chosen if p != "expression"]
    axes = _layout(fig, chosen, [_panel_weight(p, inputs, start, end, top_features)
                                 for p in chosen], width_px, height_px)
    drawers = {"promoter": _draw_promoter, "splice": _draw_splice,
               "chromatin": _draw_chromatin, "annotation": _draw_annotation}
    for panel in track_panels:
        ax = axes[panel]
        drawers[panel](ax, inputs, frame, start, end, top_features)
        ax.set_xlim(x0, x1)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{int(round(x)):,}"))
        ax.xaxis.set_major_locator(MaxNLocator(nbins=max(3, int(width_px // 160))))
        ax.tick_params(labelsize=8)
        if panel != track_panels[-1]:
            ax.tick_params(labelbottom=False)
    if track_panels:
        axes[track_panels[-1]].set_xlabel(frame.axis_label(), fontsize=9)
    if "expression" in axes:
        _draw_expression(axes["expression"], inputs, frame, start, end)
    where = frame.sub_name(start, end) if frame.contig or region is not None else frame.name
    fig.suptitle(title if title is not None else
                 f"{where}  ({end - start:,} bp)  ·  dnaserve", fontsize=11,
                 x=_LEFT_PX / width_px, ha="left", y=1 - 14 / height_px, va="top")
    return fig


def _layout(fig: Figure, names: List[str], weights: List[float], width_px: float,
            height_px: float) -> Dict[str, Any]:
    """Axes by panel name: the track panels stacked on one shared x axis, the expression bars
    below them with room for the tracks' axis label. Margins are in pixels."""
    left = min(0.4, _LEFT_PX / width_px)
    right = 1 - _RIGHT_PX / width_px
    tracks = [n for n in names if n != "expression"]
    usable = height_px - _TOP_PX - _BOTTOM_PX
    axes: Dict[str, Any] = {}
    bottom_of_tracks = _BOTTOM_PX
    if "expression" in names:
        share = weights[names.index("expression")] / sum(weights)
        below = _TRACKS_TO_BARS_PX if tracks else 0
        height = (usable - below - _GAP_PX * max(0, len(tracks) - 1)) * share
        grid = fig.add_gridspec(1, 1, left=left, right=right, bottom=_BOTTOM_PX / height_px,
                                top=(_BOTTOM_PX + height) / height_px)
        axes["expression"] = fig.add_subplot(grid[0, 0])
        bottom_of_tracks = _BOTTOM_PX + height + below
    if tracks:
        track_weights = [w for n, w in zip(names, weights) if n != "expression"]
        space = height_px - _TOP_PX - bottom_of_tracks
        grid = fig.add_gridspec(
            len(tracks), 1, height_ratios=track_weights, left=left, right=right,
            top=1 - _TOP_PX / height_px, bottom=bottom_of_tracks / height_px,
            hspace=_GAP_PX * len(tracks) / max(1.0, space - _GAP_PX * (len(tracks) - 1)))
        shared = None
        for row, name in enumerate(tracks):
            axes[name] = fig.add_subplot(grid[row, 0], sharex=shared)
            shared = shared or axes[name]
    for name, ax in axes.items():
        ax.set_label(name)
    return axes


def panels(fig: Figure) -> Dict[str, Any]:
    """The figure's panel axes by name (promoter, splice, ...), to adjust or to test."""
    found = {ax.get_label(): ax for ax in fig.axes if ax.get_label() in PANELS}
    return {name: found[name] for name in PANELS if name in found}


def save_figure(fig: Figure, path: str, *, dpi: Optional[float] = None) -> str:
    """Writes the figure as PNG, SVG or PDF, chosen by the file's extension; returns the format.
    The file appears whole or not at all, with the umask's permissions."""
    extension = os.path.splitext(path)[1].lower().lstrip(".")
    if extension not in FORMATS:
        raise ValueError(f"{path}: the figure's format comes from the file extension; use "
                         ".png, .svg or .pdf")
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            fig.savefig(handle, format=extension, dpi=dpi or fig.dpi,
                        metadata=_metadata(extension))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return extension


def _metadata(extension: str) -> Dict[str, Any]:
    # No creation date: the same results give the same file.
    if extension == "svg":
        return {"Date": None}
    if extension == "pdf":
        return {"CreationDate": None}
    return {}


def _choose_panels(inputs: _Inputs, tasks: Optional[Sequence[str]]) -> List[str]:
    have = {"promoter": inputs.promoter, "splice": inputs.splice, "chromatin": inputs.chromatin,
            "annotation": inputs.annotation, "expression": inputs.expression}
    if tasks is None:
        chosen = [p for p in PANELS if have[p] is not None]
        if not chosen:
            raise ValueError("none of these results has a panel (promoter, splice, chromatin, "
                             "annotation, expression or find-genes results can be plotted)")
        return chosen
    unknown = [t for t in tasks if t not in PANELS]
    if unknown:
        raise ValueError(f"no panel named {', '.join(unknown)} (choose from {', '.join(PANELS)})")
    missing = [t for t in tasks if have[t] is None]
    if missing:
        raise ValueError(f"no {', '.join(missing)} result to plot (the results hold: "
                         f"{', '.join(p for p in PANELS if have[p] is not None) or 'nothing'})")
    return [p for p in PANELS if p in tasks]


def _panel_weight(panel: str, inputs: _Inputs, start: int, end: int, top: int) -> float:
    if panel == "chromatin":
        return max(1.0, _WEIGHTS["chromatin"] * min(top, 12) / 12)
    if panel == "annotation" and inputs.annotation is not None:
        rows = len(_pack_rows(_transcripts_in(inputs, start, end), end - start))
        return max(0.8, 0.45 * rows + 0.3)
    if panel == "expression":
        bars = sum(len(g[1]) for g in _expression_groups(inputs, start, end))
        return max(1.0, 0.22 * bars + 0.4)
    return _WEIGHTS[panel]


def _panel_title(ax, text: str) -> None:
    ax.set_title(text, loc="left", fontsize=8.5, pad=3)


def _no_data(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=8,
            color="#777777")


# ---- promoter ---------------------------------------------------------------------------------
def _draw_promoter(ax, inputs: _Inputs, frame: RecordFrame, start: int, end: int, top: int):
    data = inputs.promoter.data
    windows = sorted(data.get("window_details") or [], key=lambda w: w["start"])
    threshold = float((data.get("summary") or {}).get("threshold", 0.5))
    regions = data.get("regions") or []
    # Windows overlap (2,000 bp every 1,000 bp): each score is drawn over its window's central
    # stride, so the track neither double counts nor leaves gaps.
    xs: List[float] = []
    ys: List[float] = []
    for i, w in enumerate(windows):
        centre = (w["start"] + w["end"]) / 2
        half = (windows[1]["start"] - windows[0]["start"]) / 2 if len(windows) > 1 \
            else (w["end"] - w["start"]) / 2
        lo, hi = max(0.0, centre - half), min(float(frame.length), centre + half)
        if i == 0:
            lo = 0.0
        if i == len(windows) - 1:
            hi = float(frame.length)
        xs.extend([frame.offset + lo, frame.offset + hi])
        ys.extend([w["score"], w["score"]])
    for region in regions:
        ax.axvspan(frame.offset + region["start"], frame.offset + region["end"],
                   color=PROMOTER_COLOUR, alpha=0.15, lw=0)
    if xs:
        ax.fill_between(xs, ys, color=PROMOTER_COLOUR, alpha=0.35, lw=0)
        ax.plot(xs, ys, color=PROMOTER_COLOUR, lw=1.4)
    ax.axhline(threshold, color="#555555", lw=0.8, ls="--")
    visible = [w["score"] for w in windows if w["end"] > start and w["start"] < end]
    peak = max(visible, default=0.0)
    ax.set_ylim(0, min(1.05, max(peak, threshold) * 1.15))
    ax.set_ylabel("promoter\nscore", fontsize=8.5)
    _panel_title(ax, f"promoter ({inputs.promoter.model}): {len(regions)} region"
                 f"{'s' if len(regions) != 1 else ''} at ≥ {threshold:g} (shaded), "
                 f"max {peak:.2f}; dashed: threshold")
    if not windows:
        _no_data(ax, "no windows scored")


# ---- splice -----------------------------------------------------------------------------------
def _draw_splice(ax, inputs: _Inputs, frame: RecordFrame, start: int, end: int, top: int):
    data = inputs.splice.data
    sites = data.get("sites") or []
    threshold = float((data.get("summary") or {}).get("threshold", 0.5))
    counts = {"donor": 0, "acceptor": 0}
    for kind, colour in (("donor", DONOR_COLOUR), ("acceptor", ACCEPTOR_COLOUR)):
        chosen = [s for s in sites if s["type"] == kind]
        xs = [frame.offset + (s["start"] + s["end"]) / 2 for s in chosen]
        ys = [s["score"] for s in chosen]
        counts[kind] = sum(1 for s in chosen if s["end"] > start and s["start"] < end)
        if xs:
            ax.vlines(xs, 0, ys, color=colour, lw=1.6)
            ax.plot(xs, ys, ls="none", marker="v" if kind == "donor" else "^", ms=5,
                    color=colour, label=f"{kind} ({counts[kind]})")
    ax.set_ylim(0, 1.12)
    ax.set_ylabel("splice\nscore", fontsize=8.5)
    _panel_title(ax, f"splice ({inputs.splice.model}): sites at ≥ {threshold:g} on the "
                 f"submitted strand: {counts['donor']} donor, {counts['acceptor']} acceptor")
    if sites:
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False,
                  ncol=2, borderaxespad=0.0, handlelength=1.0)
    else:
        _no_data(ax, f"no splice sites at ≥ {threshold:g}")


# ---- chromatin --------------------------------------------------------------------------------
def _draw_chromatin(ax, inputs: _Inputs, frame: RecordFrame, start: int, end: int, top: int):
    data = inputs.chromatin.data
    windows = sorted(data.get("windows") or [], key=lambda w: w["start"])
    threshold = float((data.get("summary") or {}).get("threshold", 0.5))
    names, matrix = _feature_matrix(windows, start, end, top)
    ax.set_ylabel("chromatin", fontsize=8.5)
    _panel_title(ax, f"chromatin ({inputs.chromatin.model}): top {len(names)} of "
                 f"{_reported_features(windows, start, end)} features reported at ≥ "
                 f"{threshold:g} (probability; white: not reported)")
    if not names:
        ax.set_yticks([])
        _no_data(ax, f"no chromatin feature at ≥ {threshold:g} here")
        return
    edges = _window_edges(windows, frame.length)
    mesh = ax.pcolormesh([frame.offset + e for e in edges], np.arange(len(names) + 1),
                         np.ma.masked_less_equal(matrix, 0.0), cmap="YlOrRd", vmin=0.0,
                         vmax=1.0, shading="flat")
    ax.set_ylim(len(names), 0)
    ax.set_yticks(np.arange(len(names)) + 0.5)
    ax.set_yticklabels([_shorten(_feature_label(n), 24) for n in names],
                       fontsize=max(5.0, 8.0 - len(names) / 6))
    bar = ax.inset_axes([1.01, 0.0, 0.012, 1.0])
    colorbar = ax.figure.colorbar(mesh, cax=bar)
    colorbar.ax.tick_params(labelsize=6)


def _feature_matrix(windows: List[dict], start: int, end: int, top: int):
    best: Dict[str, float] = {}
    for w in windows:
        if w["end"] <= start or w["start"] >= end:
            continue
        for features in (w.get("features") or {}).values():
            for f in features:
                best[f["name"]] = max(best.get(f["name"], 0.0), float(f["probability"]))
    names = sorted(best, key=lambda n: (-best[n], n))[:max(0, top)]
    row = {n: i for i, n in enumerate(names)}
    matrix = np.zeros((len(names), len(windows)))
    for j, w in enumerate(windows):
        for features in (w.get("features") or {}).values():
            for f in features:
                if f["name"] in row:
                    matrix[row[f["name"]], j] = float(f["probability"])
    return names, matrix


def _reported_features(windows: List[dict], start: int, end: int) -> int:
    return len({f["name"] for w in windows if w["end"] > start and w["start"] < end
                for features in (w.get("features") or {}).values() for f in features})


def _window_edges(windows: List[dict], length: int) -> List[float]:
    # Windows of 1,000 bp every 200 bp: each column covers its window's centre stride.
    centres = [(w["start"] + w["end"]) / 2 for w in windows]
    if len(centres) == 1:
        return [0.0, float(length)]
    edges = [max(0.0, centres[0] - (centres[1] - centres[0]) / 2)]
    edges += [(a + b) / 2 for a, b in zip(centres, centres[1:])]
    edges.append(min(float(length), centres[-1] + (centres[-1] - centres[-2]) / 2))
    edges[0], edges[-1] = 0.0, float(length)
    return edges


def _feature_label(name: str) -> str:
    # "HeLa-S3|CEBPB|None": the model's own names; "None" is "no treatment".
    return name[:-5] if name.endswith("|None") else name


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


# ---- annotation -------------------------------------------------------------------------------
def _transcripts_in(inputs: _Inputs, start: int, end: int) -> List[dict]:
    frame = inputs.frame
    transcripts = (inputs.annotation or {}).get("transcripts") or []
    # Results of a request with shift_coordinates are already on the contig: bring them back
    # into the record, where the other panels are.
    shifted = frame.offset > 0 and any(t["end"] > frame.length for t in transcripts)
    out = []
    for t in transcripts:
        if shifted:
            t = _shift_transcript(t, -frame.offset)
        if t["end"] > start and t["start"] < end:
            out.append(t)
    return out


def _shift_transcript(t: dict, by: int) -> dict:
    moved = dict(t)
    for key in ("start", "end", "tss_position", "polya_position"):
        if isinstance(moved.get(key), int):
            moved[key] += by
    for key in ("exons", "introns", "cds"):
        moved[key] = [{"start": s["start"] + by, "end": s["end"] + by}
                      for s in t.get(key) or []]
    return moved


def _pack_rows(transcripts: List[dict], span: int) -> List[List[dict]]:
    """Transcripts into rows where none overlaps another (with room for its label)."""
    rows: List[List[dict]] = []
    room = span * 0.12
    for t in sorted(transcripts, key=lambda t: (t["start"], -t["end"])):
        for row in rows:
            if row[-1]["end"] + room < t["start"]:
                row.append(t)
                break
        else:
            rows.append([t])
    return rows


def _draw_annotation(ax, inputs: _Inputs, frame: RecordFrame, start: int, end: int, top: int):
    transcripts = _transcripts_in(inputs, start, end)
    rows = _pack_rows(transcripts, end - start)
    model = inputs.annotation_model or (inputs.annotation or {}).get("model", "")
    _panel_title(ax, f"annotation ({model}): {len(transcripts)} transcript"
                 f"{'s' if len(transcripts) != 1 else ''}; thick: CDS, thin: UTR exon, "
                 "arrows: strand")
    ax.set_yticks([])
    ax.set_ylim(len(rows) - 0.35 if rows else 1, -0.75)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    if not transcripts:
        _no_data(ax, "no transcripts predicted here")
        return
    span = end - start
    for y, row in enumerate(rows):
        for t in row:
            _draw_transcript(ax, t, y, frame, span)


def _draw_transcript(ax, t: dict, y: float, frame: RecordFrame, span: int) -> None:
    colour = STRAND_COLOURS.get(t.get("strand"), "#555555")
    off = frame.offset
    ax.plot([off + t["start"], off + t["end"]], [y, y], color=colour, lw=1.0, zorder=1)
    # Strand chevrons along the line, about one every 40th of the view.
    step = max(1.0, span / 40)
    marks = np.arange(t["start"] + step / 2, t["end"], step)
    if len(marks):
        ax.plot(off + marks, np.full(len(marks), y), ls="none",
                marker=">" if t.get("strand") == "+" else "<", ms=3.5, color=colour, zorder=1)
    for exon in t.get("exons") or []:
        ax.add_patch(Rectangle((off + exon["start"], y - 0.14), exon["end"] - exon["start"], 0.28,
                               facecolor=colour, alpha=0.45, lw=0, zorder=2))
    for cds in t.get("cds") or []:
        ax.add_patch(Rectangle((off + cds["start"], y - 0.26), cds["end"] - cds["start"], 0.52,
                               facecolor=colour, lw=0, zorder=3))
    cut = t["start"] <= 0 or t["end"] >= frame.length
    label = f"{t.get('id', '')} {t.get('strand', '')} {t.get('transcript_type', '')}" \
            f"{'  (runs past the record: cut)' if cut else ''}"
    ax.text(off + max(t["start"], 0), y - 0.32, label, fontsize=7, va="bottom", ha="left",
            color=colour, clip_on=True)


# ---- expression -------------------------------------------------------------------------------
def _context_label(result: Result) -> Tuple[str, str]:
    """(what the user asked for: the description, else the matched context; the context the
    model used, with its similarity)."""
    match = result.meta.get("description_match") or {}
    contexts = match.get("contexts") or []
    description = (result.data.get("input") or {}).get("description")
    best = contexts[0] if contexts else None
    if best is None:
        return description or "context", ""
    context = f"{best.get('name', '')} ({best.get('id', '')}, similarity " \
              f"{best.get('similarity', 0):.2f})"
    if not match.get("matched", True):
        context = "unmatched; nearest: " + context
    return description or best.get("name", ""), context


def _expression_groups(inputs: _Inputs, start: int, end: int):
    """[(group label, [(context label, value or None, note)])]: one group per gene (find-genes)
    or per scored TSS (expression results)."""
    groups: Dict[str, List[Tuple[Tuple[str, str], Optional[float], str]]] = {}
    frame = inputs.frame
    for result in inputs.expression or []:
        label = _context_label(result)
        if result.task == "expression":
            tss = (result.data.get("input") or {}).get("tss_index")
            key = f"TSS at {frame.offset + int(tss) + 1:,}" if tss is not None else "TSS"
            value = (result.prediction or {}).get("expression")
            groups.setdefault(key, []).append((label, value, ""))
            continue
        for gene in result.expression_predictions:
            tss = int(gene.get("tss_position", 0))
            if frame.offset and tss >= frame.length:
                tss -= frame.offset  # shift_coordinates: back into the record
            if not start <= tss < end:
                continue
            key = f"{gene.get('gene_name')} ({gene.get('strand')}), TSS {frame.offset + tss + 1:,}"
            note = gene.get("skip_reason") or "skipped" if gene.get("skipped") else ""
            groups.setdefault(key, []).append((label, gene.get("expression"), note))
    return list(groups.items())


def _draw_expression(ax, inputs: _Inputs, frame: RecordFrame, start: int, end: int) -> None:
    groups = _expression_groups(inputs, start, end)
    models = sorted({r.model or r.data.get("expression_model") or ""
                     for r in inputs.expression or []} - {""})
    _panel_title(ax, f"expression ({', '.join(models)}): predicted log(TPM+1) per context"
                 + ("" if len(groups) < 2 else f", {len(groups)} genes"))
    if not groups:
        ax.set_yticks([])
        _no_data(ax, "no gene with its TSS in this region")
        return
    labels: List[str] = []
    y = 0.0
    ticks: List[float] = []
    contexts: Dict[str, str] = {}
    peak = 0.0
    for group_label, bars in groups:
        for (asked, context), value, note in bars:
            colour = contexts.setdefault(asked, BAR_COLOURS[len(contexts) % len(BAR_COLOURS)])
            if value is not None:
                ax.barh(y, value, height=0.75, color=colour)
                peak = max(peak, value)
            text = f" {value:.2f}" if value is not None else f" {note or 'not scored'}"
            ax.text(value or 0, y, text + (f"   {context}" if context else ""), va="center",
                    ha="left", fontsize=7, color="#222222" if value is not None else "#777777")
            ticks.append(y)
            labels.append(_shorten(asked, 30) if len(groups) == 1
                          else _shorten(f"{group_label.split(' ')[0]} · {asked}", 30))
            y += 1
        y += 0.6  # a gap between genes
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=7.5)
    ax.set_ylim(y - 0.6 - 0.5, -0.6)
    ax.set_xlim(0, max(1.0, peak * 1.6))  # room for the context after the longest bar
    ax.set_xlabel("predicted expression, log(TPM+1)"
                  + (f"  ·  {groups[0][0]}" if len(groups) == 1 else ""), fontsize=8.5)
    ax.tick_params(axis="x", labelsize=8)
