#!/usr/bin/env node
// Drives Debian's chromium (headless) through the gateway's /viewer page's locus and variant
// boxes, as a person would, against a gateway whose runner holds GRCh37 chr20:
//  - locus: a malformed region is refused by the page; an impossible one (start after end, an
//    unknown contig) gets the service's reason in plain words and draws nothing; a real region
//    runs promoter, splice and annotation by interval and draws them at their genome coordinates
//    on the named contig (the locus box reads chr20:5,750,001-5,760,000 and the tracks' pixels are
//    there); strand '-' too;
//  - variants: one SNV the reference agrees with and one REF mismatch, scored by splice,
//    expression (one matched and one unmatched context) and chromatin: the scored one drawn as
//    REF, ALT and ALT - REF tracks around it with its DS/DP deltas named, the scorers' models
//    shown, expression REF/ALT levels and chromatin's top features listed, the mismatch said in
//    plain words, the unmatched context warned of;
//  - a 1400x900 screenshot of each, laid out without overlap, labels clear of features.
// No page error, no request off the gateway's origin, no console error but the failed-request
// lines of the two impossible regions. Exit status 0 when every check holds.
//
//   node viewer_genome_test.js --url http://127.0.0.1:PORT --key KEY --variant chr20:P:R:A \
//        --mismatch chr20:P:R:A --screenshot-dir DIR [--chromium /usr/bin/chromium]
"use strict";

const path = require("path");
const puppeteer = require("puppeteer-core");
const { parseArgs, failures, check, section, settle, colourCounts, labelsOverFeatures,
        locusBox } = require("./page_checks");

const LOCUS_COLOURS = { promoter: [214, 39, 40], score: [140, 140, 140], splice: [148, 103, 189],
                        annotation: [31, 119, 180] };
const VARIANT_COLOURS = { variant: [40, 40, 40], ref: [31, 119, 180], alt: [214, 39, 40],
                          delta: [148, 103, 189], deltas: [255, 127, 14] };

async function setMode(page, mode) {
  await page.click('input[name="mode"][value="' + mode + '"]');
}

async function setValue(page, selector, value) {
  await page.$eval(selector, (el, value) => {
    el.value = value;
    el.dispatchEvent(new Event("input"));
  }, value);
}

async function setChecked(page, selector, names) {
  await page.$$eval(selector, (inputs, names) => {
    for (const input of inputs) input.checked = names.includes(input.value);
  }, names);
}

// Presses Run and waits for the page to finish (done or error); what it then shows.
async function run(page) {
  await page.evaluate(() => {
    window.dnaserveViewer.status = "starting";
    document.getElementById("message").className = "";
  });
  await page.click("#run");
  await page.waitForFunction(() => ["done", "error"].includes(window.dnaserveViewer.status),
                             { timeout: 240000, polling: 200 });
  return page.evaluate(() => ({
    status: window.dnaserveViewer.status,
    tracks: window.dnaserveViewer.tracks,
    errors: window.dnaserveViewer.errors,
    variants: window.dnaserveViewer.variants,
    message: document.getElementById("message").textContent,
    messageClass: document.getElementById("message").className,
    drawn: !!document.getElementById("igv").shadowRoot &&
           document.getElementById("igv").shadowRoot.querySelectorAll("canvas").length > 0,
  }));
}

// No overlap between inputs, tracks and side panel, no sideways scrolling, the Run button on
// screen, labels clear of features; then the screenshot.
async function checkLayoutAndShoot(page, file, colours, extra) {
  await page.setViewport({ width: 1400, height: 900 });
  await settle();
  const layout = await page.evaluate((extra) => {
    const rect = (id) => document.getElementById(id).getBoundingClientRect().toJSON();
    const out = { scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
                  innerHeight: window.innerHeight, controls: rect("controls"), igv: rect("igv"),
                  side: rect("side"), run: rect("run") };
    if (extra) out.extra = rect(extra);
    return out;
  }, extra);
  const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const name = path.basename(file);
  check(layout.scrollWidth <= layout.innerWidth, name + ": no sideways scrolling (" + layout.scrollWidth + " px)");
  check(layout.igv.width >= 600, name + ": the tracks are " + Math.round(layout.igv.width) + " px wide");
  check(!overlap(layout.controls, layout.igv) && !overlap(layout.controls, layout.side) &&
        !overlap(layout.igv, layout.side), name + ": inputs, tracks and side panel do not overlap");
  if (layout.extra) {
    check(!overlap(layout.extra, layout.igv) && !overlap(layout.extra, layout.side) &&
          !overlap(layout.extra, layout.controls) && layout.extra.top < layout.innerHeight,
          name + ": #" + extra + " overlaps nothing and starts on screen (" + Math.round(layout.extra.top) + " px)");
  }
  check(layout.run.bottom <= layout.innerHeight, name + ": the Run button is on screen");
  const labels = await labelsOverFeatures(page, colours);
  check(labels.labels >= 3 && labels.covered.length === 0,
        name + ": " + labels.labels + " track labels, none over a feature: " + labels.covered.join(", "));
  await page.screenshot({ path: file });
}

function withCommas(n) { return n.toLocaleString("en-US"); }

async function main() {
  const args = parseArgs(process.argv, ["url", "key", "variant", "mismatch", "screenshot-dir"]);
  const origin = new URL(args.url).origin;
  const browser = await puppeteer.launch({
    executablePath: args.chromium,
    headless: true,
    // --no-sandbox: tests may run as root, where chromium's sandbox refuses to start.
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-default-apps", "--hide-scrollbars"],
    defaultViewport: { width: 1400, height: 900 },
  });
  const offOrigin = [];
  const pageErrors = [];
  const consoleErrors = [];
  try {
    const page = await browser.newPage();
    page.on("request", (request) => {
      const url = request.url();
      if (!url.startsWith(origin + "/") && !url.startsWith("data:") && !url.startsWith("blob:")) offOrigin.push(url);
    });
    page.on("pageerror", (error) => pageErrors.push(String(error)));
    page.on("console", (message) => {
      if (message.type() !== "error") return;
      console.log("console: " + message.text());
      consoleErrors.push(message.text());
    });
    await page.evaluateOnNewDocument(() => {
      window.__cspViolations = [];
      document.addEventListener("securitypolicyviolation", (e) =>
        window.__cspViolations.push(e.blockedURI + " " + e.violatedDirective));
    });
    const response = await page.goto(origin + "/viewer", { waitUntil: "networkidle0" });
    check(response.status() === 200, "GET /viewer is 200");
    await page.$eval("#api-key", (el, key) => { el.value = key; el.dispatchEvent(new Event("input")); }, args.key);

    // ---- locus ----
    await setMode(page, "locus");
    const shown = await page.evaluate(() => ({
      locus: document.getElementById("locus").getClientRects().length > 0,
      fasta: document.getElementById("fasta").getClientRects().length > 0,
      tasks: document.getElementById("tasks").getClientRects().length > 0 }));
    check(shown.locus && !shown.fasta && shown.tasks, "the locus mode shows the locus box and the tasks, not the FASTA: " +
          JSON.stringify(shown));
    await setChecked(page, ".task input", ["promoter", "splice", "annotation"]);
    await page.$eval("#threshold", (el) => { el.value = "0"; });

    await section("malformed region", async () => {
      const before = consoleErrors.length;
      await setValue(page, "#locus", "chr20 5750001");
      const bad = await run(page);
      check(bad.status === "error" && bad.messageClass === "error" && /is not a region/.test(bad.message) &&
            /chr20:5,750,001-5,760,000/.test(bad.message),
            "a malformed region is refused with the forms to type: " + bad.message);
      check(consoleErrors.length === before, "no request and no console error for it");
    });
    let impossibleRequests = 0;
    await section("impossible regions", async () => {
      await setValue(page, "#locus", "chr20:5,760,000-5,750,001");
      const backwards = await run(page);
      impossibleRequests++;
      check(backwards.status === "error" && backwards.messageClass === "error" &&
            /start 5760000 is after end 5750001/.test(backwards.message) && /interval\.region/.test(backwards.message) &&
            /^The service refused chr20:5,760,000-5,750,001/.test(backwards.message),
            "start after end gets the service's reason, once: " + backwards.message);
      check(backwards.message.split("after end").length === 2, "the reason is said once for the three tasks");
      check(!backwards.drawn, "nothing is drawn for it");
      await setValue(page, "#locus", "chr99:1-10,000");
      const unknown = await run(page);
      impossibleRequests++;
      check(unknown.status === "error" && /chr99/.test(unknown.message) && /contig/.test(unknown.message),
            "an unknown contig gets the service's reason: " + unknown.message);
    });

    const start = 5750001, end = 5760000;
    await section("locus", async () => {
      await setValue(page, "#locus", "chr20:5,750,001-5,760,000");
      const good = await run(page);
      check(good.status === "done", "promoter, splice and annotation ran on the locus: " + good.message);
      for (const task of ["promoter", "splice", "annotation"]) {
        check(good.tracks[task] && good.tracks[task].features > 0,
              task + " has features: " + JSON.stringify(good.tracks[task]));
      }
      await settle();
      const locus = await locusBox(page);
      check(locus === "chr20:" + withCommas(start) + "-" + withCommas(end),
            "the locus box shows the region on chr20: " + locus);
      // The features igv holds, read back from its tracks: every one on chr20 inside the region.
      const features = await page.evaluate(async () => {
        const out = {};
        for (const track of window.dnaserveViewer.browser.findTracks((t) => t.type === "annotation" || t.type === "wig")) {
          // A wig track's source holds its rows as read; getFeatures would summarise them.
          const source = track.featureSource;
          const list = track.type === "wig" && source.getFeatures
            ? await source.getFeatures({ chr: "chr20", start: 0, end: 1e9 })
            : await track.getFeatures("chr20", 0, 1e9);
          out[track.name] = { n: list.length, chr: [...new Set(list.map((f) => f.chr))], keys: Object.keys(list[0] || {}),
                              min: Math.min(...list.map((f) => f.start)), max: Math.max(...list.map((f) => f.end)) };
        }
        return out;
      });
      console.log("features per track: " + JSON.stringify(features));
      const names = Object.keys(features);
      check(names.length >= 4 && names.every((n) => features[n].n > 0 && features[n].chr.join() === "chr20" &&
                                                features[n].min >= start - 1 && features[n].max <= end),
            "every track's features are on chr20 within " + start + "-" + end + " (0-based starts)");
      const drawn = await colourCounts(page, LOCUS_COLOURS);
      console.log("pixels per colour: " + JSON.stringify(drawn));
      check(drawn.promoter > 200 && drawn.score > 200 && drawn.annotation > 50 && drawn.splice > 0,
            "the tracks are drawn in the view of the region");
      const status = await page.$eval("#locus-rule-status", (el) => el.textContent);
      check(/chr20:5,750,001-5,760,000/.test(status), "the side panel says where it is drawn: " + status);
      await checkLayoutAndShoot(page, path.join(args["screenshot-dir"], "viewer-locus-1400x900.png"), LOCUS_COLOURS);
      // A job asked by interval, reopened by its id, is placed by the interval it echoes.
      await setMode(page, "sequence");
      await page.$eval("#job-id", (el, id) => { el.value = id; }, good.tracks.promoter.job_id);
      await page.evaluate(() => { window.dnaserveViewer.status = "starting"; });
      await page.click("#open-job");
      await page.waitForFunction(() => ["done", "error"].includes(window.dnaserveViewer.status),
                                 { timeout: 60000, polling: 200 });
      const reopened = await page.evaluate(() => window.dnaserveViewer.tracks.promoter);
      await settle();
      const reopenedLocus = await locusBox(page);
      check(reopened && reopened.features === good.tracks.promoter.features &&
            reopenedLocus === "chr20:" + withCommas(start) + "-" + withCommas(end),
            "the promoter job reopened by id is drawn at the region again: " + reopenedLocus);
      await setMode(page, "locus");
    });

    await section("locus, strand -", async () => {
      await setChecked(page, ".task input", ["promoter"]);
      await setValue(page, "#locus", "chr20:5,750,001-5,760,000:-");
      const minus = await run(page);
      const strand = await page.$eval("#locus-strand", (el) => el.value);
      check(minus.status === "done" && minus.tracks.promoter && minus.tracks.promoter.features > 0 && strand === "-",
            "strand '-' typed after the region is taken and runs: " + minus.message);
      const locus = await locusBox(page);
      check(locus === "chr20:" + withCommas(start) + "-" + withCommas(end), "drawn at the same place: " + locus);
    });

    // ---- variants ----
    await section("variants", async () => {
      await setMode(page, "variants");
      const modes = await page.evaluate(() => ({
        variants: document.getElementById("variants").getClientRects().length > 0,
        tasks: document.getElementById("tasks").getClientRects().length > 0 }));
      check(modes.variants && !modes.tasks, "the variants mode shows the variant box and not the tasks");
      await setValue(page, "#variants", args.variant + "\n" + args.mismatch);
      await setChecked(page, "#scorers input[type=checkbox]", ["splice", "expression", "chromatin"]);
      await setValue(page, "#variant-contexts", "E066, qqqq zzzz xxxx");
      await setValue(page, "#chromatin-top", "5");
      const answer = await run(page);
      const v = answer.variants || { results: [] };
      check(answer.status === "done" && v.results.length === 2, "two variants answered: " + answer.message);
      const [good, bad] = v.results;
      check(good && good.splice && !good.error, "the first is scored: " + JSON.stringify(good && good.splice && good.splice.DS_max));
      check(bad && bad.error && bad.error.code === "reference_mismatch", "the second is a REF mismatch");
      check(/REF does not match the reference genome/.test(answer.message) && answer.message.includes(args.mismatch),
            "the message names the mismatched variant in plain words: " + answer.message);
      const details = await page.evaluate(() => {
        const box = document.getElementById("variant-details");
        const blocks = [...box.querySelectorAll(".variant-result")];
        return { visible: box.getClientRects().length > 0, texts: blocks.map((b) => b.innerText),
                 error: blocks[1] && blocks[1].querySelector(".variant-error") &&
                        blocks[1].querySelector(".variant-error").innerText };
      });
      check(details.visible && details.texts.length === 2, "both variants are listed under the tracks");
      check(details.error && /REF does not match/.test(details.error) && /another assembly/.test(details.error),
            "the mismatch is said in plain words beside it: " + details.error);
      const text = details.texts[0] || "";
      if (good && good.splice) {
        check(["AG", "AL", "DG", "DL"].every((k) => text.includes("DS_" + k) &&
                                          text.includes(good.splice["DS_" + k].toFixed(4))),
              "the four DS values are listed");
        check(text.includes(v.scorers.splice.model), "the splice model is named: " + v.scorers.splice.model);
      }
      if (good && good.expression && good.expression.length) {
        const c = good.expression[0].contexts[0];
        check(text.includes(good.expression[0].gene_symbol) && text.includes(c.ref_tpm.toFixed(3)) &&
              text.includes(c.alt_tpm.toFixed(3)), "expression REF and ALT levels are listed");
      } else {
        check(/no gene starts within/.test(text), "no gene near: said so");
      }
      check(good && good.chromatin && good.chromatin.length === 5 &&
            good.chromatin.every((f) => text.includes(f.name) && text.includes(f.delta.toFixed(4))),
            "chromatin's top 5 features and their deltas are listed");
      const summary = await page.evaluate(() => {
        const box = document.getElementById("variant-summary");
        const warning = box.querySelector(".warning");
        return { text: box.innerText, warning: warning && warning.innerText,
                 warningVisible: !!warning && warning.offsetHeight > 0 };
      });
      check(["splice", "expression", "chromatin"].every((s) => summary.text.includes(v.scorers[s].model)),
            "every scorer's model is named: " + JSON.stringify(summary.text));
      const contexts = v.scorers.expression.contexts;
      check(contexts[0].matched === true && contexts[1].matched === false, "E066 matched, the nonsense did not");
      check(summary.warningVisible && /Unmatched/.test(summary.warning) && summary.warning.includes("qqqq zzzz xxxx"),
            "a visible warning names the unmatched context: " + summary.warning);

      // The scored variant drawn at its place, with REF, ALT, ALT - REF and the named deltas.
      await settle();
      const [, contig, position] = /^(chr\w+):(\d+):/.exec(args.variant);
      const half = Math.max(60, v.scorers.splice.distance + 15);
      const expected = contig + ":" + withCommas(Number(position) - half) + "-" + withCommas(Number(position) + half);
      const locus = await locusBox(page);
      check(locus === expected, "the variant is drawn at " + expected + ": " + locus);
      const drawn = await colourCounts(page, VARIANT_COLOURS);
      console.log("pixels per colour: " + JSON.stringify(drawn));
      check(drawn.variant > 20 && drawn.deltas > 20, "the variant and the deltas are drawn");
      if (good && good.splice) {
        const strand = good.splice.strand === "-" ? good.splice.minus : good.splice.plus;
        const some = (key) => Object.values(strand).some((d) => d[key] > 0.005);
        check(!some("ref") || drawn.ref > 20, "REF probabilities are drawn (" + drawn.ref + " px)");
        check(!some("alt") || drawn.alt > 20, "ALT probabilities are drawn (" + drawn.alt + " px)");
        check(Object.values(strand).every((d) => Math.abs(d.alt - d.ref) < 0.005) || drawn.delta > 5,
              "ALT - REF is drawn (" + drawn.delta + " px)");
      }
      const labels = await page.evaluate(() => [...document.getElementById("igv").shadowRoot
        .querySelectorAll(".igv-track-label")].map((e) => e.textContent));
      check(["variant", "splice REF", "splice ALT", "ALT - REF", "splice deltas"].every((l) =>
        labels.some((t) => t.startsWith(l))), "the tracks are labelled: " + JSON.stringify(labels));
      await checkLayoutAndShoot(page, path.join(args["screenshot-dir"], "viewer-variants-1400x900.png"),
                                VARIANT_COLOURS, "variant-details");
    });

    await section("only a mismatch", async () => {
      await setValue(page, "#variants", args.mismatch);
      const answer = await run(page);
      check(answer.status === "done" && /Scored 0 of 1/.test(answer.message) &&
            /REF does not match/.test(answer.message) && !answer.drawn,
            "a list of one mismatched variant says so and draws nothing: " + answer.message);
    });

    const violations = await page.evaluate(() => window.__cspViolations);
    check(violations.length === 0, "no Content-Security-Policy violations: " + violations.join(", "));
  } finally {
    await browser.close();
  }
  check(pageErrors.length === 0, "no page errors: " + pageErrors.join(" | "));
  // chromium logs each refused request (status >= 400) as a console error: the three tasks of
  // each impossible region, and nothing else.
  const unexpected = consoleErrors.filter((t) => !/Failed to load resource: the server responded with a status of 422/.test(t));
  check(unexpected.length === 0 && consoleErrors.length <= 3 * 2,
        "no console errors but the 422s of the impossible regions: " + consoleErrors.length + " " + unexpected.join(" | "));
  check(offOrigin.length === 0, "no request left " + origin + ": " + offOrigin.join(", "));
  if (failures.length) {
    console.log(failures.length + " check(s) failed");
    process.exit(1);
  }
  console.log("all viewer genome checks passed");
}

main().catch((error) => {
  console.log("FAIL " + (error && error.stack || error));
  process.exit(1);
});
