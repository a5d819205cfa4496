#!/usr/bin/env python3
"""The Python peer of dnaserve-bench: the same model.pt and the same window tensors, from Python.

dnaserve-bench records the forward calls the worker's runner makes and writes them as
<prefix>.bin (int64 ids, back to back) and <prefix>.json ({"model", "threads", "reps", "calls":
[[{"offset", "shape"}, ...], ...]}). This script loads the model with torch.jit.load (Debian's
python3-torch, the same LibTorch build the worker links), runs every call once as a warm-up, then
`reps` timed rounds over all calls under torch.inference_mode, and prints one JSON object:
{"median_s", "all_s", "load_s", "calls", "threads"}.
"""

import argparse
import json
import statistics
import sys
import time

import numpy
import torch


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--data", required=True)
    args = parser.parse_args()
    with open(args.index, encoding="utf-8") as handle:
        index = json.load(handle)
    torch.set_num_threads(max(1, int(index["threads"])))
    ids = numpy.fromfile(args.data, dtype="<i8")
    calls = []
    for call in index["calls"]:
        tensors = []
        for item in call:
            count = 1
            for d in item["shape"]:
                count *= d
            chunk = ids[item["offset"]:item["offset"] + count]
            tensors.append(torch.from_numpy(chunk.copy()).reshape(item["shape"]))
        calls.append(tensors)

    started = time.perf_counter()
    module = torch.jit.load(index["model"])
    module.eval()
    load_s = time.perf_counter() - started

    timings = []
    with torch.inference_mode():
        for tensors in calls:  # warm-up, as the C++ side does
            module(*tensors)
        for _ in range(max(1, int(index["reps"]))):
            started = time.perf_counter()
            for tensors in calls:
                module(*tensors)
            timings.append(time.perf_counter() - started)
    json.dump({"median_s": statistics.median(timings), "all_s": timings, "load_s": load_s,
               "calls": len(calls), "threads": torch.get_num_threads()}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
