// What the viewer's headless-Chromium tests (viewer_test.js, viewer_genome_test.js) share:
// argument parsing, the check log, and the measurements they take of igv.js's canvases.
"use strict";

// --name value pairs; the chromium binary defaults to Debian's. Throws on a missing `required`.
function parseArgs(argv, required) {
  const args = { chromium: "/usr/bin/chromium" };
  for (let i = 2; i < argv.length; i += 2) args[argv[i].replace(/^--/, "")] = argv[i + 1];
  for (const name of required) {
    if (!args[name]) throw new Error("missing --" + name);
  }
  return args;
}

// Every check is printed; the failed ones are kept for the exit status.
const failures = [];
function check(condition, what) {
  console.log((condition ? "ok   " : "FAIL ") + what);
  if (!condition) failures.push(what);
}

// Runs one part of a test; an exception fails that part and the test goes on.
async function section(name, body) {
  try {
    await body();
  } catch (error) {
    check(false, name + ": " + String(error.message || error).split("\n")[0]);
  }
}

async function settle() { await new Promise((r) => setTimeout(r, 1500)); } // igv draws on frames

// Pixels of each of `colours` ({name: [r, g, b]}) on igv's canvases, within 12 per channel.
async function colourCounts(page, colours) {
  return page.evaluate((colours) => {
    const counts = Object.fromEntries(Object.keys(colours).map((k) => [k, 0]));
    // igv.js 3 renders into a shadow root on its container.
    for (const canvas of document.getElementById("igv").shadowRoot.querySelectorAll("canvas")) {
      if (!canvas.width || !canvas.height) continue;
      const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
      for (let i = 0; i < pixels.length; i += 4) {
        if (pixels[i + 3] < 200) continue;
        for (const [name, [r, g, b]] of Object.entries(colours)) {
          if (Math.abs(pixels[i] - r) < 12 && Math.abs(pixels[i + 1] - g) < 12 &&
              Math.abs(pixels[i + 2] - b) < 12) counts[name]++;
        }
      }
    }
    return counts;
  }, colours);
}

// Visible track labels, and those lying over pixels of any of `colours`: a label must not cover
// a feature.
async function labelsOverFeatures(page, colours) {
  return page.evaluate((colours) => {
    const root = document.getElementById("igv").shadowRoot;
    const covered = [];
    let labels = 0;
    for (const label of root.querySelectorAll(".igv-track-label")) {
      if (!label.textContent || label.getClientRects().length === 0 ||
          getComputedStyle(label).display === "none") continue;
      labels++;
      const lr = label.getBoundingClientRect();
      for (const canvas of label.parentElement.querySelectorAll("canvas")) {
        const cr = canvas.getBoundingClientRect();
        if (!canvas.width || !cr.width || !cr.height) continue;
        const sx = canvas.width / cr.width, sy = canvas.height / cr.height;
        const x0 = Math.max(0, Math.floor((lr.left - cr.left) * sx));
        const x1 = Math.min(canvas.width, Math.ceil((lr.right - cr.left) * sx));
        const y0 = Math.max(0, Math.floor((lr.top - cr.top) * sy));
        const y1 = Math.min(canvas.height, Math.ceil((lr.bottom - cr.top) * sy));
        if (x1 <= x0 || y1 <= y0) continue;
        const pixels = canvas.getContext("2d").getImageData(x0, y0, x1 - x0, y1 - y0).data;
        let count = 0;
        for (let i = 0; i < pixels.length; i += 4) {
          if (pixels[i + 3] < 200) continue;
          for (const [r, g, b] of Object.values(colours)) {
            if (Math.abs(pixels[i] - r) < 12 && Math.abs(pixels[i + 1] - g) < 12 &&
                Math.abs(pixels[i + 2] - b) < 12) { count++; break; }
          }
        }
        if (count) covered.push(label.textContent + " covers " + count + " px");
      }
    }
    return { labels, covered };
  }, colours);
}

// What igv's locus box says (null before igv is up).
async function locusBox(page) {
  return page.evaluate(() => {
    const root = document.getElementById("igv").shadowRoot;
    const input = root && root.querySelector(".igv-search-input");
    return input ? input.value : null;
  });
}

module.exports = { parseArgs, failures, check, section, settle, colourCounts, labelsOverFeatures,
                   locusBox };
