"""Checks a figure `dnaserve plot` wrote against the results it drew (saved with --save-json).

    check_plot.py FIGURE.png RESULTS.jsonl --width 1400 --height 900 [--tasks ...]

The same results are laid out again with dnaserve_client.plot (the layout is deterministic) to
learn where each feature lands, then the PNG's pixels are read there: every splice site has a
stem of its type's colour at its position, every CDS a box of its strand's colour, the top
chromatin feature a coloured cell in a window reporting it, and each expression bar colour at
half its value. Prints what it checked as JSON; exits 1 on the first mismatch.
tests/integration/clients_test.cpp runs it on the CLI's output; test_plot.py uses its helpers.
"""

import argparse
import json
import sys

import matplotlib.image as mpimg

from dnaserve_client.plot import (ACCEPTOR_COLOUR, DONOR_COLOUR, STRAND_COLOURS, RecordFrame,
                                  panels, plot_results)


def rgb(hex_colour):
    return tuple(int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))


def pixel(fig, ax, x, y):
    """(column, row) of a data point in the saved PNG (rows count from the top)."""
    dx, dy = ax.transData.transform((x, y))
    return int(round(dx)), int(fig.bbox.height - dy)


def near(image, column, row, colour, radius=2, tolerance=0.12):
    """Whether a pixel within `radius` columns of (column, row) has the colour."""
    for c in range(column - radius, column + radius + 1):
        if all(abs(image[row, c, i] - colour[i]) <= tolerance for i in range(3)):
            return True
    return False


def is_background(value):
    return all(channel > 0.97 for channel in value[:3])


class Mismatch(Exception):
    pass


def check(image, fig, results, frame):
    """What was checked, by panel; raises Mismatch where the image disagrees with results."""
    found = panels(fig)
    checked = {}
    by_task = {}
    for result in results:
        by_task.setdefault(result["data"]["task"], []).append(result["data"])
    if "splice" in found:
        colours = {"donor": rgb(DONOR_COLOUR), "acceptor": rgb(ACCEPTOR_COLOUR)}
        sites = by_task["splice"][0]["sites"]
        ax = found["splice"]
        columns = [pixel(fig, ax, frame.offset + (s["start"] + s["end"]) / 2, 0)[0]
                   for s in sites]
        for site, column in zip(sites, columns):
            if site["score"] <= 0.05:
                continue  # a stem shorter than its marker
            _, row = pixel(fig, ax, 0, site["score"] / 2)
            # Sites a few pixels apart share columns and markers: any of their colours will do.
            allowed = {colours[other["type"]] for other, c in zip(sites, columns)
                       if abs(c - column) <= 4 and other["score"] >= site["score"] / 2 - 0.05}
            if not any(near(image, column, row, colour) for colour in allowed):
                raise Mismatch(f"no {site['type']} stem at {frame.offset + site['start']} "
                               f"(pixel {column},{row})")
        checked["splice_sites"] = len(sites)
    if "annotation" in found:
        annotation = (by_task.get("annotation") or
                      [d["annotation"] for d in by_task["find_genes_and_predict_expression"]])[0]
        boxes = 0
        # A lone transcript is drawn in row 0; with several, the rows are the packer's choice.
        if len(annotation["transcripts"]) == 1:
            t = annotation["transcripts"][0]
            for cds in t["cds"]:
                if cds["end"] - cds["start"] < 20:
                    continue
                x = frame.offset + (cds["start"] + cds["end"]) / 2
                column, row = pixel(fig, found["annotation"], x, 0.2)
                if not near(image, column, row, rgb(STRAND_COLOURS[t["strand"]]), radius=1):
                    raise Mismatch(f"no CDS box at {x} (pixel {column},{row})")
                boxes += 1
        checked["cds_boxes"] = boxes
    if "chromatin" in found:
        windows = by_task["chromatin"][0]["windows"]
        best = {}
        for w in windows:
            for features in w["features"].values():
                for f in features:
                    best[f["name"]] = max(best.get(f["name"], 0.0), f["probability"])
        cells = 0
        if best:
            top = sorted(best, key=lambda n: (-best[n], n))[0]
            for w in windows:
                if any(f["name"] == top for fs in w["features"].values() for f in fs):
                    x = frame.offset + (w["start"] + w["end"]) / 2
                    column, row = pixel(fig, found["chromatin"], x, 0.5)
                    if is_background(image[row, column]):
                        raise Mismatch(f"no heatmap cell for {top} at {x}")
                    cells += 1
        checked["heatmap_cells"] = cells
    if "expression" in found:
        bars = 0
        for y, patch in enumerate(found["expression"].patches):
            width = patch.get_width()
            if width > 0.02:
                column, row = pixel(fig, found["expression"], width / 2, patch.get_y() +
                                    patch.get_height() / 2)
                if is_background(image[row, column]):
                    raise Mismatch(f"expression bar {y} is not drawn")
                bars += 1
        checked["expression_bars"] = bars
    return checked


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("figure")
    parser.add_argument("results")
    parser.add_argument("--width", type=int, required=True)
    parser.add_argument("--height", type=int, required=True)
    parser.add_argument("--tasks")
    args = parser.parse_args()
    with open(args.results) as handle:
        results = [json.loads(line) for line in handle if line.strip()]
    image = mpimg.imread(args.figure)
    if image.shape[:2] != (args.height, args.width):
        print(f"size {image.shape[1]} x {image.shape[0]}, expected {args.width} x "
              f"{args.height}", file=sys.stderr)
        return 1
    fig = plot_results(results, tasks=args.tasks.split(",") if args.tasks else None,
                       figsize=(args.width / 100, args.height / 100), dpi=100)
    name = results[0]["data"]["input"]["sequence_name"]
    length = max(int(r["meta"].get("sequence_length") or 0) for r in results)
    try:
        checked = check(image, fig, results, RecordFrame.from_name(name, length))
    except Mismatch as e:
        print(f"mismatch: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"width": args.width, "height": args.height, "checked": checked}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
