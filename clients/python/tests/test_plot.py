"""Figures of real results (no service needed): the panels are rendered to PNG and their pixels
checked where the results put features (and where they do not), SVG and PDF are parsed, the CLI
draws saved results, and the SDK without matplotlib says what to install.

The fixtures are results of the real service on real GRCh37 chr20 sequence, captured once with
capture_plot_fixtures.py (chr20:31012001-31024000: every panel) and `dnaserve plot --save-json`
(20:32020001-32034000: a promoter region), without the per-base tracks the figures do not use.
"""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

pytest.importorskip("matplotlib")

import matplotlib.image as mpimg  # noqa: E402

from check_plot import Mismatch, check, is_background, near, pixel, rgb  # noqa: E402
from dnaserve_client import cli  # noqa: E402
from dnaserve_client.plot import (ACCEPTOR_COLOUR, DONOR_COLOUR, STRAND_COLOURS,  # noqa: E402
                                  RecordFrame, panels, plot_results, save_figure)

HERE = os.path.dirname(os.path.abspath(__file__))
GENE = os.path.join(HERE, "fixtures", "chr20_31012001-31024000.jsonl")
PROMOTER = os.path.join(HERE, "fixtures", "chr20_32020001-32034000.promoter.json")
OFFSET = 31012000  # the gene record's first base, 0-based on chr20


def load(path):
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def of_task(results, task):
    return [r for r in results if r["data"]["task"] == task]


def render(fig, tmp_path, name="figure.png"):
    path = str(tmp_path / name)
    save_figure(fig, path)
    return mpimg.imread(path)


@pytest.fixture(scope="module")
def gene_results():
    return load(GENE)


@pytest.mark.parametrize("width,height", [(1400, 900), (1024, 768)])
def test_png_has_the_asked_size_and_every_panel(gene_results, tmp_path, width, height):
    fig = plot_results(gene_results, figsize=(width / 100, height / 100), dpi=100)
    image = render(fig, tmp_path)
    assert image.shape[:2] == (height, width)
    assert list(panels(fig)) == ["promoter", "splice", "chromatin", "annotation", "expression"]
    # The panels do not overlap one another.
    boxes = sorted((ax.get_window_extent() for ax in panels(fig).values()), key=lambda b: -b.y1)
    for upper, lower in zip(boxes, boxes[1:]):
        assert lower.y1 < upper.y0


def test_splice_stems_stand_exactly_at_the_predicted_sites(gene_results, tmp_path):
    fig = plot_results(gene_results)
    image = render(fig, tmp_path)
    ax = panels(fig)["splice"]
    sites = of_task(gene_results, "splice")[0]["data"]["sites"]
    assert len(sites) == 17
    colours = {"donor": rgb(DONOR_COLOUR), "acceptor": rgb(ACCEPTOR_COLOUR)}
    columns = []
    for site in sites:
        x = OFFSET + (site["start"] + site["end"]) / 2
        column, row = pixel(fig, ax, x, site["score"] / 2)
        assert near(image, column, row, colours[site["type"]]), site
        columns.append(column)
    # Nowhere else: every site-coloured pixel of the stems' band lies at a site.
    _, top = pixel(fig, ax, OFFSET, 0.5)
    _, bottom = pixel(fig, ax, OFFSET, 0.1)
    left, _ = pixel(fig, ax, OFFSET, 0)
    right, _ = pixel(fig, ax, OFFSET + 12000, 0)
    for column in range(left + 2, right - 2):
        for row in range(top, bottom, 4):
            if any(near(image, column, row, colour, radius=0) for colour in colours.values()):
                assert min(abs(column - c) for c in columns) <= 2, (column, row)


def test_promoter_score_steps_and_shaded_region(tmp_path):
    results = load(PROMOTER)
    data = results[0]["data"]
    fig = plot_results(results)
    image = render(fig, tmp_path)
    ax = panels(fig)["promoter"]
    offset = 32020000
    best = max(data["window_details"], key=lambda w: w["score"])
    centre = offset + (best["start"] + best["end"]) / 2
    filled = image[pixel(fig, ax, centre, best["score"] - 0.08)[::-1]]
    above = image[pixel(fig, ax, centre, best["score"] + 0.04)[::-1]]
    assert not is_background(filled) and not is_background(above)  # the region is shaded
    assert filled[:3].sum() < above[:3].sum() - 0.15  # the score's fill is darker
    # Far from the region: a score near 0 leaves the panel white above it.
    first = data["window_details"][0]
    assert first["score"] < 0.05
    assert is_background(image[pixel(fig, ax, offset + 1000, 0.3)[::-1]])
    region = data["regions"][0]
    assert not is_background(image[pixel(fig, ax, offset + region["start"] + 100, 0.6)[::-1]])


def test_chromatin_heatmap_rows_are_the_top_features(gene_results, tmp_path):
    windows = of_task(gene_results, "chromatin")[0]["data"]["windows"]
    best = {}
    for w in windows:
        for features in w["features"].values():
            for f in features:
                best[f["name"]] = max(best.get(f["name"], 0), f["probability"])
    expected = sorted(best, key=lambda n: (-best[n], n))[:5]
    fig = plot_results(gene_results, top_features=5)
    image = render(fig, tmp_path)
    ax = panels(fig)["chromatin"]
    labels = [label.get_text().rstrip("…") for label in ax.get_yticklabels()]
    assert len(labels) == 5
    for label, name in zip(labels, expected):
        assert name.startswith(label) or name.replace("|None", "").startswith(label)
    # Row 0: coloured in a window reporting the top feature, white in one that does not.
    top = expected[0]
    reported = [w for w in windows for fs in w["features"].values() for f in fs
                if f["name"] == top]
    silent = [w for w in windows if not any(f["name"] == top for fs in w["features"].values()
                                            for f in fs)]
    centre = reported[0]
    assert not is_background(image[pixel(fig, ax, OFFSET + (centre["start"] + centre["end"]) / 2,
                                          0.5)[::-1]])
    far = max(silent, key=lambda w: min(abs(w["start"] - r["start"]) for r in reported))
    assert is_background(image[pixel(fig, ax, OFFSET + (far["start"] + far["end"]) / 2,
                                     0.5)[::-1]])


def test_gene_model_boxes_follow_exons_and_cds(gene_results, tmp_path):
    transcript = of_task(gene_results, "annotation")[0]["data"]["transcripts"][0]
    fig = plot_results(gene_results)
    image = render(fig, tmp_path)
    ax = panels(fig)["annotation"]
    colour = rgb(STRAND_COLOURS[transcript["strand"]])
    for cds in transcript["cds"]:
        column, row = pixel(fig, ax, OFFSET + (cds["start"] + cds["end"]) / 2, 0.2)
        assert near(image, column, row, colour, radius=1), cds
    for intron in transcript["introns"]:
        if intron["end"] - intron["start"] < 300:
            continue
        column, row = pixel(fig, ax, OFFSET + (intron["start"] + intron["end"]) / 2, 0.2)
        assert is_background(image[row, column]), intron
    # A UTR exon (exon, no CDS): a thin box, coloured at 0.1 from the line, white at 0.2.
    first = transcript["exons"][0]
    assert transcript["cds"][0]["start"] > first["end"]
    x = OFFSET + (first["start"] + first["end"]) / 2
    assert not is_background(image[pixel(fig, ax, x, 0.1)[::-1]])
    assert is_background(image[pixel(fig, ax, x, 0.2)[::-1]])


def test_expression_bars_one_per_context(gene_results, tmp_path):
    found = of_task(gene_results, "find_genes_and_predict_expression")
    fig = plot_results(gene_results)
    image = render(fig, tmp_path)
    ax = panels(fig)["expression"]
    values = [r["data"]["expression_predictions"][0]["expression"] for r in found]
    assert [round(p.get_width(), 6) for p in ax.patches] == [round(v, 6) for v in values]
    assert [t.get_text() for t in ax.get_yticklabels()] == \
        [r["data"]["input"]["description"] for r in found]
    for y, value in enumerate(values):
        assert not is_background(image[pixel(fig, ax, value * 0.5, y)[::-1]])
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "Liver (E066" in texts  # the matched context is named


def test_region_zooms_and_bad_regions_say_why(gene_results):
    fig = plot_results(gene_results, region="chr20:31016001-31020000")
    assert panels(fig)["splice"].get_xlim() == (31016000, 31020000)
    fig = plot_results(gene_results, region="4001-8000")
    assert panels(fig)["splice"].get_xlim() == (31016000, 31020000)
    inside = [s for s in of_task(gene_results, "splice")[0]["data"]["sites"]
              if s["end"] > 4000 and s["start"] < 8000]
    donors = sum(s["type"] == "donor" for s in inside)
    assert 0 < donors < len(inside) < 17
    title = panels(fig)["splice"].get_title(loc="left")
    # Only the sites inside the region are counted.
    assert f"{donors} donor, {len(inside) - donors} acceptor" in title
    with pytest.raises(ValueError, match="not on chr7"):
        plot_results(gene_results, region="chr7:1-100")
    with pytest.raises(ValueError, match="outside the record"):
        plot_results(gene_results, region="chr20:31023001-31025000")
    with pytest.raises(ValueError, match="START-END"):
        plot_results(gene_results, region="the middle")


def test_record_frame_from_names():
    frame = RecordFrame.from_name("chr20:31,012,001-31,024,000", 12000)
    assert (frame.contig, frame.offset) == ("chr20", 31012000)
    assert frame.parse_region("chr20:31012001-31012100") == (0, 100)
    assert RecordFrame.from_name("chr20:1-10", 99).contig is None  # the length disagrees
    whole = RecordFrame.from_name("20", 1000)
    assert whole.parse_region("20:11-20") == (10, 20)
    assert whole.sub_name(10, 20) == "20:11-20"


def test_svg_is_xml_and_pdf_is_pdf(gene_results, tmp_path):
    fig = plot_results(gene_results, tasks=["splice", "annotation"])
    svg, pdf = str(tmp_path / "f.svg"), str(tmp_path / "f.pdf")
    assert save_figure(fig, svg) == "svg" and save_figure(fig, pdf) == "pdf"
    root = ElementTree.parse(svg).getroot()
    assert root.tag.endswith("svg") and root.get("width") == "1008pt"  # 14 in at 72 pt/in
    with open(pdf, "rb") as handle:
        content = handle.read()
    assert content.startswith(b"%PDF-") and content.rstrip().endswith(b"%%EOF")
    with pytest.raises(ValueError, match=".png, .svg or .pdf"):
        save_figure(fig, str(tmp_path / "f.jpg"))


def test_tasks_choose_panels_and_missing_ones_are_named(gene_results):
    assert list(panels(plot_results(gene_results, tasks=["splice"]))) == ["splice"]
    with pytest.raises(ValueError, match="no panel named enhancer"):
        plot_results(gene_results, tasks=["enhancer"])
    with pytest.raises(ValueError, match="no promoter result"):
        plot_results(of_task(gene_results, "splice"), tasks=["promoter"])
    with pytest.raises(ValueError, match="several records"):
        plot_results(gene_results + load(PROMOTER))


def test_cli_draws_saved_results_without_a_service(tmp_path, monkeypatch, capsys):
    for name in ("DNASERVE_URL", "DNASERVE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    out = str(tmp_path / "fig.png")
    assert cli.main(["plot", "--from-json", GENE, "--tasks", "promoter,splice", "--width",
                     "1024", "--height", "768", "-o", out]) == 0
    assert mpimg.imread(out).shape[:2] == (768, 1024)
    # Two records in the input: the user is told to choose one.
    both = str(tmp_path / "both.jsonl")
    with open(both, "w") as handle:
        handle.write(open(GENE).read() + open(PROMOTER).read())
    capsys.readouterr()
    assert cli.main(["plot", "--from-json", both, "-o", out]) == 2
    assert "choose it with --record" in capsys.readouterr().err
    assert cli.main(["plot", "--from-json", both, "--record", "20:32020001-32034000", "-o",
                     out]) == 0
    assert cli.main(["plot", "--from-json", GENE, "-o", str(tmp_path / "fig.gif")]) == 2
    assert cli.main(["plot", "--from-json", GENE, "--tasks", "splice", "--region", "chr7:1-5",
                     "-o", out]) == 2
    assert "not on chr7" in capsys.readouterr().err


def test_without_matplotlib_the_sdk_works_and_plot_says_what_to_install(tmp_path):
    # matplotlib made unimportable in a fresh interpreter.
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "import dnaserve_client\n"
            "from dnaserve_client import Client, cli\n"
            "try:\n"
            "    import dnaserve_client.plot\n"
            "except ImportError as e:\n"
            "    print('IMPORT:', e)\n"
            f"sys.exit(cli.main(['plot', '--from-json', {GENE!r}, '-o', "
            f"{str(tmp_path / 'x.png')!r}]))\n")
    env = dict(os.environ, DNASERVE_URL="", DNASERVE_API_KEY="")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=str(tmp_path))
    assert done.returncode == 3, done.stderr
    assert "IMPORT: dnaserve plot needs matplotlib" in done.stdout
    assert "python3-matplotlib" in done.stderr and "--system-site-packages" in done.stderr
    assert not os.path.exists(tmp_path / "x.png")


def test_the_cli_checker_finds_a_feature_drawn_elsewhere(gene_results, tmp_path):
    # check_plot.py (run on the CLI's figures by the integration test) passes on a true figure
    # and fails when the results say a site is somewhere the figure has none.
    fig = plot_results(gene_results)
    image = render(fig, tmp_path)
    frame = RecordFrame.from_name("chr20:31012001-31024000", 12000)
    checked = check(image, fig, gene_results, frame)
    cds = of_task(gene_results, "annotation")[0]["data"]["transcripts"][0]["cds"]
    assert checked["splice_sites"] == 17 and checked["expression_bars"] == 3
    assert checked["cds_boxes"] == sum(1 for c in cds if c["end"] - c["start"] >= 20) > 0
    assert checked["heatmap_cells"] > 0
    moved = json.loads(json.dumps(gene_results))
    site = of_task(moved, "splice")[0]["data"]["sites"][0]
    site["start"] += 1000
    site["end"] += 1000
    with pytest.raises(Mismatch, match="stem"):
        check(image, fig, moved, frame)


def test_annotation_already_on_the_contig_is_drawn_in_place(gene_results, tmp_path):
    # An annotation requested with shift_coordinates=UCSC reports contig positions: the gene
    # model must land where the record-relative one does.
    shifted = json.loads(json.dumps(gene_results))
    for t in of_task(shifted, "annotation")[0]["data"]["transcripts"]:
        for key in ("start", "end", "tss_position", "polya_position"):
            t[key] += OFFSET
        for key in ("exons", "introns", "cds"):
            t[key] = [{"start": s["start"] + OFFSET, "end": s["end"] + OFFSET} for s in t[key]]
    fig = plot_results(shifted, tasks=["annotation"])
    image = render(fig, tmp_path)
    frame = RecordFrame.from_name("chr20:31012001-31024000", 12000)
    assert check(image, fig, gene_results, frame)["cds_boxes"] > 0
