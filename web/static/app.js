// vfx's page: sign in, jobs, a job's review, submit, operator view.
// Every string from the API or the user goes into the page through
// textContent or an attribute set by property, never through HTML.

const $ = (id) => document.getElementById(id);
const KEY = "vfx.key";
const KIND = "vfx.kind";

// el builds an element with properties and children (strings become text).
function el(tag, props = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "class") e.className = v;
    else if (k === "data") Object.assign(e.dataset, v);
    else e[k] = v;
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k ?? "")));
  return e;
}

class APIError extends Error {
  constructor(status, code, message, retryAfter) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

// errorText reads both error shapes of the API (envelope and detail).
function errorText(body, status) {
  if (body && body.error && typeof body.error === "object") return [body.error.code || String(status), body.error.message || ""];
  if (body && body.detail !== undefined) {
    const d = body.detail;
    if (typeof d === "string") return [String(status), d];
    if (Array.isArray(d)) return [String(status), d.map((x) => x.msg || JSON.stringify(x)).join("; ")];
    return [d.error_code || String(status), d.message || JSON.stringify(d)];
  }
  return [String(status), "HTTP " + status];
}

// Rate: the read limit the last answers told (personal keys), to pace live updates.
const rate = { limit: 0, remaining: 0, reset: 0 };

// readRate keeps the read limit an answer tells (personal keys).
function readRate(res) {
  const lim = res.headers.get("X-RateLimit-Limit");
  if (lim) {
    rate.limit = +lim;
    rate.remaining = +(res.headers.get("X-RateLimit-Remaining") || 0);
    rate.reset = +(res.headers.get("X-RateLimit-Reset") || 0);
  }
}

// failure is the APIError of a non-2xx answer.
async function failure(res) {
  let data = null;
  try { data = await res.json(); } catch { data = null; }
  const [code, msg] = errorText(data, res.status);
  return new APIError(res.status, code, msg, +(res.headers.get("Retry-After") || 0));
}

function authHeaders(auth) {
  const key = sessionStorage.getItem(KEY) || "";
  return auth === "key" ? { "x-api-key": key } : { Authorization: "Bearer " + key };
}

async function call(method, path, body, auth = "key") {
  const headers = authHeaders(auth);
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" });
  readRate(res);
  if (!res.ok) throw await failure(res);
  return res.json();
}

function flash(msg, isError = true) {
  const f = $("flash");
  f.textContent = msg;
  f.className = isError ? "error" : "ok";
  f.hidden = !msg;
}

function show(view) {
  for (const s of document.querySelectorAll("main > section")) s.hidden = s.id !== "view-" + view;
}

let timer = 0;
function stopTimer() {
  clearTimeout(timer);
  timer = 0;
}

// pace is the pause before the next live read: fast for keys without a
// read limit, else spread over the minute so a reader never hits 429.
function pace(busy) {
  if (rate.limit > 0) return Math.max(5000, Math.ceil(60000 / rate.limit) + 1000) * (busy ? 1 : 2);
  return busy ? 1500 : 10000;
}

function fmtTime(s) {
  if (!s) return "";
  const d = new Date(s);
  return isNaN(d) ? s : d.toLocaleString();
}

// ---- sign in ----
// signIn checks the key with the read the jobs view needs anyway (a
// personal key has 5 reads a minute), or, when it is not an API key, as
// the operator token.
async function signIn(key) {
  sessionStorage.setItem(KEY, key);
  try {
    page.first = await call("GET", "/v1/vfx/generations?limit=20");
    sessionStorage.setItem(KIND, "key");
  } catch (e) {
    if (e.status !== 401) {
      sessionStorage.removeItem(KEY);
      throw e;
    }
    try {
      await call("GET", "/admin/v1/queue", undefined, "bearer");
      sessionStorage.setItem(KIND, "operator");
    } catch {
      sessionStorage.removeItem(KEY);
      throw e;
    }
  }
}

function signOut() {
  stopTimer();
  stopStream();
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(KIND);
  location.hash = "#/signin";
  route();
}

// ---- jobs ----
const page = { token: "", next: null, first: null };
const rows = new Map(); // job id -> {tr, thumb}

function thumbFor(job) {
  const src = job.output && job.output.render;
  if (!src) return el("span", { class: "thumb empty" });
  if (job.generation_type === "video") {
    const v = el("video", { class: "thumb", muted: true, preload: "metadata", playsInline: true });
    v.src = src + "#t=0.01";
    return v;
  }
  const i = el("img", { class: "thumb", alt: "", loading: "lazy" });
  i.src = src;
  return i;
}

function progressBar(p) {
  const m = el("meter", { min: 0, max: 100, value: p ?? 0 });
  return el("span", { class: "progress" }, m, " " + (p ?? 0) + "%");
}

function jobRow(job) {
  let r = rows.get(job.id);
  if (!r) {
    const link = el("a", { href: "#/jobs/" + encodeURIComponent(job.id) }, job.id);
    const tr = el("tr", { data: { id: job.id } });
    r = { tr, thumbCell: el("td"), cells: {}, hasThumb: false };
    tr.append(r.thumbCell, el("td", {}, link));
    for (const c of ["status", "progress", "type", "mode", "prompt", "created"]) {
      r.cells[c] = el("td", { class: "c-" + c });
      tr.append(r.cells[c]);
    }
    rows.set(job.id, r);
  }
  if (!r.hasThumb && job.output) {
    r.thumbCell.replaceChildren(thumbFor(job));
    r.hasThumb = true;
  } else if (!r.hasThumb) r.thumbCell.replaceChildren(thumbFor(job));
  r.cells.status.replaceChildren(el("span", { class: "status s-" + job.status }, job.status));
  r.cells.progress.replaceChildren(progressBar(job.progress));
  r.cells.type.textContent = job.generation_type || "";
  r.cells.mode.textContent = job.alpha_mode || "";
  r.cells.prompt.textContent = job.prompt || "";
  r.cells.prompt.title = job.prompt || "";
  r.cells.created.textContent = fmtTime(job.created_at);
  r.tr.dataset.status = job.status;
  return r.tr;
}

function renderJobs(data) {
  const trs = data.jobs.map(jobRow);
  $("jobs-body").replaceChildren(...trs);
  $("jobs-empty").hidden = trs.length > 0 || !!page.token;
  page.next = data.next_page_token;
  $("jobs-next").disabled = !page.next;
  $("jobs-first").disabled = !page.token;
  $("jobs-live").textContent = "live · updated " + new Date().toLocaleTimeString() +
    (rate.limit ? ` · ${rate.remaining} of ${rate.limit} reads left this minute` : "");
}

// Live updates come from one server-sent-event stream (GET /v1/vfx/events,
// one read when it opens, read with fetch so that the key stays in a
// header); when it ends, it is opened again, and when it cannot be had,
// after a pause that keeps a personal key under its read limit.
let stream = null;
function stopStream() {
  if (stream) stream.abort();
  stream = null;
}

async function loadJobs() {
  stopTimer();
  stopStream();
  if (page.first && !page.token) renderJobs(page.first);
  page.first = null;
  const ctl = new AbortController();
  stream = ctl;
  let again = pace(true);
  try {
    const q = "/v1/vfx/events?limit=20" + (page.token ? "&page_token=" + encodeURIComponent(page.token) : "");
    const res = await fetch(q, { headers: authHeaders("key"), signal: ctl.signal, cache: "no-store" });
    readRate(res);
    if (!res.ok) throw await failure(res);
    flash("");
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let ev = "", data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) ev = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (ev === "jobs") renderJobs(JSON.parse(data));
        if (ev === "end") again = 1000;
      }
    }
  } catch (e) {
    if (ctl.signal.aborted) return;
    if (e.status === 401) return signOut();
    flash((e.code || "network") + ": " + e.message);
    if (e.retryAfter) again = e.retryAfter * 1000;
  }
  if (stream === ctl) {
    stream = null;
    $("jobs-live").textContent = "reconnecting…";
    timer = setTimeout(loadJobs, again);
  }
}

// ---- a job ----
let viewer = null;

function field(dl, name, value) {
  dl.append(el("dt", {}, name), el("dd", {}, value));
}

async function loadJob(id) {
  stopTimer();
  let job;
  try {
    job = await call("GET", "/v1/vfx/generations/" + encodeURIComponent(id));
  } catch (e) {
    if (e.status === 401) return signOut();
    flash(e.code + ": " + e.message);
    timer = setTimeout(() => loadJob(id), (e.retryAfter || 10) * 1000);
    return;
  }
  flash("");
  $("job-title").textContent = job.id;
  $("job-status").textContent = job.status + (job.progress != null && job.status !== "completed" ? " " + job.progress + "%" : "");
  $("job-status").className = "status s-" + job.status;
  const dl = $("job-fields");
  dl.replaceChildren();
  field(dl, "Type", job.generation_type || "");
  field(dl, "Mode", job.alpha_mode || "");
  field(dl, "Seed", String(job.seed));
  if (job.frames) field(dl, "Frames", String(job.frames));
  field(dl, "Prompt", job.prompt || "");
  field(dl, "Created", fmtTime(job.created_at));
  if (job.completed_at) field(dl, "Finished", fmtTime(job.completed_at));
  $("job-error").hidden = !job.error;
  $("job-error").textContent = job.error || "";
  if (job.status === "completed" && job.output) {
    if (!viewer || viewer.id !== job.id) buildViewer(job);
  } else {
    $("review").hidden = true;
    if (job.status !== "failed") timer = setTimeout(() => loadJob(id), pace(true));
  }
}

function media(job, which) {
  const url = job.output[which];
  let m;
  if (job.generation_type === "video") {
    m = el("video", { muted: true, preload: "auto", playsInline: true });
  } else {
    m = el("img", { alt: which });
  }
  m.className = "m-" + which;
  m.src = url;
  return m;
}

// buildViewer lays out render, source and alpha three ways (wipe, side
// by side, alpha) and keeps the videos on the frame the scrubber names.
function buildViewer(job) {
  const isVideo = job.generation_type === "video";
  const stage = $("stage");
  const all = [];
  const make = (which) => {
    const m = media(job, which);
    all.push(m);
    return m;
  };
  const wipe = el("div", { class: "wipe" }, make("source"), el("div", { class: "wipe-top" }, make("render")), el("div", { class: "wipe-line" }));
  const side = el("div", { class: "side" },
    el("figure", {}, make("render"), el("figcaption", {}, "render")),
    el("figure", {}, make("source"), el("figcaption", {}, "source")),
    el("figure", {}, make("alpha"), el("figcaption", {}, "alpha")));
  const alpha = el("div", { class: "alpha checker" }, make("alpha"));
  stage.replaceChildren(wipe, side, alpha);
  viewer = { id: job.id, wipe, side, alpha, all, isVideo, frames: job.frames || 1 };
  stage.dataset.ready = "0";

  const setWipe = () => {
    const v = +$("wipe").value;
    wipe.querySelector(".wipe-top").style.clipPath = `inset(0 0 0 ${v}%)`;
    wipe.querySelector(".wipe-line").style.left = v + "%";
  };
  $("wipe").oninput = setWipe;
  setWipe();
  $("checker").onchange = () => alpha.classList.toggle("checker", $("checker").checked);

  const fc = $("frame");
  $("frame-control").hidden = !isVideo;
  fc.max = String(Math.max(0, viewer.frames - 1));
  fc.value = "0";
  $("frame-no").textContent = "0";
  fc.oninput = () => seek(+fc.value);
  selectTab("wipe");

  const dlinks = ["render", "source", "alpha"].map((w) => el("a", { href: job.output[w], download: job.id + "-" + w, rel: "noreferrer" }, "download " + w));
  $("downloads").replaceChildren(...dlinks.flatMap((a, i) => (i ? [" · ", a] : [a])));
  $("review").hidden = false;

  // Ready once every medium shows its first frame.
  Promise.all(all.map(loaded)).then(() => seek(0)).catch((e) => flash("media: " + e.message));
}

function loaded(m) {
  return new Promise((resolve, reject) => {
    if (m.tagName === "IMG") {
      if (m.complete && m.naturalWidth) return resolve();
      m.addEventListener("load", resolve, { once: true });
    } else {
      if (m.readyState >= 2) return resolve();
      m.addEventListener("loadeddata", resolve, { once: true });
    }
    m.addEventListener("error", () => reject(new Error("cannot load " + m.className)), { once: true });
  });
}

// seek shows frame i on every video (at the middle of the frame's time).
async function seek(i) {
  const v = viewer;
  const stage = $("stage");
  $("frame-no").textContent = String(i);
  if (!v.isVideo) {
    stage.dataset.ready = "1";
    return;
  }
  stage.dataset.ready = "0";
  const vids = v.all.filter((m) => m.tagName === "VIDEO");
  await Promise.all(vids.map((m) => new Promise((resolve) => {
    const t = ((i + 0.5) / v.frames) * (m.duration || 0);
    if (Math.abs(m.currentTime - t) < 1e-4 && !m.seeking) return resolve();
    m.addEventListener("seeked", resolve, { once: true });
    m.currentTime = t;
  })));
  if (+$("frame").value === i) {
    stage.dataset.frame = String(i);
    stage.dataset.ready = "1";
  }
}

function selectTab(tab) {
  if (!viewer) return;
  for (const b of document.querySelectorAll(".tabs button")) b.classList.toggle("active", b.dataset.tab === tab);
  viewer.wipe.hidden = tab !== "wipe";
  viewer.side.hidden = tab !== "side";
  viewer.alpha.hidden = tab !== "alpha";
  $("wipe-control").hidden = tab !== "wipe";
  $("checker-control").hidden = tab !== "alpha";
}

// ---- submit ----
async function upload(file, label) {
  $("submit-progress").textContent = "uploading " + label + "…";
  const rec = await call("POST", "/v1/uploads", { filename: file.name });
  const res = await fetch(rec.upload_url, { method: "PUT", body: file, headers: { "Content-Type": file.type || "application/octet-stream" } });
  if (!res.ok) throw new APIError(res.status, "UPLOAD_FAILED", "upload of " + label + " failed: HTTP " + res.status);
  return rec.vfx_uri;
}

function syncModeFields() {
  const mode = $("f-mode").value;
  const needs = mode === "select" || mode === "custom";
  $("l-alpha").hidden = !needs;
  $("f-alpha").required = needs;
  $("l-alpha-text").textContent = mode === "select" ? "Keyframe (grayscale PNG or JPEG)" : "Matte (image for images, video for videos)";
  $("l-keyframe").hidden = !(mode === "select" && $("f-type").value === "video");
}

async function submit(ev) {
  ev.preventDefault();
  const btn = $("f-submit");
  btn.disabled = true;
  try {
    const mode = $("f-mode").value;
    const body = { generation_type: $("f-type").value, alpha_mode: mode, max_resolution: +$("f-res").value };
    const prompt = $("f-prompt").value;
    if (prompt) body.prompt = prompt;
    const seed = $("f-seed").value.trim();
    if (seed !== "") body.seed = Number(seed);
    body.source_uri = await upload($("f-source").files[0], "source");
    if (mode === "select" || mode === "custom") body.alpha_uri = await upload($("f-alpha").files[0], mode === "select" ? "keyframe" : "matte");
    if (mode === "select" && body.generation_type === "video") body.alpha_keyframe_index = +$("f-keyframe").value || 0;
    if ($("f-reference").files[0]) body.reference_image_uri = await upload($("f-reference").files[0], "reference");
    body.idempotency_key = "web-" + crypto.randomUUID();
    $("submit-progress").textContent = "submitting…";
    const job = await call("POST", "/v1/vfx/generations", body);
    $("submit-progress").textContent = "";
    $("submit-form").reset();
    syncModeFields();
    location.hash = "#/jobs/" + encodeURIComponent(job.id);
  } catch (e) {
    if (e.status === 401) return signOut();
    $("submit-progress").textContent = "";
    flash(e.code + ": " + e.message);
  } finally {
    btn.disabled = false;
  }
}

// ---- operator ----
async function loadOperator() {
  stopTimer();
  try {
    const q = await call("GET", "/admin/v1/queue", undefined, "bearer");
    const dl = $("op-queue");
    dl.replaceChildren();
    field(dl, "Jobs waiting (queue depth)", String(q.pending));
    field(dl, "Jobs in hand", String(q.in_flight));
    field(dl, "Of those, redelivered", String(q.redelivered));
    field(dl, "Free worker slots", String(q.waiting_pulls));
    field(dl, "Dead letters", String(q.dead_letters));
    const none = (n, what) => [el("tr", {}, el("td", { colSpan: n, class: "hint" }, what))];
    $("op-workers").replaceChildren(...(q.workers.length ? [] : none(4, "no worker is running a job")), ...q.workers.map((w) =>
      el("tr", { data: { worker: w.name } }, el("td", {}, w.name), el("td", { class: "s-" + w.state }, w.state),
        el("td", {}, w.jobs.join(", ")), el("td", {}, fmtTime(w.last_seen)))));
    $("op-dlq").replaceChildren(...(q.recent_dead.length ? [] : none(4, "empty")), ...q.recent_dead.map((d) =>
      el("tr", {}, el("td", {}, d.job_id), el("td", {}, String(d.attempts)), el("td", {}, d.reason), el("td", {}, fmtTime(d.at)))));
    flash("");
  } catch (e) {
    flash(e.code + ": " + e.message);
  }
  if (location.hash === "#/operator") timer = setTimeout(loadOperator, 5000);
}

// ---- routing ----
function route() {
  stopTimer();
  stopStream();
  const signedIn = !!sessionStorage.getItem(KEY);
  const op = sessionStorage.getItem(KIND) === "operator";
  $("nav").hidden = !signedIn;
  $("nav-operator").hidden = !op;
  for (const a of document.querySelectorAll("#nav a")) if (a.id !== "nav-operator") a.hidden = op;
  $("who").textContent = signedIn ? (op ? "operator" : "") : "";
  const h = location.hash || "#/jobs";
  if (!signedIn) return show("signin");
  if (op) {
    show("operator");
    return loadOperator();
  }
  if (h.startsWith("#/jobs/")) {
    const id = decodeURIComponent(h.slice(7));
    if (!viewer || viewer.id !== id) {
      viewer = null;
      $("review").hidden = true;
      $("job-fields").replaceChildren();
      $("job-title").textContent = id;
    }
    show("job");
    return loadJob(id);
  }
  if (h === "#/submit") {
    syncModeFields();
    return show("submit");
  }
  show("jobs");
  loadJobs();
}

$("signin-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try {
    await signIn($("signin-key").value.trim());
    $("signin-key").value = "";
    flash("");
    location.hash = sessionStorage.getItem(KIND) === "operator" ? "#/operator" : "#/jobs";
    route();
  } catch (e) {
    flash(e.code + ": " + e.message);
  }
});
$("signout").addEventListener("click", signOut);
$("jobs-next").addEventListener("click", () => { if (page.next) { page.token = page.next; loadJobs(); } });
$("jobs-first").addEventListener("click", () => { page.token = ""; loadJobs(); });
$("submit-form").addEventListener("submit", submit);
$("f-mode").addEventListener("change", syncModeFields);
$("f-type").addEventListener("change", syncModeFields);
$("op-refresh").addEventListener("click", loadOperator);
for (const b of document.querySelectorAll(".tabs button")) b.addEventListener("click", () => selectTab(b.dataset.tab));
window.addEventListener("hashchange", route);
route();
