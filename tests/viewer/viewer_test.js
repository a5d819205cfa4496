#!/usr/bin/env node
// Drives Debian's chromium (headless) through the gateway's /viewer page, as a person would, on a
// multi-record FASTA: a wrong key must give a clear message; the right key runs promoter and
// annotation and their tracks must be drawn, in genome coordinates when the record's name gives
// them, with no track label covering a feature and no summary word broken across lines; every
// record can be chosen and is placed by its name; the expression context matched (or not) is
// shown; a key allowed one request at a time draws 429s that the page waits out and shows; and
// screenshots at 1400x900 and 1024x768 must be laid out readably and not blank. No request may
// leave the gateway's origin. Exit status 0 when every check holds; each failed check is printed.
//
//   node viewer_test.js --url http://127.0.0.1:PORT --key KEY --single-key KEY_WITH_CONCURRENCY_1 \
//        --fasta records.fa --screenshot-dir DIR [--chromium /usr/bin/chromium]
// records.fa: record 0 of at least 1 kb and record 2 of at least 9,198 bp (expression), each
// named contig:start-end or contig_start-end; the others any name.
"use strict";

const fs = require("fs");
const path = require("path");
const puppeteer = require("puppeteer-core");
const { parseArgs, failures, check, section, settle, colourCounts, labelsOverFeatures,
        locusBox } = require("./page_checks");

// The test's own reading of the FASTA (names and lengths), independent of the page's parser.
function fastaRecords(text) {
  const records = [];
  for (const line of text.split("\n")) {
    if (line.startsWith(">")) records.push({ name: line.slice(1).trim().split(/\s+/)[0], length: 0 });
    else if (records.length) records[records.length - 1].length += line.trim().length;
  }
  return records;
}

// The locus the page must show for a record: the genome span its name gives (commas dropped)
// when that span matches its length, else the record itself from base 1.
function expectedLocus(record) {
  const m = /^(chr[0-9A-Za-z]+)[:_]([0-9,]+)-([0-9,]+)$/.exec(record.name);
  if (m) {
    const start = Number(m[2].replace(/,/g, "")), end = Number(m[3].replace(/,/g, ""));
    if (end - start + 1 === record.length) return m[1] + ":" + start + "-" + end;
  }
  return record.name + ":1-" + record.length;
}

const TRACK_COLOURS = { promoter: [214, 39, 40], annotation: [31, 119, 180], score: [140, 140, 140],
                        splice: [148, 103, 189] };

// Decodes the PNG in the page itself and measures it: distinct colours and non-white share.
async function measurePng(page, file) {
  const base64 = fs.readFileSync(file).toString("base64");
  return page.evaluate(async (base64) => {
    const image = new Image();
    image.src = "data:image/png;base64," + base64;
    await image.decode();
    const canvas = document.createElement("canvas");
    canvas.width = image.width;
    canvas.height = image.height;
    const context = canvas.getContext("2d");
    context.drawImage(image, 0, 0);
    const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
    const colours = new Set();
    let nonWhite = 0;
    for (let i = 0; i < pixels.length; i += 4) {
      colours.add((pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2]);
      if (pixels[i] < 240 || pixels[i + 1] < 240 || pixels[i + 2] < 240) nonWhite++;
    }
    return { width: image.width, height: image.height, colours: colours.size,
             nonWhiteShare: nonWhite / (pixels.length / 4) };
  }, base64);
}

// Words of the side panel (summary, expression) that the layout split across two lines.
// Hyphens and spaces are break points; letters, digits, '_' and the like are not.
async function brokenWords(page) {
  return page.evaluate(() => {
    const broken = [];
    const walker = document.createTreeWalker(document.getElementById("side"), NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      const words = /[A-Za-z0-9_.,:()[\]%]+/g;
      let m;
      while ((m = words.exec(node.data))) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (tops.size > 1) broken.push(m[0]);
      }
    }
    return broken;
  });
}

async function setKey(page, key) {
  await page.$eval("#api-key", (el, key) => {
    el.value = key;
    el.dispatchEvent(new Event("input"));
  }, key);
}

async function setTasks(page, tasks) {
  await page.$$eval(".task input", (inputs, tasks) => {
    for (const input of inputs) input.checked = tasks.includes(input.value);
  }, tasks);
}

async function runTasks(page, key) {
  await startTasks(page, key);
  return finishTasks(page);
}

async function startTasks(page, key) {
  await setKey(page, key);
  await page.evaluate(() => {
    window.dnaserveViewer.status = "starting";
    document.getElementById("message").className = "";
  });
  await page.click("#run");
}

async function finishTasks(page) {
  // Done, failed, or refused before starting (an error message while nothing started).
  await page.waitForFunction(() => ["done", "error"].includes(window.dnaserveViewer.status) ||
                             (window.dnaserveViewer.status === "starting" &&
                              document.getElementById("message").className === "error"),
                             { timeout: 240000, polling: 200 });
  return page.evaluate(() => ({ status: window.dnaserveViewer.status,
                                tracks: window.dnaserveViewer.tracks,
                                errors: window.dnaserveViewer.errors,
                                expression: window.dnaserveViewer.expression,
                                message: document.getElementById("message").textContent,
                                messageClass: document.getElementById("message").className }));
}

// Chooses record `index` in the record list, as a person would, and waits until it is drawn.
// A page that cannot is a failed check, and the checks after it still run.
async function chooseRecord(page, index) {
  try {
    await page.evaluate(() => { window.dnaserveViewer.status = "choosing"; });
    await page.select("#record", String(index));
    await page.waitForFunction(() => ["shown", "error"].includes(window.dnaserveViewer.status),
                               { timeout: 30000, polling: 100 });
    await page.waitForFunction(() => {
      const root = document.getElementById("igv").shadowRoot;
      const input = root && root.querySelector(".igv-search-input");
      return input && input.value;
    }, { timeout: 30000 });
  } catch (error) {
    check(false, "record " + index + " can be chosen: " + String(error.message || error).split("\n")[0]);
  }
}

// The page at one window size: laid out without overlap or sideways scrolling, igv wide enough,
// labels clear of features, no word broken; then a screenshot that must not be blank.
async function checkLayoutAndShoot(page, width, height, file, wholeLocus) {
  await page.setViewport({ width, height });
  await settle();
  const at = width + "x" + height;
  const layout = await page.evaluate(() => {
    const rect = (id) => document.getElementById(id).getBoundingClientRect().toJSON();
    const run = document.getElementById("run").getBoundingClientRect();
    return { scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
             innerHeight: window.innerHeight, controls: rect("controls"), igv: rect("igv"),
             side: rect("side"), run: run.toJSON(),
             expressionValue: document.querySelector("#expression .value") &&
               document.querySelector("#expression .value").getBoundingClientRect().toJSON(),
             blocks: [...document.getElementById("results").children].map((e) =>
               (e.id || e.className || e.tagName) + " " + Math.round(e.getBoundingClientRect().height) + " px"),
             rows: getComputedStyle(document.getElementById("results")).gridTemplateRows,
             mainRows: getComputedStyle(document.querySelector("main")).gridTemplateRows };
  });
  console.log(at + " layout: " + JSON.stringify(layout));
  const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  check(layout.scrollWidth <= layout.innerWidth, at + ": no sideways scrolling (" + layout.scrollWidth + " px)");
  check(layout.igv.width >= 600, at + ": the tracks are " + Math.round(layout.igv.width) + " px wide (>= 600)");
  check(!overlap(layout.controls, layout.igv) && !overlap(layout.controls, layout.side) &&
        !overlap(layout.igv, layout.side), at + ": inputs, tracks and side panel do not overlap");
  check(layout.run.bottom <= layout.innerHeight, at + ": the Run button is on screen");
  check(layout.side.left >= layout.igv.right || layout.side.top - layout.igv.bottom < 30,
        at + ": the side panel sits beside the tracks or right under them (" +
        Math.round(layout.side.top - layout.igv.bottom) + " px below)");
  check(layout.igv.top < 200, at + ": the tracks start near the top (" + Math.round(layout.igv.top) + " px)");
  if (width >= 1400) {
    check(layout.expressionValue && layout.expressionValue.bottom <= layout.innerHeight &&
          layout.side.left >= layout.igv.right, at + ": the expression value is on screen beside the tracks");
  }
  const locus = await locusBox(page);
  check(locus && locus.replace(/,/g, "") === wholeLocus, at + ": the view still shows the whole record: " + locus);
  const labels = await labelsOverFeatures(page, TRACK_COLOURS);
  check(labels.labels >= 3 && labels.covered.length === 0,
        at + ": " + labels.labels + " track labels, none over a feature: " + labels.covered.join(", "));
  const broken = await brokenWords(page);
  check(broken.length === 0, at + ": no word of the side panel broken across lines: " + broken.join(" "));
  await page.screenshot({ path: file });
  const shot = await measurePng(page, file);
  console.log("screenshot " + at + ": " + JSON.stringify(shot));
  check(shot.width === width && shot.height === height && shot.colours > 40 && shot.nonWhiteShare > 0.05,
        at + ": the screenshot is " + shot.width + "x" + shot.height + " and not blank");
}

async function main() {
  const args = parseArgs(process.argv, ["url", "key", "single-key", "fasta", "screenshot-dir"]);
  const origin = new URL(args.url).origin;
  const fasta = fs.readFileSync(args.fasta, "utf8");
  const records = fastaRecords(fasta);
  if (records.length < 3 || records[2].length < 9198) throw new Error("--fasta: see the usage");
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
  try {
    const page = await browser.newPage();
    page.on("request", (request) => {
      const url = request.url();
      if (!url.startsWith(origin + "/") && !url.startsWith("data:") && !url.startsWith("blob:")) {
        offOrigin.push(url);
      }
    });
    page.on("pageerror", (error) => pageErrors.push(String(error)));
    page.on("console", (message) => {
      if (message.type() === "error") console.log("console: " + message.text());
    });
    // Content-Security-Policy violations (a blocked request never shows as a request).
    await page.evaluateOnNewDocument(() => {
      window.__cspViolations = [];
      document.addEventListener("securitypolicyviolation", (e) =>
        window.__cspViolations.push(e.blockedURI + " " + e.violatedDirective));
    });

    const response = await page.goto(origin + "/viewer", { waitUntil: "networkidle0" });
    check(response.status() === 200, "GET /viewer is 200");
    const csp = response.headers()["content-security-policy"] || "";
    check(csp.includes("connect-src 'self'") && csp.includes("script-src 'self'"),
          "the page carries a Content-Security-Policy: " + csp);
    await page.$eval("#fasta", (el, text) => {
      el.value = text;
      el.dispatchEvent(new Event("input"));
    }, fasta);
    // Promoter at threshold 0 calls every window, so its region track has features to draw.
    await page.$eval("#threshold", (el) => { el.value = "0"; });

    // Every record can be chosen.
    const options = await page.$$eval("#record option", (os) => os.map((o) => o.textContent));
    check(options.length === records.length && records.every((r, i) => options[i] && options[i].includes(r.name)),
          "every record is listed for choosing: " + JSON.stringify(options));

    // 1. A wrong key: a clear message, no tracks.
    await setTasks(page, ["promoter", "annotation"]);
    const wrong = await runTasks(page, "dns_this_key_is_wrong");
    check(wrong.status === "error", "a wrong key ends in an error state");
    check(wrong.messageClass === "error" && /API key was not accepted/.test(wrong.message),
          "a wrong key shows a clear message: " + wrong.message);

    // 2. The right key on record 0: promoter and annotation drawn over its genome span.
    const good = await runTasks(page, args.key);
    check(good.status === "done", "promoter and annotation ran: " + good.message);
    const tracks = good.tracks || {};
    check(tracks.promoter && tracks.promoter.features > 0,
          "the promoter track has features: " + JSON.stringify(tracks.promoter));
    check(tracks.annotation && tracks.annotation.features > 0,
          "the annotation track has features: " + JSON.stringify(tracks.annotation));
    await page.waitForFunction(() => {
      const root = document.getElementById("igv").shadowRoot;
      return root && root.querySelectorAll("canvas").length > 3;
    }, { timeout: 30000 });
    await settle();
    const locus0 = await locusBox(page);
    check(locus0 && locus0.replace(/,/g, "") === expectedLocus(records[0]),
          "the locus box shows " + records[0].name + " in genome coordinates: " + locus0);
    const drawn = await colourCounts(page, TRACK_COLOURS);
    console.log("pixels drawn per track colour: " + JSON.stringify(drawn));
    check(drawn.promoter > 200, "promoter regions are drawn (" + drawn.promoter + " px)");
    check(drawn.score > 200, "the promoter score track is drawn (" + drawn.score + " px)");
    check(drawn.annotation > 50, "annotation features are drawn (" + drawn.annotation + " px)");
    const labelText = await page.evaluate(() => [...document.getElementById("igv").shadowRoot
      .querySelectorAll(".igv-track-label")].map((e) => e.textContent));
    check(labelText.some((t) => /annotation/.test(t)) && labelText.some((t) => /promoter/.test(t)),
          "the tracks are labelled: " + JSON.stringify(labelText));
    const labels = await labelsOverFeatures(page, TRACK_COLOURS);
    check(labels.labels >= 3 && labels.covered.length === 0,
          labels.labels + " track labels, none over a feature: " + labels.covered.join(", "));
    const broken = await brokenWords(page);
    check(broken.length === 0, "no summary word broken across lines: " + broken.join(" "));

    // The key stays in this tab: session storage only, never local storage or a cookie.
    const storage = await page.evaluate(() => ({
      session: sessionStorage.getItem("dnaserve.apiKey"),
      local: Object.keys(localStorage).length,
      cookie: document.cookie }));
    check(storage.session === args.key, "the key is in sessionStorage");
    check(storage.local === 0 && storage.cookie === "", "nothing in localStorage or cookies");

    // 3. Opening a finished job by its id draws the same track again, placed by its name.
    await page.$eval("#job-id", (el, id) => { el.value = id; }, tracks.promoter.job_id);
    await page.evaluate(() => { window.dnaserveViewer.status = "starting"; });
    await page.click("#open-job");
    await page.waitForFunction(() => ["done", "error"].includes(window.dnaserveViewer.status),
                               { timeout: 60000, polling: 200 });
    const reopened = await page.evaluate(() => window.dnaserveViewer.tracks.promoter);
    check(reopened && reopened.features === tracks.promoter.features,
          "job " + tracks.promoter.job_id + " reopened with its " + tracks.promoter.features +
          " promoter features: " + JSON.stringify(reopened));
    const reopenedLocus = await locusBox(page);
    check(reopenedLocus && reopenedLocus.replace(/,/g, "") === expectedLocus(records[0]),
          "the reopened job is drawn at " + expectedLocus(records[0]) + ": " + reopenedLocus);

    // 4. Every record, each placed by its name (or from base 1 when its name gives no span).
    for (const index of [1, records.length - 1, 2]) {
      await chooseRecord(page, index);
      const locus = await locusBox(page);
      check(locus && locus.replace(/,/g, "") === expectedLocus(records[index]),
            "record " + index + " (" + records[index].name + ") is drawn at " + expectedLocus(records[index]) +
            ": the locus box shows " + locus);
    }

    await section("expression", async () => {
      // 5. Expression on record 2: the matched context and its similarity, then an unmatched
      //    description with a visible warning; the TSS rule is said on the page.
      await setTasks(page, ["expression"]);
      await page.$eval("#description", (el) => { el.value = "adult liver tissue"; });
      const matched = await runTasks(page, args.key);
      const m = (matched.expression || {}).match;
      check(matched.status === "done" && m && m.matched === true && m.contexts.length > 0,
            "expression matched a context: " + JSON.stringify(m) + " " + matched.message);
      const shown = await page.$eval("#expression", (el) => el.innerText);
      if (m && m.contexts.length) {
        check(shown.includes(m.contexts[0].name) && shown.includes(m.contexts[0].similarity.toFixed(2)),
              "the matched context and its similarity are shown: " + JSON.stringify(shown));
      }
      const tss = Math.floor(records[2].length / 2);
      check(matched.expression && matched.expression.tss_index === tss &&
            shown.includes(tss.toLocaleString("en-US")) && /centre/.test(shown),
            "the TSS used (the record's centre, " + tss + ") is said beside the prediction");
      const rule = await page.$eval("#tss-rule", (el) => ({ text: el.innerText, shown: el.getClientRects().length > 0 }));
      check(rule.shown && /centre/.test(rule.text) && /9,198/.test(rule.text),
            "the page states the expression TSS rule: " + JSON.stringify(rule.text));
      await page.$eval("#description", (el) => { el.value = "qqqq zzzz xxxx"; });
      const unmatched = await runTasks(page, args.key);
      const u = (unmatched.expression || {}).match;
      const warning = await page.evaluate(() => {
        const w = document.querySelector("#expression .warning");
        return w ? { text: w.innerText, visible: w.getClientRects().length > 0 && w.offsetHeight > 0 } : null;
      });
      check(unmatched.status === "done" && u && u.matched === false,
            "an unrelated description is reported unmatched: " + JSON.stringify(u));
      check(warning && warning.visible && /Unmatched/.test(warning.text),
            "a visible warning says the description matched no context: " + JSON.stringify(warning));
    });

    await section("429", async () => {
      // 6. A key allowed one request at a time and three tasks at once: the refused ones wait
      //    (Retry-After) and say so in their progress rows; every task finishes.
      await chooseRecord(page, 0);
      await setTasks(page, ["promoter", "splice", "annotation"]);
      await page.evaluate(() => {
        window.__progressSeen = new Set();
        const list = document.getElementById("progress-list");
        new MutationObserver(() => {
          for (const row of list.children) window.__progressSeen.add(row.textContent);
        }).observe(list, { subtree: true, childList: true, characterData: true, attributes: true });
        window.dnaserveViewer.throttled = [];
      });
      await startTasks(page, args["single-key"]);
      // A picture of the page while a task waits (for the person reading the test's output).
      try {
        await page.waitForSelector('#progress-list .progress[data-state="waiting"]', { timeout: 10000 });
        await page.screenshot({ path: path.join(args["screenshot-dir"], "viewer-429-waiting.png") });
      } catch (error) {
        console.log("no waiting row to photograph: " + String(error.message || error).split("\n")[0]);
      }
      const paced = await finishTasks(page);
      const seen = await page.evaluate(() => [...window.__progressSeen]);
      const throttled = await page.evaluate(() => window.dnaserveViewer.throttled);
      check(paced.status === "done" && ["promoter", "splice", "annotation"].every((t) => paced.tracks[t]),
            "all three tasks finished on the one-at-a-time key: " + paced.message);
      check(throttled.some((t) => t.status === 429 && t.retry_after >= 1),
            "the service answered 429 with Retry-After: " + JSON.stringify(throttled.slice(0, 3)));
      check(seen.some((t) => /429/.test(t) && /concurrent/.test(t)),
            "the progress rows showed the 429 and the service's reason: " +
            JSON.stringify(seen.filter((t) => /429|wait/.test(t)).slice(0, 3)));
      check(!seen.some((t) => /0% running/.test(t)), "no row sat at '0% running'");
      const spacing = throttled.filter((t) => t.status === 429).map((t) => t.at).sort((a, b) => a - b);
      const bursts = spacing.filter((t, i) => i > 0 && t - spacing[i - 1] < 200).length;
      check(bursts <= 2, "refused requests were paced, not hammered (" + spacing.length + " refusals, " +
            bursts + " within 200 ms of another)");
    });

    await section("screenshots", async () => {
      // 7. Screenshots of record 2 with promoter, annotation and expression at both sizes.
      await chooseRecord(page, 2);
      await setTasks(page, ["promoter", "annotation", "expression"]);
      await page.$eval("#description", (el) => { el.value = "adult liver tissue"; });
      const full = await runTasks(page, args.key);
      check(full.status === "done", "promoter, annotation and expression ran on record 2: " + full.message);
      await checkLayoutAndShoot(page, 1400, 900, path.join(args["screenshot-dir"], "viewer-1400x900.png"),
                                expectedLocus(records[2]));
      await checkLayoutAndShoot(page, 1024, 768, path.join(args["screenshot-dir"], "viewer-1024x768.png"),
                                expectedLocus(records[2]));
    });

    const violations = await page.evaluate(() => window.__cspViolations);
    check(violations.length === 0, "no Content-Security-Policy violations: " + violations.join(", "));
    check(pageErrors.length === 0, "no page errors: " + pageErrors.join(" | "));
  } finally {
    await browser.close();
  }
  check(offOrigin.length === 0, "no request left " + origin + ": " + offOrigin.join(", "));
  if (failures.length) {
    console.log(failures.length + " check(s) failed");
    process.exit(1);
  }
  console.log("all viewer checks passed");
}

main().catch((error) => {
  console.log("FAIL " + (error && error.stack || error));
  process.exit(1);
});
