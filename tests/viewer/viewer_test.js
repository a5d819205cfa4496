#!/usr/bin/env node
// Drives Debian's chromium (headless) through the gateway's /viewer page, as a person would:
// a wrong key must give a clear message; the right key runs promoter and annotation on a real
// sequence and their tracks must be drawn; a screenshot is saved and must not be blank; and no
// request may leave the gateway's origin. Exit status 0 when every check holds; each failed
// check is printed.
//
//   node viewer_test.js --url http://127.0.0.1:PORT --key KEY --fasta one-record.fa \
//        --screenshot out.png [--chromium /usr/bin/chromium] [--extra-tasks splice,expression]
// --extra-tasks ticks more tasks for the good run, each of which must then finish too.
"use strict";

const fs = require("fs");
const puppeteer = require("puppeteer-core");

function parseArgs(argv) {
  const args = { chromium: "/usr/bin/chromium" };
  for (let i = 2; i < argv.length; i += 2) args[argv[i].replace(/^--/, "")] = argv[i + 1];
  for (const required of ["url", "key", "fasta", "screenshot"]) {
    if (!args[required]) throw new Error("missing --" + required);
  }
  return args;
}

const failures = [];
function check(condition, what) {
  console.log((condition ? "ok   " : "FAIL ") + what);
  if (!condition) failures.push(what);
}

// Pixels of every canvas inside #igv within `tolerance` of each colour: how much of each track
// igv actually drew.
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

async function runTasks(page, key) {
  await page.$eval("#api-key", (el, key) => {
    el.value = key;
    el.dispatchEvent(new Event("input"));
  }, key);
  await page.evaluate(() => { window.dnaserveViewer.status = "starting"; });
  await page.click("#run");
  await page.waitForFunction(() => ["done", "error"].includes(window.dnaserveViewer.status),
                             { timeout: 180000, polling: 200 });
  return page.evaluate(() => ({ status: window.dnaserveViewer.status,
                                tracks: window.dnaserveViewer.tracks,
                                errors: window.dnaserveViewer.errors,
                                message: document.getElementById("message").textContent,
                                messageClass: document.getElementById("message").className }));
}

async function main() {
  const args = parseArgs(process.argv);
  const origin = new URL(args.url).origin;
  const fasta = fs.readFileSync(args.fasta, "utf8");
  const browser = await puppeteer.launch({
    executablePath: args.chromium,
    headless: true,
    // --no-sandbox: tests may run as root, where chromium's sandbox refuses to start.
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-default-apps", "--hide-scrollbars"],
    defaultViewport: { width: 1280, height: 860 },
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

    // 1. A wrong key: a clear message, no tracks.
    const wrong = await runTasks(page, "dns_this_key_is_wrong");
    check(wrong.status === "error", "a wrong key ends in an error state");
    check(wrong.messageClass === "error" && /API key was not accepted/.test(wrong.message),
          "a wrong key shows a clear message: " + wrong.message);

    // 2. The right key: promoter and annotation drawn over the sequence.
    const extra = (args["extra-tasks"] || "").split(",").filter(Boolean);
    for (const task of extra) {
      await page.$eval('.task[data-task="' + task + '"] input', (el) => { el.checked = true; });
    }
    const good = await runTasks(page, args.key);
    check(good.status === "done", "promoter and annotation ran: " + good.message);
    const tracks = good.tracks || {};
    check(tracks.promoter && tracks.promoter.features > 0,
          "the promoter track has features: " + JSON.stringify(tracks.promoter));
    check(tracks.annotation && tracks.annotation.features > 0,
          "the annotation track has features: " + JSON.stringify(tracks.annotation));
    for (const task of extra) check(tracks[task], task + " ran: " + JSON.stringify(tracks[task]));
    await page.waitForFunction(() => {
      const root = document.getElementById("igv").shadowRoot;
      return root && root.querySelectorAll("canvas").length > 3;
    }, { timeout: 30000 });
    await new Promise((r) => setTimeout(r, 1500)); // igv draws on animation frames
    const drawn = await colourCounts(page, { promoter: [214, 39, 40], annotation: [31, 119, 180],
                                             score: [140, 140, 140] });
    console.log("pixels drawn per track colour: " + JSON.stringify(drawn));
    check(drawn.promoter > 200, "promoter regions are drawn (" + drawn.promoter + " px)");
    check(drawn.score > 200, "the promoter score track is drawn (" + drawn.score + " px)");
    check(drawn.annotation > 50, "annotation features are drawn (" + drawn.annotation + " px)");
    const labels = await page.evaluate(() => [...document.getElementById("igv").shadowRoot
      .querySelectorAll("*")].map((e) => e.textContent));
    check(labels.some((t) => /annotation/.test(t)) && labels.some((t) => /promoter/.test(t)),
          "the tracks are labelled");

    // The key stays in this tab: session storage only, never local storage or a cookie.
    const storage = await page.evaluate(() => ({
      session: sessionStorage.getItem("dnaserve.apiKey"),
      local: Object.keys(localStorage).length,
      cookie: document.cookie }));
    check(storage.session === args.key, "the key is in sessionStorage");
    check(storage.local === 0 && storage.cookie === "", "nothing in localStorage or cookies");

    // 3. Opening a finished job by its id draws the same track again.
    await page.$eval("#job-id", (el, id) => { el.value = id; }, tracks.promoter.job_id);
    await page.evaluate(() => { window.dnaserveViewer.status = "starting"; });
    await page.click("#open-job");
    await page.waitForFunction(() => ["done", "error"].includes(window.dnaserveViewer.status),
                               { timeout: 60000, polling: 200 });
    const reopened = await page.evaluate(() => window.dnaserveViewer.tracks.promoter);
    check(reopened && reopened.features === tracks.promoter.features,
          "job " + tracks.promoter.job_id + " reopened with its " + tracks.promoter.features +
          " promoter features: " + JSON.stringify(reopened));
    // Back to the full run for the screenshot.
    await runTasks(page, args.key);
    await new Promise((r) => setTimeout(r, 1500));

    await page.screenshot({ path: args.screenshot });
    const shot = await measurePng(page, args.screenshot);
    console.log("screenshot: " + JSON.stringify(shot));
    check(shot.width === 1280 && shot.colours > 40 && shot.nonWhiteShare > 0.05,
          "the screenshot is not blank");

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
