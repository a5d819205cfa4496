// The dnaserve track viewer: runs tasks on one sequence against this gateway and shows their
// text tracks in igv.js over the sequence itself. Everything stays on this origin: the reference
// and the tracks are handed to igv as data: URLs, and the page's Content-Security-Policy
// (connect-src 'self') would stop any other request. The API key lives only in sessionStorage.
"use strict";

(function () {
  const TASKS = ["promoter", "splice", "enhancer", "chromatin", "annotation", "expression"];
  // The contract's advisory async thresholds (bp); annotation JSON is refused sync above 200 kb.
  const ASYNC_ABOVE = { promoter: 100000, splice: 250000, enhancer: 100000, chromatin: 100000,
                        annotation: 30000, expression: Infinity };
  const MIN_BP = { promoter: 300, splice: 100, enhancer: 50, chromatin: 200, annotation: 1000,
                   expression: 9198 };
  // Which pre-rendered formats each task's track is drawn from, and its colour.
  const TRACKS = {
    promoter: [{ format: "bedgraph", color: "rgb(140,140,140)", label: "promoter score" },
               { format: "bed", color: "rgb(214,39,40)", label: "promoter regions" }],
    splice: [{ format: "bed", color: "rgb(148,103,189)", label: "splice sites" }],
    enhancer: [{ format: "bedgraph", color: "rgb(44,160,44)", label: "enhancer" }],
    chromatin: [{ format: "bed", color: "rgb(255,127,14)", label: "chromatin features" }],
    annotation: [{ format: "gff3", color: "rgb(31,119,180)", label: "annotation" }],
    expression: [],
  };
  const KEY_STORAGE = "dnaserve.apiKey";
  const POLL_MS = 1000;

  const $ = (id) => document.getElementById(id);
  // State the browser test reads: what ran and how many features each track holds.
  const state = { status: "idle", tracks: {}, errors: [], expression: null };
  window.dnaserveViewer = state;

  let browser = null;
  let current = null; // {name, igvName, sequence}

  // ---- key ------------------------------------------------------------------------------
  const keyInput = $("api-key");
  keyInput.value = sessionStorage.getItem(KEY_STORAGE) || "";
  keyInput.addEventListener("input", () => {
    if (keyInput.value) sessionStorage.setItem(KEY_STORAGE, keyInput.value.trim());
    else sessionStorage.removeItem(KEY_STORAGE);
  });

  function headers(json) {
    const h = { Accept: "application/json" };
    if (json) h["Content-Type"] = "application/json";
    const key = keyInput.value.trim();
    if (key) h.Authorization = "Bearer " + key;
    return h;
  }

  // ---- messages ---------------------------------------------------------------------------
  function say(text, kind) {
    const box = $("message");
    box.textContent = text;
    box.className = kind || "info";
  }

  class ApiError extends Error {
    constructor(status, code, message, requestId) {
      super(message);
      this.status = status;
      this.code = code;
      this.requestId = requestId;
    }
    explain() {
      if (this.code === "unauthorized") {
        return "The API key was not accepted (unauthorized): check the key field. " + this.message;
      }
      if (this.code === "forbidden") return "This API key is disabled (forbidden). " + this.message;
      const id = this.requestId ? " (request " + this.requestId + ")" : "";
      return this.code + ": " + this.message + id;
    }
  }

  async function call(method, path, body, extraHeaders) {
    const init = { method, headers: Object.assign(headers(body !== undefined), extraHeaders || {}),
                   credentials: "omit", cache: "no-store" };
    if (body !== undefined) init.body = JSON.stringify(body);
    let response;
    for (let attempt = 0; ; attempt++) {
      response = await fetch(path, init);
      // Honour Retry-After on 429/503 a few times before giving up.
      if ((response.status === 429 || response.status === 503) && attempt < 5) {
        const wait = Number(response.headers.get("Retry-After") || "1");
        await new Promise((r) => setTimeout(r, Math.min(30, Math.max(0.2, wait)) * 1000));
        continue;
      }
      break;
    }
    let payload = null;
    try { payload = await response.json(); } catch (e) { payload = null; }
    if (response.status >= 400) {
      const error = (payload && payload.error) || {};
      throw new ApiError(response.status, error.code || "http_" + response.status,
                         error.message || "HTTP " + response.status,
                         error.request_id || response.headers.get("X-Request-Id"));
    }
    return { status: response.status, body: payload };
  }

  // ---- models -----------------------------------------------------------------------------
  async function loadModels() {
    for (const task of TASKS) {
      const select = document.querySelector('.task[data-task="' + task + '"] select');
      try {
        const { body } = await call("GET", "/v1/tasks/" + task + "/models");
        select.replaceChildren();
        for (const model of body.models || []) {
          const option = document.createElement("option");
          option.value = model.name;
          option.textContent = model.name + (model.is_default ? " (default)" : "");
          option.selected = model.name === body.default_model;
          select.appendChild(option);
        }
      } catch (e) {
        const option = document.createElement("option");
        option.value = "";
        option.textContent = "default model";
        select.replaceChildren(option);
      }
    }
  }

  // ---- sequence input ---------------------------------------------------------------------
  function parseFasta(text) {
    const lines = text.split(/\r?\n/);
    let name = "sequence";
    const chunks = [];
    let seen = false;
    for (const raw of lines) {
      const line = raw.trim();
      if (line.startsWith(">")) {
        if (seen) break; // the first record only
        seen = true;
        name = line.slice(1).trim().split(/\s+/)[0] || "sequence";
        continue;
      }
      if (line.startsWith(";")) continue;
      chunks.push(line.replace(/\s+/g, ""));
      if (!seen && line) seen = true;
    }
    const sequence = chunks.join("").toUpperCase();
    if (!sequence) throw new Error("no sequence: paste a FASTA record or bare bases");
    const bad = sequence.search(/[^ACGTN]/);
    if (bad >= 0) {
      throw new Error("only A, C, G, T and N are accepted; found '" + sequence[bad] +
                      "' at base " + (bad + 1));
    }
    return { name: name.slice(0, 128), sequence };
  }

  $("fasta").addEventListener("input", showSequenceInfo);
  function showSequenceInfo() {
    try {
      const record = parseFasta($("fasta").value);
      $("sequence-info").textContent = record.name + ": " + record.sequence.length.toLocaleString() + " bp";
    } catch (e) {
      $("sequence-info").textContent = "";
    }
  }

  $("fasta-file").addEventListener("change", async (event) => {
    const file = event.target.files[0];
    if (!file) return;
    try {
      let stream = file.stream();
      const head = new Uint8Array(await file.slice(0, 2).arrayBuffer());
      if (head[0] === 0x1f && head[1] === 0x8b) stream = stream.pipeThrough(new DecompressionStream("gzip"));
      $("fasta").value = await new Response(stream).text();
      showSequenceInfo();
    } catch (e) {
      say("Cannot read " + file.name + ": " + e.message, "error");
    }
  });

  // ---- running ----------------------------------------------------------------------------
  function selectedTasks() {
    return TASKS.filter((t) => document.querySelector('.task[data-task="' + t + '"] input').checked);
  }

  function requestBody(task, record) {
    const body = { sequence: record.sequence, sequence_name: record.igvName };
    const model = document.querySelector('.task[data-task="' + task + '"] select').value;
    if (model) body.model = model;
    // The promoter cutoff; splice and chromatin keep their defaults (at low cutoffs their
    // responses grow to thousands of features, or past the splice size cap).
    if (task === "promoter" && $("threshold").value !== "") {
      body.options = { threshold: Number($("threshold").value) };
    }
    if (task === "expression") {
      body.options = { description: $("description").value || "tissue" };
      body.tss_index = Math.floor(record.sequence.length / 2);
      if (record.sequence.length === 9198) body.tss_index = 4599;
    }
    return body;
  }

  function progressRow(task) {
    const row = document.createElement("div");
    row.className = "progress";
    row.dataset.task = task;
    const label = document.createElement("span");
    label.textContent = task;
    const bar = document.createElement("progress");
    bar.max = 100;
    bar.value = 0;
    const text = document.createElement("span");
    row.append(label, bar, text);
    $("progress-list").appendChild(row);
    return { set(percent, message) { bar.value = percent; text.textContent = Math.round(percent) + "% " + (message || ""); },
             done() { bar.value = 100; text.textContent = "done"; } };
  }

  async function pollJob(jobId, progress) {
    for (;;) {
      const { status, body } = await call("GET", "/v1/tasks/jobs/" + encodeURIComponent(jobId));
      if (status === 200) return body;
      const p = (body.data && body.data.progress) || {};
      progress.set(Number(p.current_percent || 0), p.message);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  async function runTask(task, record) {
    const progress = progressRow(task);
    const body = requestBody(task, record);
    const path = "/v1/tasks/" + task + "/predict";
    let result;
    if (record.sequence.length > ASYNC_ABOVE[task]) {
      const { body: submitted } = await call("POST", path, body, { Prefer: "respond-async" });
      result = await pollJob(submitted.data.job_id, progress);
    } else {
      progress.set(0, "running");
      result = (await call("POST", path, body)).body;
    }
    progress.done();
    return result;
  }

  $("run").addEventListener("click", async () => {
    let record;
    try {
      record = parseFasta($("fasta").value);
    } catch (e) {
      say(e.message, "error");
      return;
    }
    // igv reads "name:start-end" as a locus, so the track name must not hold a colon.
    record.igvName = record.name.replace(/[:\s]/g, "_");
    const tasks = selectedTasks();
    if (!tasks.length) { say("Choose at least one task.", "error"); return; }
    const tooShort = tasks.filter((t) => record.sequence.length < MIN_BP[t]);
    if (tooShort.length) {
      say(tooShort.map((t) => t + " needs at least " + MIN_BP[t].toLocaleString() + " bp").join("; ") +
          " (this sequence has " + record.sequence.length.toLocaleString() + ")", "error");
      return;
    }
    await runAll(record, tasks);
  });

  async function runAll(record, tasks) {
    state.status = "running";
    state.tracks = {};
    state.errors = [];
    $("progress-list").replaceChildren();
    say("Running " + tasks.join(", ") + " on " + record.name + " (" +
        record.sequence.length.toLocaleString() + " bp)...", "info");
    $("run").disabled = true;
    try {
      await showReference(record);
      const outcomes = await Promise.allSettled(tasks.map((t) => runTask(t, record)));
      const failures = [];
      for (let i = 0; i < tasks.length; i++) {
        if (outcomes[i].status === "fulfilled") {
          await showResult(tasks[i], outcomes[i].value);
        } else {
          const e = outcomes[i].reason;
          const text = e instanceof ApiError ? e.explain() : String(e.message || e);
          failures.push(tasks[i] + ": " + text);
          state.errors.push({ task: tasks[i], code: e.code || "error", message: text });
        }
      }
      if (failures.length) {
        // One wrong key fails every task the same way: say it once.
        const unique = [...new Set(state.errors.map((x) => x.message))];
        say(unique.length === 1 && failures.length > 1 ? unique[0] : failures.join(" | "), "error");
        state.status = "error";
      } else {
        say("Done: " + tasks.join(", ") + ".", "info");
        state.status = "done";
      }
    } catch (e) {
      say(e instanceof ApiError ? e.explain() : String(e.message || e), "error");
      state.status = "error";
      state.errors.push({ code: e.code || "error", message: String(e.message || e) });
    } finally {
      $("run").disabled = false;
      $("igv").dataset.state = state.status;
    }
  }

  $("open-job").addEventListener("click", async () => {
    const jobId = $("job-id").value.trim();
    if (!jobId) { say("Enter a job id.", "error"); return; }
    state.status = "running";
    state.tracks = {};
    state.errors = [];
    $("progress-list").replaceChildren();
    try {
      const result = await pollJob(jobId, progressRow("job " + jobId.slice(0, 8)));
      const data = result.data || {};
      const meta = result.meta || {};
      const task = data.task || meta.task;
      if (!TASKS.includes(task)) throw new Error("job " + jobId + " is a " + task + " job, which has no tracks to show");
      const name = (data.input && data.input.sequence_name) || "sequence";
      let record;
      try { record = parseFasta($("fasta").value); } catch (e) { record = null; }
      if (!record || record.sequence.length !== meta.sequence_length) {
        // The job's sequence is not stored with its result: draw over Ns of the same length.
        record = { name, sequence: "N".repeat(meta.sequence_length || 1) };
      }
      record.igvName = name;
      await showReference(record);
      await showResult(task, result);
      state.status = "done";
      say("Job " + jobId + ": " + task + " result.", "info");
    } catch (e) {
      state.status = "error";
      say(e instanceof ApiError ? e.explain() : String(e.message || e), "error");
    }
    $("igv").dataset.state = state.status;
  });

  // ---- drawing ----------------------------------------------------------------------------
  function dataUrl(text) {
    // Text from the service is ASCII; btoa needs Latin-1.
    return "data:text/plain;base64," + btoa(unescape(encodeURIComponent(text)));
  }

  async function showReference(record) {
    current = record;
    const fasta = ">" + record.igvName + "\n" + record.sequence + "\n";
    const options = {
      reference: { id: "query", name: record.name, fastaURL: dataUrl(fasta), indexed: false },
      locus: record.igvName + ":1-" + record.sequence.length,
      showSampleNames: false,
      // igv.js would otherwise fetch its genome list from igv.org (the CSP blocks it anyway).
      loadDefaultGenomes: false,
      queryParametersSupported: false,
      promisified: false,
    };
    if (browser) {
      igv.removeBrowser(browser);
      browser = null;
    }
    $("igv").replaceChildren();
    browser = await igv.createBrowser($("igv"), options);
    window.dnaserveViewer.browser = browser;
    $("summary").tBodies[0].replaceChildren();
    $("expression").textContent = "Run the expression task (9,198 bp or more) to see its prediction here.";
  }

  // A bedGraph text with several "track" lines (enhancer: dev and hk) becomes one track each.
  function splitTracks(text) {
    const parts = [];
    let header = null;
    let rows = [];
    for (const line of text.split("\n")) {
      if (line.startsWith("track")) {
        if (header !== null || rows.length) parts.push({ header, rows });
        header = line;
        rows = [];
      } else if (line.trim() && !line.startsWith("#") && !line.startsWith("browser")) {
        rows.push(line);
      }
    }
    if (header !== null || rows.length) parts.push({ header, rows });
    return parts;
  }

  function trackName(header, fallback) {
    const m = header && header.match(/name="([^"]*)"|name=(\S+)/);
    return (m && (m[1] || m[2])) || fallback;
  }

  async function showResult(task, result) {
    const data = result.data || {};
    const formats = data.formats || {};
    let features = 0;
    for (const spec of TRACKS[task]) {
      const text = formats[spec.format];
      if (typeof text !== "string") continue;
      if (spec.format === "bedgraph") {
        for (const part of splitTracks(text)) {
          features += part.rows.length;
          // enhancer has two tracks (dev, hk): name each by its own track line.
          const name = task === "enhancer" ? "enhancer " + trackName(part.header, "") : spec.label;
          await browser.loadTrack({ type: "wig", format: "bedgraph", name,
                                    url: dataUrl(part.rows.join("\n") + "\n"), color: spec.color, height: 60,
                                    autoscale: true });
        }
      } else {
        const rows = text.split("\n").filter((l) => l.trim() && !l.startsWith("#") && !l.startsWith("track"));
        features += rows.length;
        await browser.loadTrack({ type: "annotation", format: spec.format, name: spec.label, url: dataUrl(text),
                                  color: spec.color, displayMode: "EXPANDED", indexed: false, height: 90 });
      }
    }
    if (task === "expression") showExpression(data, result.meta || {});
    state.tracks[task] = { features, model: (result.meta || {}).model, job_id: (result.meta || {}).job_id };
    addSummary(task, result);
  }

  function showExpression(data, meta) {
    const p = data.prediction || {};
    const box = $("expression");
    box.replaceChildren();
    const value = document.createElement("div");
    value.className = "value";
    value.textContent = Number(p.expression_tpm).toFixed(2) + " TPM";
    const detail = document.createElement("div");
    detail.textContent = "log(TPM+1) " + Number(p.expression_log_tpm).toFixed(3) + "; window " +
      JSON.stringify((data.input || {}).scored_window || []) + "; model " + (meta.model || "");
    box.append(value, detail);
    state.expression = p;
  }

  function addSummary(task, result) {
    const meta = result.meta || {};
    const row = document.createElement("tr");
    const counts = meta.task_specific_counts || {};
    const detail = Object.keys(counts).filter((k) => k !== "task").map((k) => k + " " + counts[k]).join(", ");
    for (const text of [task + " (" + (meta.model || "") + ")", (meta.inference_time_ms || 0) + " ms", detail]) {
      const cell = document.createElement("td");
      cell.textContent = text;
      row.appendChild(cell);
    }
    $("summary").tBodies[0].appendChild(row);
  }

  loadModels();
  showSequenceInfo();
})();
