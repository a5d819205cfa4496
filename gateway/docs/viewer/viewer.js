// The dnaserve track viewer: runs tasks on one record of a FASTA against this gateway and shows
// their text tracks in igv.js over the sequence itself. Everything stays on this origin: the
// reference and the tracks are handed to igv as data: URLs, and the page's Content-Security-Policy
// (connect-src 'self') would stop any other request. The API key lives only in sessionStorage.
"use strict";

(function () {
  const TASKS = ["promoter", "splice", "enhancer", "chromatin", "annotation", "expression"];
  // The contract's advisory async thresholds (bp); annotation JSON is refused sync above 200 kb.
  const ASYNC_ABOVE = { promoter: 100000, splice: 250000, enhancer: 100000, chromatin: 100000,
                        annotation: 30000, expression: Infinity };
  const MIN_BP = { promoter: 300, splice: 100, enhancer: 50, chromatin: 200, annotation: 1000,
                   expression: 9198 };
  const EXPRESSION_WINDOW_BP = 9198;
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
  // igv draws each track's name in a box at the track's top-left corner (restyled below to
  // LABEL_BAND_PX tall); features are kept below that band so that no label covers one.
  const LABEL_BAND_PX = 18;
  const KEY_STORAGE = "dnaserve.apiKey";
  const POLL_MS = 1000;
  // How long one request may keep waiting out 429/503 answers, as the CLI's default budget.
  const RETRY_BUDGET_MS = 300000;

  const $ = (id) => document.getElementById(id);
  // State the browser test reads: what ran, how many features each track holds, where the record
  // was placed, the expression match and every 429/503 the page waited out.
  const state = { status: "idle", tracks: {}, errors: [], expression: null, placement: null,
                  throttled: [] };
  window.dnaserveViewer = state;

  let browser = null;
  let records = [];        // every record of the pasted FASTA
  let current = null;      // the record drawn now
  const resultsByRecord = new Map(); // record index -> Map(task -> result)

  // ---- key ------------------------------------------------------------------------------
  const keyInput = $("api-key");
  keyInput.value = sessionStorage.getItem(KEY_STORAGE) || "";
  keyInput.addEventListener("input", () => {
    if (keyInput.value) sessionStorage.setItem(KEY_STORAGE, keyInput.value.trim());
    else sessionStorage.removeItem(KEY_STORAGE);
    slots.limit = Infinity; // another key, other limits
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
    constructor(status, code, message, requestId, retryAfter, details) {
      super(message);
      this.details = details || null; // the envelope's details (validation_failed: errors[])
      this.status = status;
      this.code = code;
      this.requestId = requestId;
      this.retryAfter = retryAfter; // seconds, or null
    }
    get transient() { return this.status === 429 || this.status === 503; }
    explain() {
      if (this.code === "unauthorized") {
        return "The API key was not accepted (unauthorized): check the key field. " + this.message;
      }
      if (this.code === "forbidden") return "This API key is disabled (forbidden). " + this.message;
      const id = this.requestId ? " (request " + this.requestId + ")" : "";
      // What was wrong with which field, in the service's words ("interval.region: start 2000
      // is after end 1000"), rather than only "the request failed validation".
      const fields = ((this.details && this.details.errors) || []).slice(0, 3)
        .filter((e) => !this.message.includes(e.msg))
        .map((e) => (e.loc || []).filter((part) => part !== "body").join(".") + ": " + e.msg);
      return this.code + ": " + this.message + (fields.length ? " " + fields.join("; ") : "") + id;
    }
  }

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  // ---- pacing -----------------------------------------------------------------------------
  // The earliest time the next request may go: pushed back by a 429's Retry-After and by a
  // response saying the key's bucket is empty (RateLimit-Remaining: 0), as the CLI does, so that
  // the page waits for a token instead of spending a 429 to find out.
  const pacer = {
    notBefore: 0,
    observe(response) {
      const limit = Number(response.headers.get("RateLimit-Limit"));
      const remaining = Number(response.headers.get("RateLimit-Remaining"));
      const reset = Number(response.headers.get("RateLimit-Reset"));
      if (!(limit > 0) || response.headers.get("RateLimit-Remaining") === null || remaining > 0 ||
          !(reset >= 0)) return;
      // Reset is the time to a full bucket; one token takes Reset/Limit of it.
      this.pushBack(reset / limit);
    },
    pushBack(seconds) { this.notBefore = Math.max(this.notBefore, Date.now() + seconds * 1000); },
    async ready() {
      const wait = this.notBefore - Date.now();
      if (wait > 0) await sleep(wait);
    },
  };

  // How many of this page's tasks may hold one of the key's concurrency slots at once. Unbounded
  // until the service refuses one for concurrency; then one fewer than were running, so the
  // refused task queues here for the next free slot instead of asking again and again.
  const slots = {
    limit: Infinity,
    active: 0,
    waiting: [],
    async acquire() {
      while (this.active >= this.limit) await new Promise((r) => this.waiting.push(r));
      this.active++;
    },
    release() {
      this.active--;
      const next = this.waiting.shift();
      if (next) next();
    },
    shrinkAfterRefusal() {
      // Called by a refused task that still holds its slot.
      this.limit = Math.max(1, Math.min(this.limit, this.active - 1));
    },
  };

  async function fetchOnce(method, path, body, extraHeaders) {
    const init = { method, headers: Object.assign(headers(body !== undefined), extraHeaders || {}),
                   credentials: "omit", cache: "no-store" };
    if (body !== undefined) init.body = JSON.stringify(body);
    await pacer.ready();
    const response = await fetch(path, init);
    pacer.observe(response);
    let payload = null;
    try { payload = await response.json(); } catch (e) { payload = null; }
    if (response.status >= 400) {
      const error = (payload && payload.error) || {};
      const header = response.headers.get("Retry-After");
      throw new ApiError(response.status, error.code || "http_" + response.status,
                         error.message || "HTTP " + response.status,
                         error.request_id || response.headers.get("X-Request-Id"),
                         header !== null && header !== "" && !isNaN(Number(header)) ? Number(header) : null,
                         error.details);
    }
    return { status: response.status, body: payload };
  }

  // One call, with 429 and 503 waited out for Retry-After (else an exponential back-off capped at
  // 30 s) within RETRY_BUDGET_MS. Every wait is reported through onWait, which the progress rows
  // show: a refusal is never retried silently. opts.slot, when given, is the task's concurrency
  // slot: a 429 gives it up and queues for the next one.
  async function call(method, path, body, extraHeaders, opts) {
    const onWait = (opts && opts.onWait) || (() => {});
    const deadline = Date.now() + RETRY_BUDGET_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        return await fetchOnce(method, path, body, extraHeaders);
      } catch (e) {
        if (!(e instanceof ApiError) || !e.transient) throw e;
        // At least 0.2 s, so that a Retry-After of 0 cannot turn into a burst of requests.
        const seconds = Math.max(0.2, e.retryAfter !== null ? e.retryAfter
                                                           : Math.min(30, 0.5 * 2 ** (attempt - 1)));
        if (Date.now() + seconds * 1000 > deadline) throw e;
        const event = { path, status: e.status, code: e.code, message: e.message,
                        retry_after: e.retryAfter, attempt, at: Date.now() };
        state.throttled.push(event);
        if (e.status === 429) pacer.pushBack(seconds);
        onWait(event, seconds);
        if (e.status === 429 && opts && opts.slot) {
          slots.shrinkAfterRefusal();
          slots.release();
          await sleep(seconds * 1000);
          if (slots.active >= slots.limit) onWait(Object.assign({}, event, { queued: true }), 0);
          await slots.acquire();
        } else {
          await sleep(seconds * 1000);
        }
        if (opts && opts.onResume) opts.onResume();
      }
    }
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
  // Every record of a FASTA (bare bases make one record named "sequence").
  function parseFasta(text) {
    const found = [];
    let record = null;
    for (const raw of text.split(/\r?\n/)) {
      const line = raw.trim();
      if (line.startsWith(">")) {
        record = { name: line.slice(1).trim().split(/\s+/)[0] || "sequence", chunks: [] };
        found.push(record);
        continue;
      }
      if (line.startsWith(";") || !line) continue;
      if (!record) {
        record = { name: "sequence", chunks: [] };
        found.push(record);
      }
      record.chunks.push(line.replace(/\s+/g, ""));
    }
    const out = [];
    for (const r of found) {
      const sequence = r.chunks.join("").toUpperCase();
      const bad = sequence.search(/[^ACGTN]/);
      if (bad >= 0) {
        throw new Error(r.name + ": only A, C, G, T and N are accepted; found '" + sequence[bad] +
                        "' at base " + (bad + 1));
      }
      if (sequence) out.push(finishRecord({ name: r.name.slice(0, 128), sequence, index: out.length }));
    }
    if (!out.length) throw new Error("no sequence: paste a FASTA record or bare bases");
    return out;
  }

  // Where a record sits on the genome, from its name. THE RULE (said on the page too): a name of
  // the form contig:start-end or contig_start-end (1-based, inclusive; commas allowed in the
  // numbers, as in chr20:5,750,001-5,760,000) whose span equals the record's length is drawn at
  // start..end on contig; any other name is drawn as its own sequence from base 1. The last ':'
  // or '_' before the numbers splits, so contigs such as chrUn_gl000220 keep their name.
  function placementOf(name, length) {
    const m = /^(.+)[:_]([0-9][0-9,]*)-([0-9][0-9,]*)$/.exec(name || "");
    if (!m) return { placed: false, why: "the name holds no contig:start-end" };
    const start = Number(m[2].replace(/,/g, ""));
    const end = Number(m[3].replace(/,/g, ""));
    if (!(start >= 1) || end < start) return { placed: false, why: "start-end is not a range" };
    if (end - start + 1 !== length) {
      return { placed: false, why: "the name spans " + (end - start + 1).toLocaleString("en-US") +
               " bp but the record has " + length.toLocaleString("en-US") };
    }
    return { placed: true, contig: m[1], start, end, offset: start - 1 };
  }

  function finishRecord(record) {
    const placement = placementOf(record.name, record.sequence.length);
    record.placement = placement;
    // igv reads "name:start-end" as a locus, so an unplaced track name must not hold a colon.
    record.igvName = placement.placed ? placement.contig : record.name.replace(/[:\s]/g, "_");
    return record;
  }

  function locusText(record) {
    const p = record.placement;
    return p.placed ? p.contig + ":" + p.start.toLocaleString("en-US") + "-" + p.end.toLocaleString("en-US")
                    : record.igvName + ":1-" + record.sequence.length.toLocaleString("en-US");
  }

  function selectedRecord() {
    const index = Number($("record").value || 0);
    return records[index] || null;
  }

  function readRecords() {
    try {
      records = parseFasta($("fasta").value);
    } catch (e) {
      records = [];
      $("record").replaceChildren();
      $("record").disabled = true;
      $("sequence-info").textContent = $("fasta").value.trim() ? e.message : "";
      return;
    }
    const previous = $("record").value;
    resultsByRecord.clear();
    $("record").replaceChildren(...records.map((r, i) => {
      const option = document.createElement("option");
      option.value = String(i);
      option.textContent = (i + 1) + ". " + r.name + " (" + r.sequence.length.toLocaleString("en-US") + " bp)";
      return option;
    }));
    if (previous && records[Number(previous)]) $("record").value = previous;
    $("record").disabled = records.length < 2;
    showRecordInfo();
  }

  function showRecordInfo() {
    const record = selectedRecord();
    if (!record) { $("sequence-info").textContent = ""; return; }
    const where = record.placement.placed
      ? "drawn at " + locusText(record) + " (from its name)"
      : "drawn as its own sequence, 1-" + record.sequence.length.toLocaleString("en-US") +
        " (" + record.placement.why + ")";
    $("sequence-info").textContent = records.length + (records.length === 1 ? " record" : " records") +
      "; " + record.name + ": " + where;
  }

  $("fasta").addEventListener("input", readRecords);
  $("record").addEventListener("change", async () => {
    showRecordInfo();
    const record = selectedRecord();
    if (!record) return;
    // Draw the chosen record, with whatever was computed for it already.
    state.status = "switching";
    try {
      await showReference(record);
      const cached = resultsByRecord.get(record.index) || new Map();
      for (const [task, result] of cached) await showResult(task, result);
      state.status = "shown";
      say(cached.size ? "Showing " + record.name + " (" + [...cached.keys()].join(", ") + ")."
                      : "Showing " + record.name + ": press Run for its tracks.", "info");
    } catch (e) {
      state.status = "error";
      say(String(e.message || e), "error");
    }
  });

  $("fasta-file").addEventListener("change", async (event) => {
    const file = event.target.files[0];
    if (!file) return;
    try {
      let stream = file.stream();
      const head = new Uint8Array(await file.slice(0, 2).arrayBuffer());
      if (head[0] === 0x1f && head[1] === 0x8b) stream = stream.pipeThrough(new DecompressionStream("gzip"));
      $("fasta").value = await new Response(stream).text();
      readRecords();
    } catch (e) {
      say("Cannot read " + file.name + ": " + e.message, "error");
    }
  });

  // ---- running ----------------------------------------------------------------------------
  function selectedTasks() {
    return TASKS.filter((t) => document.querySelector('.task[data-task="' + t + '"] input').checked);
  }

  // The expression rule (the page says it beside the task): the model scores one 9,198 bp window
  // centred on a TSS; the viewer takes the record's centre, base floor(length / 2) counted from 0,
  // as the TSS (4,599 for a record of exactly 9,198 bp).
  function tssIndex(record) {
    return Math.floor(lengthOf(record) / 2);
  }

  function requestBody(task, record) {
    // The record's own name: the service echoes it, and a job reopened later is placed from it.
    // A locus sends its interval instead: the service cuts the bases from its reference.
    const body = record.interval ? { interval: Object.assign({}, record.interval) }
                                 : { sequence: record.sequence, sequence_name: record.name };
    const model = document.querySelector('.task[data-task="' + task + '"] select').value;
    if (model) body.model = model;
    // The promoter cutoff; splice and chromatin keep their defaults (at low cutoffs their
    // responses grow to thousands of features, or past the splice size cap).
    if (task === "promoter" && $("threshold").value !== "") {
      body.options = { threshold: Number($("threshold").value) };
    }
    if (task === "expression") {
      body.options = { description: $("description").value || "tissue" };
      body.tss_index = tssIndex(record);
    }
    return body;
  }

  function progressRow(task) {
    const row = document.createElement("div");
    row.className = "progress";
    row.dataset.task = task;
    const label = document.createElement("span");
    label.className = "progress-task";
    label.textContent = task;
    const bar = document.createElement("progress");
    bar.max = 100;
    const text = document.createElement("span");
    text.className = "progress-state";
    const note = document.createElement("div");
    note.className = "progress-note";
    row.append(label, bar, text, note);
    $("progress-list").appendChild(row);
    const setState = (kind, words) => { row.dataset.state = kind; text.textContent = words; };
    setState("queued", "queued");
    bar.value = 0;
    return {
      set(percent, message) {
        bar.value = percent;
        setState("running", Math.round(percent) + "%" + (message ? " " + message : ""));
        note.textContent = "";
      },
      // A synchronous call reports no progress: an indeterminate bar, not a "0%" that never moves.
      running() {
        bar.removeAttribute("value");
        setState("running", "running");
        note.textContent = "";
      },
      waiting(event, seconds) {
        bar.value = 0;
        if (event.queued) {
          setState("waiting", "waiting for a free slot");
          note.textContent = "Another task of this key is running; this one starts when it ends.";
          return;
        }
        setState("waiting", event.status + ": retry " + (event.attempt + 1) + " in " + seconds + " s");
        note.textContent = (event.status === 429 ? "Too many requests: " : "Unavailable: ") + event.message;
      },
      done() { bar.value = 100; setState("done", "done"); note.textContent = ""; },
      failed(text) { bar.value = 0; setState("failed", "failed"); note.textContent = text; },
    };
  }

  async function pollJob(jobId, progress) {
    for (;;) {
      const { status, body } = await call("GET", "/v1/tasks/jobs/" + encodeURIComponent(jobId),
                                          undefined, undefined,
                                          { onWait: (e, s) => progress.waiting(e, s) });
      if (status === 200) return body;
      const p = (body.data && body.data.progress) || {};
      progress.set(Number(p.current_percent || 0), p.message);
      await sleep(POLL_MS);
    }
  }

  async function runTask(task, record) {
    const progress = progressRow(task);
    const body = requestBody(task, record);
    const path = "/v1/tasks/" + task + "/predict";
    // The slot is held for the whole task: an async job keeps its concurrency slot until it ends.
    if (slots.active >= slots.limit) progress.waiting({ queued: true }, 0);
    await slots.acquire();
    const opts = { slot: true, onWait: (e, s) => progress.waiting(e, s) };
    try {
      let result;
      if (lengthOf(record) > ASYNC_ABOVE[task]) {
        progress.set(0, "submitting");
        opts.onResume = () => progress.set(0, "submitting");
        const { body: submitted } = await call("POST", path, body, { Prefer: "respond-async" }, opts);
        result = await pollJob(submitted.data.job_id, progress);
      } else {
        progress.running();
        opts.onResume = () => progress.running();
        result = (await call("POST", path, body, undefined, opts)).body;
      }
      progress.done();
      return result;
    } catch (e) {
      progress.failed(e instanceof ApiError ? e.explain() : String(e.message || e));
      throw e;
    } finally {
      slots.release();
    }
  }

  $("run").addEventListener("click", async () => {
    if (inputMode() === "locus") { await runLocus(); return; }
    if (inputMode() === "variants") { await runVariants(); return; }
    if (!records.length) readRecords();
    const record = selectedRecord();
    if (!record) {
      say($("sequence-info").textContent || "no sequence: paste a FASTA record or bare bases", "error");
      return;
    }
    const tasks = selectedTasks();
    if (!tasks.length) { say("Choose at least one task.", "error"); return; }
    const tooShort = tasks.filter((t) => record.sequence.length < MIN_BP[t]);
    if (tooShort.length) {
      say(tooShort.map((t) => t + " needs at least " + MIN_BP[t].toLocaleString("en-US") + " bp").join("; ") +
          " (" + record.name + " has " + record.sequence.length.toLocaleString("en-US") + ")", "error");
      return;
    }
    await runAll(record, tasks);
  });

  async function runAll(record, tasks) {
    state.status = "running";
    state.tracks = {};
    state.errors = [];
    state.expression = null;
    state.throttled = [];
    $("progress-list").replaceChildren();
    say("Running " + tasks.join(", ") + " on " + record.name + " (" +
        lengthOf(record).toLocaleString("en-US") + " bp)...", "info");
    $("run").disabled = true;
    try {
      // A locus is drawn once the service has accepted it: a mistyped region must not first
      // build a reference of millions of Ns, nor leave a view of a place that does not exist.
      if (!record.interval) await showReference(record);
      const outcomes = await Promise.allSettled(tasks.map((t) => runTask(t, record)));
      if (record.interval) {
        if (outcomes.some((o) => o.status === "fulfilled")) await showReference(record);
        else clearView();
      }
      const failures = [];
      const stored = new Map();
      for (let i = 0; i < tasks.length; i++) {
        if (outcomes[i].status === "fulfilled") {
          stored.set(tasks[i], outcomes[i].value);
          await showResult(tasks[i], outcomes[i].value);
        } else {
          const e = outcomes[i].reason;
          const text = e instanceof ApiError ? e.explain() : String(e.message || e);
          failures.push(tasks[i] + ": " + text);
          state.errors.push({ task: tasks[i], code: e.code || "error", message: text,
                              reason: (e.code || "error") + " " + (e.message || e) });
        }
      }
      resultsByRecord.set(record.index, stored);
      if (failures.length) {
        // One wrong key fails every task the same way: say it once.
        // (the same reason under each task's own request id: a mistyped region, too)
        const unique = [...new Set(state.errors.map((x) => x.reason))];
        const lead = record.interval ? "The service refused " + record.name + ": " : "";
        say(unique.length === 1 && failures.length > 1 ? lead + state.errors[0].message : failures.join(" | "), "error");
        state.status = "error";
      } else {
        const n = state.throttled.length;
        const waited = n ? " (" + n + (n === 1 ? " request was" : " requests were") +
                           " refused with 429/503 and retried; see the rows below)" : "";
        say("Done: " + tasks.join(", ") + " on " + record.name + "." + waited, "info");
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
      // The pasted record of the same name and length, else Ns of the job's length (a job's
      // sequence is not stored with its result); placed by the same rule as a pasted record.
      let record = records.find((r) => r.name === name && r.sequence.length === meta.sequence_length);
      if (meta.interval) record = locusRecord(meta.interval);
      if (!record) record = finishRecord({ name, sequence: "N".repeat(meta.sequence_length || 1), index: -1 });
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

  // Moves every row of a track from the record's coordinates onto the sequence igv draws: the
  // contig and offset of a placed record, or the record's igv name. Rows already on the contig
  // (a service that shifted them itself) are left as they are.
  function rebase(text, format, record) {
    const p = record.placement;
    const offset = p.placed ? p.offset : 0;
    const seqid = record.igvName;
    const shift = (value) => String(Number(value) + offset);
    const out = [];
    for (const line of text.split("\n")) {
      if (format === "gff3" && line.startsWith("##sequence-region")) {
        const f = line.split(/\s+/);
        if (f.length >= 4 && f[1] !== seqid) out.push([f[0], seqid, shift(f[2]), shift(f[3])].join(" "));
        else out.push(line);
        continue;
      }
      if (!line.trim() || line.startsWith("#") || line.startsWith("track") || line.startsWith("browser")) {
        out.push(line);
        continue;
      }
      const f = line.split("\t");
      if (f[0] === seqid) { out.push(line); continue; }
      f[0] = seqid;
      if (format === "gff3") {
        f[3] = shift(f[3]);
        f[4] = shift(f[4]);
      } else {
        f[1] = shift(f[1]);
        f[2] = shift(f[2]);
        // BED thickStart/thickEnd are coordinates too (blockStarts are relative: untouched).
        if (format === "bed" && f.length >= 8 && /^\d+$/.test(f[6]) && /^\d+$/.test(f[7])) {
          f[6] = shift(f[6]);
          f[7] = shift(f[7]);
        }
      }
      out.push(f.join("\t"));
    }
    return out.join("\n");
  }

  // igv's track labels, smaller and in a band at the top of each track that the tracks leave
  // free (annotation margin, bedGraph headroom): a label never covers a feature. igv styles its
  // shadow root with an adopted sheet, so ours is adopted after it to take precedence.
  const labelSheet = new CSSStyleSheet();
  labelSheet.replaceSync(".igv-track-label{top:1px;left:4px;font-size:11px;line-height:" +
                         (LABEL_BAND_PX - 4) + "px;padding:0 4px;border-color:#9aa3ad;}");
  function styleIgv() {
    const root = $("igv").shadowRoot;
    if (!root || root.adoptedStyleSheets.includes(labelSheet)) return;
    root.adoptedStyleSheets = [...root.adoptedStyleSheets, labelSheet];
  }

  function wholeLocus(record) {
    const p = record.placement;
    return p.placed ? p.contig + ":" + p.start + "-" + p.end : record.igvName + ":1-" + record.sequence.length;
  }

  // igv keeps its scale when the window changes size, so a narrower window would cut the record
  // off: a view that showed the whole record is refitted to it after a resize.
  const fit = { whole: true, quietUntil: 0, timer: null };
  function viewShowsWholeRecord() {
    const frame = browser && browser.referenceFrameList && browser.referenceFrameList[0];
    if (!frame || !current) return false;
    const offset = current.placement.placed ? current.placement.offset : 0;
    return frame.start <= offset + 1 && frame.end >= offset + current.sequence.length - 1;
  }
  window.addEventListener("resize", () => {
    fit.quietUntil = Date.now() + 1000;
    clearTimeout(fit.timer);
    fit.timer = setTimeout(async () => {
      if (!browser || !current || !fit.whole) return;
      fit.quietUntil = Date.now() + 1000;
      await browser.search(wholeLocus(current));
    }, 250);
  });

  async function showReference(record) {
    current = record;
    state.placement = Object.assign({ name: record.name, locus: locusText(record) }, record.placement);
    const p = record.placement;
    // A placed record is a slice of its contig: igv's FASTA reader takes "contig:start-end @len=N"
    // as the bases at start..end of a contig N long, so the ruler and the locus box read genome
    // coordinates.
    const header = p.placed ? p.contig + ":" + p.start + "-" + p.end + " @len=" + p.end : record.igvName;
    const fasta = ">" + header + "\n" + record.sequence + "\n";
    const options = {
      reference: { id: record.igvName, name: record.name, fastaURL: dataUrl(fasta), indexed: false },
      locus: wholeLocus(record),
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
    styleIgv();
    fit.whole = true;
    fit.quietUntil = Date.now() + 1000;
    browser.on("locuschange", () => {
      // A change the user made (not one that follows a window resize) decides whether the view
      // is refitted to the record on the next resize.
      if (Date.now() >= fit.quietUntil) fit.whole = viewShowsWholeRecord();
    });
    window.dnaserveViewer.browser = browser;
    $("summary").replaceChildren();
    $("expression").replaceChildren(expressionHint());
    $("locus-rule-status").textContent = p.placed
      ? record.name + " is drawn at " + locusText(record) + "."
      : record.name + " is drawn as its own sequence from base 1: " + p.why + ".";
  }

  function expressionHint() {
    const hint = document.createElement("p");
    hint.className = "hint";
    hint.textContent = "Run the expression task (a record of 9,198 bp or more) to see its prediction here.";
    return hint;
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

  const BEDGRAPH_HEIGHT = 70;

  async function showResult(task, result) {
    const data = result.data || {};
    const formats = data.formats || {};
    let features = 0;
    for (const spec of TRACKS[task]) {
      const raw = formats[spec.format];
      if (typeof raw !== "string") continue;
      const text = rebase(raw, spec.format, current);
      if (spec.format === "bedgraph") {
        for (const part of splitTracks(text)) {
          features += part.rows.length;
          // enhancer has two tracks (dev, hk): name each by its own track line.
          const name = task === "enhancer" ? "enhancer " + trackName(part.header, "") : spec.label;
          // A fixed range with headroom above the highest value keeps the label band empty.
          const values = part.rows.map((r) => Number(r.split("\t")[3])).filter((v) => isFinite(v));
          const top = Math.max(0, ...values);
          const min = Math.min(0, ...values);
          const headroom = BEDGRAPH_HEIGHT / (BEDGRAPH_HEIGHT - LABEL_BAND_PX - 2);
          await browser.loadTrack({ type: "wig", format: "bedgraph", name,
                                    url: dataUrl(part.rows.join("\n") + "\n"), color: spec.color,
                                    height: BEDGRAPH_HEIGHT, autoscale: false, min,
                                    max: min + ((top - min) || 1) * headroom });
        }
      } else {
        const rows = text.split("\n").filter((l) => l.trim() && !l.startsWith("#") && !l.startsWith("track"));
        features += rows.length;
        await browser.loadTrack({ type: "annotation", format: spec.format, name: spec.label, url: dataUrl(text),
                                  color: spec.color, displayMode: "EXPANDED", indexed: false,
                                  height: spec.format === "gff3" ? 100 : 60,
                                  margin: LABEL_BAND_PX + 4 });
      }
    }
    if (task === "expression") showExpression(data, result.meta || {}, current);
    state.tracks[task] = { features, model: (result.meta || {}).model, job_id: (result.meta || {}).job_id };
    addSummary(task, result);
  }

  function element(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function showExpression(data, meta, record) {
    const p = data.prediction || {};
    const box = $("expression");
    box.replaceChildren();
    box.append(element("div", "value", Number(p.expression_tpm).toFixed(2) + " TPM"),
               element("div", "", "log(TPM+1) " + Number(p.expression_log_tpm).toFixed(3) +
                       " · model " + (meta.model || "")));
    // Which training context the description was matched to, and how closely.
    const match = meta.description_match;
    const description = ((data.input && data.input.options) || {}).description || $("description").value;
    const context = element("div", "context");
    if (!match) {
      context.append(element("div", "", "This model has no training contexts: the description is not used."));
    } else {
      const contexts = match.contexts || [];
      if (!match.matched) {
        const best = contexts[0];
        context.append(element("div", "warning",
          "Unmatched: \u201c" + description + "\u201d resembles no training context" +
          (best ? " (closest: " + best.name + ", similarity " + best.similarity.toFixed(2) + ")" : "") +
          ". The prediction is the mean over all contexts."));
      } else {
        context.append(element("div", "matched", "Context: " + contexts[0].name + " (" + contexts[0].id +
                               "), similarity " + contexts[0].similarity.toFixed(2)));
      }
      const list = element("ol", "contexts");
      for (const c of contexts) list.append(element("li", "", c.name + " (" + c.id + ") " + c.similarity.toFixed(2)));
      context.append(element("div", "small", "Closest contexts to \u201c" + description + "\u201d:"), list);
    }
    box.append(context);
    // The TSS rule, said with this record's numbers.
    const counts = meta.task_specific_counts || {};
    const tss = counts.tss_index !== undefined ? counts.tss_index : tssIndex(record);
    const scoredWindow = counts.scored_window || (data.input || {}).scored_window || [];
    let where = "";
    if (record && record.placement.placed) {
      // On '-' the service analysed the reverse complement: its base 0 is the interval's end.
      const at = record.interval && record.interval.strand === "-" ? record.placement.end - tss
                                                                    : record.placement.offset + tss + 1;
      where = " = " + record.placement.contig + ":" + at.toLocaleString("en-US");
    }
    box.append(element("div", "small tss", "TSS: base " + tss.toLocaleString("en-US") + " (0-based) of " +
      (meta.sequence_length || lengthOf(record)).toLocaleString("en-US") + where +
      ", the record's centre; window " + JSON.stringify(scoredWindow) + "."));
    state.expression = Object.assign({}, p, { match: match || null, tss_index: tss });
  }

  // One block per task: its model and time, then each count on its own line, keys written with
  // spaces so that they wrap between words, never inside one.
  function addSummary(task, result) {
    const meta = result.meta || {};
    const block = element("div", "summary-task");
    block.dataset.task = task;
    block.append(element("div", "summary-head", task + " · " + (meta.model || "") + " · " +
                         (meta.inference_time_ms || 0) + " ms"));
    const list = element("dl");
    const counts = meta.task_specific_counts || {};
    for (const key of Object.keys(counts)) {
      if (key === "task") continue;
      const value = counts[key];
      list.append(element("dt", "", key.replace(/_/g, " ")),
                  element("dd", "", typeof value === "object" ? JSON.stringify(value).replace(/,/g, ", ")
                                                                  : String(value)));
    }
    block.append(list);
    $("summary").appendChild(block);
  }

  // ---- locus input ------------------------------------------------------------------------
  // A locus is a stretch of the genome the service holds: the tasks are asked with `interval`
  // instead of bases, and answer in genome coordinates on the contig as typed. The page never
  // holds the bases: igv draws the stretch over Ns.
  function lengthOf(record) {
    return record.interval ? record.placement.end - record.placement.start + 1 : record.sequence.length;
  }

  function inputMode() {
    const checked = document.querySelector('input[name="mode"]:checked');
    return checked ? checked.value : "sequence";
  }

  function showMode() {
    const mode = inputMode();
    for (const box of document.querySelectorAll(".mode-input")) box.hidden = box.dataset.mode !== mode;
    $("task-input").hidden = mode === "variants";
    $("variant-panel").hidden = mode !== "variants";
    for (const panel of document.querySelectorAll(".task-panel")) panel.hidden = mode === "variants";
    $("variant-details").hidden = mode !== "variants" || !$("variant-details").childElementCount;
  }
  for (const radio of document.querySelectorAll('input[name="mode"]')) radio.addEventListener("change", showMode);

  const digits = (text) => Number(text.replace(/,/g, ""));
  const clip = (text) => (text.length > 60 ? text.slice(0, 57) + "..." : text);

  // "chr20:5,750,001-5,760,000" (optionally ":-" or " -" after it) or "chr20 5750001 5760000 [-]".
  // Only the shape is checked here; the service says what is wrong with a region of that shape
  // (an unknown contig, start after end, past the contig's end), in its own words.
  function parseLocus(text, strand) {
    const t = text.trim();
    if (!t) throw new Error("Type a region, e.g. chr20:5,750,001-5,760,000.");
    let m = /^([^\s:]+):([0-9][0-9,]*)-([0-9][0-9,]*)(?:\s*[:\s]\s*([+-]))?$/.exec(t);
    let request;
    if (m) {
      request = { region: m[1] + ":" + m[2] + "-" + m[3] };
    } else if ((m = /^(\S+)\s+([0-9][0-9,]*)\s+([0-9][0-9,]*)(?:\s+([+-]))?$/.exec(t))) {
      request = { contig: m[1], start: digits(m[2]), end: digits(m[3]) };
    } else {
      throw new Error("\u201c" + clip(t) + "\u201d is not a region: type contig:start-end " +
                      "(chr20:5,750,001-5,760,000) or contig start end [strand] (chr20 5750001 5760000 -).");
    }
    if (m[4]) {
      strand = m[4];
      $("locus-strand").value = strand;
    }
    request.strand = strand;
    return { contig: m[1], start: digits(m[2]), end: digits(m[3]), strand, request };
  }

  // A record for a stretch of the genome: placed at start..end of its contig, its bases Ns
  // (made only when igv draws it).
  function locusRecord(locus) {
    const { contig, start, end } = locus;
    const strand = locus.strand || "+";
    const record = {
      name: contig + ":" + start.toLocaleString("en-US") + "-" + end.toLocaleString("en-US") +
            (strand === "-" ? " (- strand)" : ""),
      index: -1,
      interval: locus.request || { contig, start, end, strand },
      placement: { placed: true, contig, start, end, offset: start - 1 },
      igvName: contig,
    };
    let bases = null;
    Object.defineProperty(record, "sequence", {
      get() { return bases || (bases = "N".repeat(Math.max(1, end - start + 1))); },
    });
    return record;
  }

  function clearView() {
    if (browser) igv.removeBrowser(browser);
    browser = null;
    current = null;
    $("igv").replaceChildren();
    $("locus-rule-status").textContent = "";
  }

  function fail(message, code) {
    state.status = "error";
    state.errors = [{ code: code || "error", message }];
    say(message, "error");
    $("igv").dataset.state = "error";
  }

  async function runLocus() {
    let record;
    try {
      record = locusRecord(parseLocus($("locus").value, $("locus-strand").value));
    } catch (e) {
      fail(e.message, "bad_region");
      return;
    }
    const tasks = selectedTasks();
    if (!tasks.length) { fail("Choose at least one task."); return; }
    // A region whose start is after its end is the service's to explain.
    const length = lengthOf(record);
    const tooShort = length > 0 ? tasks.filter((t) => length < MIN_BP[t]) : [];
    if (tooShort.length) {
      fail(tooShort.map((t) => t + " needs at least " + MIN_BP[t].toLocaleString("en-US") + " bp").join("; ") +
           " (" + record.name + " is " + length.toLocaleString("en-US") + " bp)");
      return;
    }
    await runAll(record, tasks);
  }

  // ---- variant input ----------------------------------------------------------------------
  const VARIANT_ERRORS = {
    invalid_variant: "not a variant the service can read (contig:position:REF:ALT)",
    unsupported_allele: "a symbolic or '*' allele cannot be scored",
    unsupported_variant: "this kind of variant cannot be scored",
    indel_too_long: "insertions and deletions of more than 50 bp are not scored",
    unknown_assembly: "the assembly is not one the service holds",
    unknown_contig: "the contig is not in the service's reference",
    position_out_of_range: "the position is beyond the contig's end",
    reference_mismatch: "REF does not match the reference genome",
    duplicate_variant: "the same variant is already in the list",
  };
  const SPLICE_KINDS = [["acceptor_gain", "AG"], ["acceptor_loss", "AL"], ["donor_gain", "DG"],
                        ["donor_loss", "DL"]];
  const VARIANT_COLOURS = { variant: "rgb(40,40,40)", ref: "rgb(31,119,180)", alt: "rgb(214,39,40)",
                            delta: "rgb(148,103,189)", deltas: "rgb(255,127,14)" };
  let variantAnswer = null; // the last POST /v1/variants/score answer

  function variantError(error) {
    return "Not scored: " + (VARIANT_ERRORS[error.code] || error.code) + ". " + error.message;
  }

  function scorersRequest() {
    const scorers = {};
    for (const box of document.querySelectorAll("#scorers .scorer")) {
      if (!box.querySelector("input[type=checkbox]").checked) continue;
      const name = box.dataset.scorer;
      if (name === "splice") {
        const distance = $("splice-distance").value;
        scorers.splice = distance === "" ? {} : { distance: Number(distance) };
      } else if (name === "expression") {
        const contexts = $("variant-contexts").value.split(",").map((c) => c.trim()).filter(Boolean);
        if (!contexts.length) throw new Error("The expression scorer needs at least one context (e.g. E066, brain).");
        scorers.expression = { contexts };
      } else if (name === "chromatin") {
        const top = $("chromatin-top").value;
        scorers.chromatin = top === "" ? {} : { top: Number(top) };
      } else {
        scorers[name] = {};
      }
    }
    if (!Object.keys(scorers).length) throw new Error("Choose at least one scorer.");
    return scorers;
  }

  async function runVariants() {
    const variants = $("variants").value.split(/[\s,;]+/).filter(Boolean);
    if (!variants.length) { fail("Type at least one variant, e.g. chr20:5753600:A:G."); return; }
    if (variants.length > 100) { fail("At most 100 variants a request (" + variants.length + " typed)."); return; }
    let scorers;
    try { scorers = scorersRequest(); } catch (e) { fail(e.message); return; }
    state.status = "running";
    state.tracks = {};
    state.errors = [];
    state.variants = null;
    state.throttled = [];
    $("progress-list").replaceChildren();
    $("variant-summary").replaceChildren();
    $("variant-details").replaceChildren();
    showMode();
    say("Scoring " + variants.length + (variants.length === 1 ? " variant" : " variants") + " (" +
        Object.keys(scorers).join(", ") + ")...", "info");
    $("run").disabled = true;
    const progress = progressRow("variants");
    await slots.acquire();
    try {
      progress.running();
      const { body } = await call("POST", "/v1/variants/score", { variants, scorers }, undefined,
                                  { slot: true, onWait: (e, s) => progress.waiting(e, s),
                                    onResume: () => progress.running() });
      progress.done();
      variantAnswer = body;
      const data = body.data || {};
      const results = data.results || [];
      const scored = results.filter((r) => !r.error);
      state.variants = { results, scorers: data.scorers || {}, counts: data.counts || {},
                         model: (body.meta || {}).model };
      showVariantSummary(data, body.meta || {});
      showVariantDetails(data);
      if (scored.length) await showVariant(scored[0]);
      else clearView();
      const problems = results.filter((r) => r.error).map((r) => r.input + ": " + variantError(r.error));
      state.errors = results.filter((r) => r.error).map((r) => ({ variant: r.input, code: r.error.code,
                                                                  message: variantError(r.error) }));
      const head = "Scored " + scored.length + " of " + results.length +
                   (results.length === 1 ? " variant" : " variants") + ".";
      say(problems.length ? head + " " + problems.join(" | ") : head, problems.length ? "warning" : "info");
      state.status = "done";
    } catch (e) {
      progress.failed(e instanceof ApiError ? e.explain() : String(e.message || e));
      fail(e instanceof ApiError ? e.explain() : String(e.message || e), e.code);
    } finally {
      slots.release();
      $("run").disabled = false;
      if (state.status === "done") $("igv").dataset.state = "done";
    }
  }

  // The scorers' models, the counts, the contexts that matched nothing, and which variant is
  // drawn.
  function showVariantSummary(data, meta) {
    const box = $("variant-summary");
    const scorers = data.scorers || {};
    const counts = data.counts || {};
    const models = element("dl", "models");
    for (const name of Object.keys(scorers)) {
      models.append(element("dt", "", name), element("dd", "", scorers[name].model || meta.model || ""));
    }
    box.append(element("div", "small", (counts.variants || 0) + " variants, " + (counts.scored || 0) +
                       " scored, " + (counts.errors || 0) + " not scored; models:"), models);
    // A context that named no training context is scored as the mean over all contexts.
    for (const c of ((scorers.expression || {}).contexts || [])) {
      if (c.matched) continue;
      box.append(element("div", "warning", "Unmatched: expression context \u201c" + c.requested +
                         "\u201d resembles no training context; its REF and ALT levels are the mean over all contexts."));
    }
    const scored = (data.results || []).filter((r) => !r.error);
    if (scored.length) {
      const label = element("label", "small", "Drawn: ");
      const choice = element("select");
      choice.id = "variant-choice";
      for (const r of scored) {
        const option = element("option", "", r.input);
        option.value = String(r.index);
        choice.append(option);
      }
      choice.addEventListener("change", async () => {
        const chosen = scored.find((r) => String(r.index) === choice.value);
        state.status = "switching";
        await showVariant(chosen);
        state.status = "shown";
      });
      label.append(choice);
      box.append(label);
    }
  }

  const fixed = (value, places) => (typeof value === "number" ? value.toFixed(places) : "");
  const signed = (value) => (value > 0 ? "+" : "") + value;

  function table(head, rows) {
    const t = element("table");
    const tr = element("tr");
    for (const h of head) tr.append(element("th", "", h));
    t.append(tr);
    for (const row of rows) {
      const r = element("tr");
      for (const cell of row) r.append(element("td", "", cell));
      t.append(r);
    }
    return t;
  }

  // One block per variant, in request order: its scores, or why it was not scored.
  function showVariantDetails(data) {
    const box = $("variant-details");
    for (const r of data.results || []) {
      const block = element("div", "variant-result");
      block.dataset.index = String(r.index);
      block.append(element("div", "variant-head", r.input));
      if (r.error) {
        block.append(element("div", "variant-error", variantError(r.error)));
        box.append(block);
        continue;
      }
      if (r.splice) {
        const s = r.splice;
        block.append(element("div", "variant-scorer", "splice (" + data.scorers.splice.model + ", \u00b1" +
                             data.scorers.splice.distance + " bp, strand " + s.strand + "): DS_max " + fixed(s.DS_max, 4)));
        const strand = s.strand === "-" ? s.minus : s.plus;
        block.append(table(["", "DS", "DP (bp)", "REF", "ALT"], SPLICE_KINDS.map(([kind, short]) =>
          ["DS_" + short, fixed(s["DS_" + short], 4), signed(s["DP_" + short]),
           fixed(strand[kind].ref, 4), fixed(strand[kind].alt, 4)])));
      }
      if (r.expression) {
        block.append(element("div", "variant-scorer", "expression (" + data.scorers.expression.model + "): " +
                             (r.expression.length ? "REF and ALT levels, TPM" : "no gene starts within " +
                              data.scorers.expression.window + " bp")));
        const rows = [];
        for (const gene of r.expression) {
          for (const c of gene.contexts) {
            rows.push([gene.gene_symbol + " (" + gene.strand + ", " + signed(gene.tss_distance) + " bp)", c.context,
                       fixed(c.ref_tpm, 3), fixed(c.alt_tpm, 3), fixed(c.log2_fold_change, 4)]);
          }
        }
        if (rows.length) block.append(table(["gene (TSS distance)", "context", "REF", "ALT", "log2 FC"], rows));
      }
      if (r.chromatin) {
        block.append(element("div", "variant-scorer", "chromatin (" + data.scorers.chromatin.model + "): top " +
                             r.chromatin.length + " of " + data.scorers.chromatin.features_total + " features by |ALT - REF|"));
        block.append(table(["feature", "category", "REF", "ALT", "ALT - REF"], r.chromatin.map((f) =>
          [f.name, f.category, fixed(f.ref, 4), fixed(f.alt, 4), fixed(f.delta, 4)])));
      }
      if (r.promoter) {
        const p = r.promoter;
        block.append(element("div", "variant-scorer", "promoter (" + data.scorers.promoter.model + "): REF " +
                             fixed(p.ref, 4) + ", ALT " + fixed(p.alt, 4) + ", ALT - REF " + fixed(p.delta, 4) +
                             " over " + p.windows + " windows"));
      }
      box.append(block);
    }
    showMode();
  }

  // One scored variant in igv: the stretch around it on its contig, the variant itself, the
  // splice probabilities of REF and ALT where the deltas were taken (on the strand the scorer
  // reports), ALT - REF, and each delta named with its DS and DP.
  async function showVariant(result) {
    const v = result.variant;
    const splice = result.splice;
    const distance = splice ? variantAnswer.data.scorers.splice.distance : 50;
    const half = Math.max(60, distance + 15);
    const start = Math.max(1, v.position - half);
    const end = v.position + Math.max(1, v.ref.length) - 1 + half;
    const record = { name: result.input, index: -1, igvName: v.contig,
                     placement: { placed: true, contig: v.contig, start, end, offset: start - 1 },
                     sequence: "N".repeat(end - start + 1) };
    await showReference(record);
    $("locus-rule-status").textContent = result.input + " is drawn at " + locusText(record) +
      " (over Ns: the page does not hold the bases).";
    const allele = (a) => (a.length > 12 ? a.slice(0, 10) + "..(" + a.length + ")" : a || "-");
    const mark = [v.contig, v.position - 1, v.position - 1 + Math.max(1, v.ref.length),
                  allele(v.ref) + ">" + allele(v.alt)].join("\t") + "\n";
    await browser.loadTrack({ type: "annotation", format: "bed", name: "variant", url: dataUrl(mark),
                              color: VARIANT_COLOURS.variant, displayMode: "EXPANDED", indexed: false,
                              height: 60, margin: LABEL_BAND_PX + 4 });
    const tracks = { variant: 1 };
    if (splice) {
      const strand = splice.strand === "-" ? splice.minus : splice.plus;
      // Per genome position: the largest REF and ALT, and the delta of largest size.
      const at = new Map();
      for (const [kind] of SPLICE_KINDS) {
        const d = strand[kind];
        const g = v.position + d.position;
        const cell = at.get(g) || { ref: 0, alt: 0, delta: 0 };
        cell.ref = Math.max(cell.ref, d.ref);
        cell.alt = Math.max(cell.alt, d.alt);
        if (Math.abs(d.alt - d.ref) >= Math.abs(cell.delta)) cell.delta = d.alt - d.ref;
        at.set(g, cell);
      }
      const positions = [...at.keys()].sort((a, b) => a - b);
      const rows = (key) => positions.map((g) => [v.contig, g - 1, g, at.get(g)[key]].join("\t")).join("\n") + "\n";
      const top = Math.max(0.05, ...positions.map((g) => Math.max(at.get(g).ref, at.get(g).alt)));
      const headroom = BEDGRAPH_HEIGHT / (BEDGRAPH_HEIGHT - LABEL_BAND_PX - 2);
      const where = " (" + splice.strand + " strand)";
      // REF and ALT on one scale, so that their bars compare.
      await browser.loadTrack({ type: "wig", format: "bedgraph", name: "splice REF" + where, url: dataUrl(rows("ref")),
                                color: VARIANT_COLOURS.ref, height: BEDGRAPH_HEIGHT, autoscale: false,
                                min: 0, max: top * headroom });
      await browser.loadTrack({ type: "wig", format: "bedgraph", name: "splice ALT" + where, url: dataUrl(rows("alt")),
                                color: VARIANT_COLOURS.alt, height: BEDGRAPH_HEIGHT, autoscale: false,
                                min: 0, max: top * headroom });
      const size = Math.max(0.01, ...positions.map((g) => Math.abs(at.get(g).delta)));
      await browser.loadTrack({ type: "wig", format: "bedgraph", name: "ALT - REF", url: dataUrl(rows("delta")),
                                color: VARIANT_COLOURS.delta, height: BEDGRAPH_HEIGHT, autoscale: false,
                                min: -size, max: size * (BEDGRAPH_HEIGHT + LABEL_BAND_PX + 2) /
                                                   (BEDGRAPH_HEIGHT - LABEL_BAND_PX - 2) });
      // Each delta a line from the variant to where it was taken, thick at that base, named
      // with its DS and DP (igv splits BED names at spaces): overlapping, each gets its own row.
      const named = SPLICE_KINDS.map(([, short]) => {
        const g = v.position + splice["DP_" + short];
        const from = Math.min(v.position, g) - 1, to = Math.max(v.position, g);
        return [v.contig, from, to, "DS_" + short + "=" + fixed(splice["DS_" + short], 2) + ",DP=" +
                signed(splice["DP_" + short]), 0, ".", g - 1, g].join("\t");
      }).join("\n") + "\n";
      await browser.loadTrack({ type: "annotation", format: "bed", name: "splice deltas (DS, DP)", url: dataUrl(named),
                                color: VARIANT_COLOURS.deltas, displayMode: "EXPANDED", indexed: false,
                                height: LABEL_BAND_PX + 4 + 4 * 30, margin: LABEL_BAND_PX + 4 });
      Object.assign(tracks, { splice_ref: positions.length, splice_alt: positions.length, splice_delta: positions.length,
                              splice_deltas: SPLICE_KINDS.length });
    }
    state.tracks = tracks;
    state.variants.drawn = result.input;
    for (const block of document.querySelectorAll("#variant-details .variant-result")) {
      block.classList.toggle("drawn", block.dataset.index === String(result.index));
    }
  }

  loadModels();
  readRecords();
  showMode();
})();
