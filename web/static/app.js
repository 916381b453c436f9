// vfx's page: sign in, jobs, a job's review, submit, operator view.
// Every string from the API or the user goes into the page through
// textContent or an attribute set by property, never through HTML.

const $ = (id) => document.getElementById(id);
const KEY = "vfx.key";
const KIND = "vfx.kind"; // "key" (account key), "org" (organization key) or "operator"
const PJOBS = "vfx.pjobs"; // the product jobs of this tab: what it knows of each (the API has no list)
const enc = encodeURIComponent;
const terminal = (s) => s === "success" || s === "failed" || s === "cancelled" || s === "credit_required";

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

// One timer drives the view shown: later replaces it, so two loads of a
// view that overlap never leave two chains of timers. view counts the
// views routed to: a load that finds it changed after an await stops
// (its view is gone).
let timer = 0;
let view = 0;
function stopTimer() {
  clearTimeout(timer);
  timer = 0;
}
function later(fn, ms) {
  clearTimeout(timer);
  timer = setTimeout(fn, ms);
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
// personal key has 5 reads a minute); an organization key (403
// ACCOUNT_KEY_REQUIRED there) is checked with GET /v1/products and gets
// the product views; a string that is no API key is tried as the
// operator token.
async function signIn(key) {
  sessionStorage.setItem(KEY, key);
  try {
    page.first = await call("GET", "/v1/vfx/generations?limit=20");
    sessionStorage.setItem(KIND, "key");
  } catch (e) {
    if (e.status === 403 && e.code === "ACCOUNT_KEY_REQUIRED") {
      try {
        await call("GET", "/v1/products");
        sessionStorage.setItem(KIND, "org");
        return;
      } catch (e2) {
        sessionStorage.removeItem(KEY);
        throw e2;
      }
    }
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
  sessionStorage.removeItem(PJOBS);
  pstate.clear();
  prows.clear();
  go("#/signin");
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
  const q = "/v1/vfx/events?limit=20" + (page.token ? "&page_token=" + enc(page.token) : "");
  const again = await openStream(q, renderJobs);
  if (again === null) return;
  $("jobs-live").textContent = "reconnecting…";
  later(loadJobs, again);
}

// openStream reads one event stream, handing each page of jobs to onPage,
// until it ends; it answers the pause before the next one, or null when
// it was stopped (another view, sign out).
async function openStream(q, onPage) {
  const ctl = new AbortController();
  stream = ctl;
  let again = pace(true);
  try {
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
        if (ev === "jobs") onPage(JSON.parse(data));
        if (ev === "end") again = 1000;
      }
    }
  } catch (e) {
    if (ctl.signal.aborted) return null;
    if (e.status === 401) {
      signOut();
      return null;
    }
    flash((e.code || "network") + ": " + e.message);
    if (e.retryAfter) again = e.retryAfter * 1000;
  }
  if (stream !== ctl) return null;
  stream = null;
  return again;
}

// ---- a job ----
let viewer = null;

function field(dl, name, value) {
  dl.append(el("dt", {}, name), el("dd", {}, value));
}

// loadJob reads a generation job once; while it is unfinished the view
// follows it over the event stream (the first page of the list, where a
// new job is), so a personal key spends one read per stream, not one per
// poll. A job that is not on that page is read again at the list's pace.
async function loadJob(id, follow = true) {
  stopTimer();
  stopStream();
  const v = view;
  let job;
  try {
    job = await call("GET", "/v1/vfx/generations/" + enc(id));
  } catch (e) {
    if (v !== view) return;
    if (e.status === 401) return signOut();
    flash(e.code + ": " + e.message);
    later(() => loadJob(id, follow), (e.retryAfter || 10) * 1000);
    return;
  }
  if (v !== view) return;
  flash("");
  const st = $("job-status");
  if (!st.dataset.first) st.dataset.first = job.status;
  showJob(job);
  if (job.status === "completed" || job.status === "failed") return;
  if (follow) followJob(id);
  else later(() => loadJob(id, false), pace(true));
}

// followJob keeps the view on the job from the event stream's first page;
// a job not on it is read with GET at the list's pace instead.
async function followJob(id) {
  const v = view;
  let missing = false;
  const onPage = (data) => {
    const job = data.jobs.find((j) => j.id === id);
    if (!job) {
      missing = true;
      return stopStream();
    }
    $("job-status").dataset.via = "stream";
    showJob(job);
    if (job.status === "completed" || job.status === "failed") stopStream();
  };
  const again = await openStream("/v1/vfx/events?limit=20", onPage);
  if (v !== view) return;
  if (missing) later(() => loadJob(id, false), pace(true));
  else if (again !== null) later(() => followJob(id), again);
}

function showJob(job) {
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
    if (!viewer || viewer.id !== job.id) buildViewer({ id: job.id, isVideo: job.generation_type === "video", frames: job.frames || 1, output: job.output });
  } else {
    $("review").hidden = true;
  }
}
// media makes the img or video of one output; cors loads one of another
// origin (an S3 store) with CORS, so that a canvas may read its pixels.
function media(v, which, cors = false) {
  const m = v.isVideo ? el("video", { muted: true, preload: "auto", playsInline: true }) : el("img", { alt: which });
  m.className = "m-" + which;
  const url = v.output[which];
  if (cors && new URL(url, location.href).origin !== location.origin) m.crossOrigin = "anonymous";
  m.src = url;
  return m;
}

// buildViewer lays out render, source and alpha three ways (wipe, side
// by side, alpha) and keeps the videos on the frame the scrubber names.
// v: {id, isVideo, frames, output}; a finished upscale has a render only.
function buildViewer(v) {
  const stage = $("stage");
  const all = [];
  const make = (which, cors) => {
    const m = media(v, which, cors);
    all.push(m);
    return m;
  };
  const has = (w) => !!v.output[w];
  const full = has("source") && has("alpha");
  const wipe = full ? el("div", { class: "wipe" }, make("source"), el("div", { class: "wipe-top" }, make("render")), el("div", { class: "wipe-line" })) : el("div");
  const layers = {};
  const side = el("div", { class: "side" }, ...["render", "source", "alpha"].filter(has).map((w) => {
    const m = make(w, true); // the composite reads these
    layers[w] = m;
    return el("figure", {}, m, el("figcaption", {}, w));
  }));
  const comp = el("canvas", { class: "comp", width: 640, height: 360 });
  const alpha = full ? el("div", { class: "alpha" }, make("alpha"), comp) : el("div");
  stage.replaceChildren(wipe, side, alpha);
  viewer = { id: v.id, wipe, side, alpha, comp, layers, all, isVideo: v.isVideo, frames: v.frames || 0, frame: 0 };
  stage.dataset.ready = "0";
  comp.dataset.frame = "";

  const setWipe = () => {
    const x = +$("wipe").value;
    wipe.querySelector(".wipe-top").style.clipPath = `inset(0 0 0 ${x}%)`;
    wipe.querySelector(".wipe-line").style.left = x + "%";
  };
  if (full) {
    $("wipe").value = "50";
    $("wipe").oninput = setWipe;
    setWipe();
  }
  const setChecker = () => {
    alpha.classList.toggle("over", $("checker").checked);
    drawComposite();
  };
  $("checker").onchange = setChecker;
  $("comp-layer").onchange = drawComposite;
  alpha.classList.toggle("over", $("checker").checked);

  const fc = $("frame");
  $("frame-control").hidden = !(v.isVideo && viewer.frames > 1);
  fc.max = String(Math.max(0, viewer.frames - 1));
  fc.value = "0";
  $("frame-no").textContent = "0";
  fc.oninput = () => seek(+fc.value);
  for (const b of document.querySelectorAll(".tabs button")) b.hidden = !full && b.dataset.tab !== "side";
  selectTab(full ? "wipe" : "side");

  const names = ["render", "source", "alpha", "foreground"].filter(has);
  const dlinks = names.map((w) => el("a", { href: v.output[w], download: v.id + "-" + w, rel: "noreferrer" }, "download " + w));
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
    v.frame = i;
    stage.dataset.frame = String(i);
    drawComposite();
    stage.dataset.ready = "1";
    return;
  }
  stage.dataset.ready = "0";
  const vids = v.all.filter((m) => m.tagName === "VIDEO");
  const n = v.frames || 1;
  await Promise.all(vids.map((m) => new Promise((resolve) => {
    const t = ((i + 0.5) / n) * (m.duration || 0);
    if (Math.abs(m.currentTime - t) < 1e-4 && !m.seeking) return resolve();
    m.addEventListener("seeked", resolve, { once: true });
    m.currentTime = t;
  })));
  if (viewer === v && +$("frame").value === i) {
    v.frame = i;
    stage.dataset.frame = String(i);
    drawComposite();
    stage.dataset.ready = "1";
  }
}

// drawComposite draws the alpha view's canvas: the chosen layer (render or
// source) premultiplied by the alpha, over a checkerboard of 16 px squares:
// out = layer × a + checker × (1 − a), at the canvas's size on screen. The
// media are this origin's (or a store's that allows CORS): a canvas that
// cannot be read says so.
function drawComposite() {
  const v = viewer;
  if (!v || !v.comp || v.alpha.hidden || !$("checker").checked) return;
  const layer = v.layers[$("comp-layer").value];
  const am = v.layers.alpha;
  if (!layer || !am) return;
  const nw = layer.videoWidth || layer.naturalWidth, nh = layer.videoHeight || layer.naturalHeight;
  if (!nw || !nh) return;
  const c = v.comp;
  const dpr = window.devicePixelRatio || 1;
  const cw = Math.min(640, v.alpha.parentElement.clientWidth || 640);
  const w = Math.round(cw * dpr), h = Math.round((cw * nh / nw) * dpr);
  c.width = w;
  c.height = h;
  c.style.width = cw + "px";
  const work = document.createElement("canvas");
  work.width = w;
  work.height = h;
  const wc = work.getContext("2d", { willReadFrequently: true });
  let px, a;
  try {
    wc.drawImage(am, 0, 0, w, h);
    a = wc.getImageData(0, 0, w, h).data;
    wc.clearRect(0, 0, w, h);
    wc.drawImage(layer, 0, 0, w, h);
    px = wc.getImageData(0, 0, w, h);
  } catch (e) {
    flash("the composite cannot read the media's pixels (" + e.name + "): the store must allow this origin (CORS)");
    return;
  }
  const d = px.data;
  for (let i = 0; i < d.length; i += 4) d[i + 3] = Math.round(0.2126 * a[i] + 0.7152 * a[i + 1] + 0.0722 * a[i + 2]);
  wc.putImageData(px, 0, 0);
  const ctx = c.getContext("2d");
  const sq = Math.round(16 * dpr);
  ctx.fillStyle = "#bbb";
  ctx.fillRect(0, 0, w, h);
  ctx.fillStyle = "#777";
  for (let y = 0; y < h; y += sq) for (let x = (((y / sq) & 1) ^ 1) * sq; x < w; x += 2 * sq) ctx.fillRect(x, y, sq, sq); // light top left
  ctx.drawImage(work, 0, 0);
  c.dataset.frame = String(v.frame);
  c.dataset.layer = $("comp-layer").value;
}

function selectTab(tab) {
  if (!viewer) return;
  for (const b of document.querySelectorAll(".tabs button")) b.classList.toggle("active", b.dataset.tab === tab);
  viewer.wipe.hidden = tab !== "wipe";
  viewer.side.hidden = tab !== "side";
  viewer.alpha.hidden = tab !== "alpha";
  $("wipe-control").hidden = tab !== "wipe";
  $("checker-control").hidden = tab !== "alpha";
  if (tab === "alpha") drawComposite();
}

// ---- product jobs (organization keys) ----
// The product API has no list of jobs: the tab keeps what it knows of the
// jobs it submitted or opened (session storage) and reads each with GET
// /v1/product-jobs/{id} until it ends (organization keys have no read
// limit; a pause of 2 s between reads).
const pstate = new Map(); // job id -> the last answer
const prows = new Map(); // job id -> row

function pjobs() {
  try {
    const l = JSON.parse(sessionStorage.getItem(PJOBS) || "[]");
    return Array.isArray(l) ? l : [];
  } catch {
    return [];
  }
}

function rememberPJob(info) {
  const old = pjobs().find((j) => j.id === info.id) || {};
  const l = pjobs().filter((j) => j.id !== info.id);
  l.unshift({ ...old, ...info });
  sessionStorage.setItem(PJOBS, JSON.stringify(l.slice(0, 100)));
}

const pjobInfo = (id) => pjobs().find((j) => j.id === id) || { id };
const isVideoURL = (u) => { try { return /\.(mp4|mov)$/i.test(new URL(u, location.href).pathname); } catch { return false; } };
const productName = (info, job) => (job && job.product === "vfx_finish") || info.product === "vfx_finish"
  ? "vfx_finish " + (info.target_resolution || "")
  : "vfx " + (info.mode || "standard");

function pjobRow(info, job) {
  let r = prows.get(info.id);
  if (!r) {
    const tr = el("tr", { data: { id: info.id } });
    r = { tr, thumbCell: el("td"), cells: {}, hasThumb: false };
    tr.append(r.thumbCell, el("td", {}, el("a", { href: "#/jobs/" + enc(info.id) }, info.id)));
    for (const c of ["status", "progress", "product", "type", "credits", "prompt", "created"]) {
      r.cells[c] = el("td", { class: "c-" + c });
      tr.append(r.cells[c]);
    }
    prows.set(info.id, r);
  }
  const status = job ? job.status : "";
  if (!r.hasThumb) {
    const src = job && job.outputs && job.outputs.render;
    r.thumbCell.replaceChildren(src ? thumbFor({ output: { render: src }, generation_type: isVideoURL(src) ? "video" : "image" }) : el("span", { class: "thumb empty" }));
    r.hasThumb = !!src;
  }
  r.cells.status.replaceChildren(el("span", { class: "status s-" + status }, status || "…"));
  r.cells.progress.replaceChildren(progressBar(job ? Math.round(job.progress ?? 0) : 0));
  r.cells.product.textContent = productName(info, job);
  r.cells.type.textContent = info.type || "";
  r.cells.credits.textContent = job && job.credits_charged != null ? job.credits_charged + " charged" + (job.refunded ? " (refunded)" : "")
    : info.credits != null ? info.credits + " reserved" : "";
  r.cells.prompt.textContent = info.prompt || "";
  r.cells.prompt.title = info.prompt || "";
  r.cells.created.textContent = fmtTime(job ? job.created_at : "");
  r.tr.dataset.status = status;
  return r.tr;
}

async function loadProductJobs() {
  stopTimer();
  const v = view;
  const list = pjobs();
  let open = 0;
  try {
    for (const info of list) {
      const last = pstate.get(info.id);
      if (!last || !terminal(last.status)) pstate.set(info.id, await call("GET", "/v1/product-jobs/" + enc(info.id)));
      if (!terminal(pstate.get(info.id).status)) open++;
    }
    flash("");
  } catch (e) {
    if (v !== view) return;
    if (e.status === 401) return signOut();
    flash(e.code + ": " + e.message);
  }
  if (v !== view) return;
  $("pjobs-body").replaceChildren(...list.map((info) => pjobRow(info, pstate.get(info.id))));
  $("pjobs-empty").hidden = list.length > 0;
  $("pjobs-live").textContent = open ? `following ${open} unfinished job${open > 1 ? "s" : ""} · updated ` + new Date().toLocaleTimeString() : "";
  if (open) later(loadProductJobs, 2000);
}

async function loadProductJob(id) {
  stopTimer();
  const v = view;
  let job;
  try {
    job = await call("GET", "/v1/product-jobs/" + enc(id));
  } catch (e) {
    if (v !== view) return;
    if (e.status === 401) return signOut();
    flash(e.code + ": " + e.message);
    if (e.status !== 404) later(() => loadProductJob(id), 5000);
    return;
  }
  if (v !== view) return;
  flash("");
  pstate.set(id, job);
  if (!pjobs().some((j) => j.id === id)) rememberPJob({ id, product: job.product });
  const info = pjobInfo(id);
  $("job-title").textContent = job.id;
  $("job-status").textContent = job.status + (!terminal(job.status) ? " " + Math.round(job.progress ?? 0) + "%" : "");
  $("job-status").className = "status s-" + job.status;
  const dl = $("job-fields");
  dl.replaceChildren();
  field(dl, "Product", productName(info, job));
  field(dl, "Model", job.model_id);
  if (job.team_id) field(dl, "Team", job.team_id);
  if (info.parent) field(dl, "Parent", info.parent);
  if (info.type) field(dl, "Type", info.type);
  if (info.alpha_mode) field(dl, "Mode", info.alpha_mode);
  if (info.seed != null) field(dl, "Seed", String(info.seed));
  if (info.frames) field(dl, "Frames", String(info.frames));
  if (info.prompt != null) field(dl, "Prompt", info.prompt);
  if (info.credits != null) field(dl, "Estimate", info.credits + " credits");
  field(dl, "Credits charged", job.credits_charged != null ? String(job.credits_charged) + (job.refunded ? " (refunded)" : "") : "not yet settled");
  field(dl, "Created", fmtTime(job.created_at));
  $("job-error").hidden = !job.error;
  $("job-error").textContent = job.error ? job.error.code + ": " + job.error.message : "";
  const canFinish = job.status === "success" && job.product === "vfx" && info.mode !== "fast";
  $("finish-form").hidden = !canFinish;
  if (job.status === "success" && job.outputs && job.outputs.render) {
    if (!viewer || viewer.id !== job.id) buildViewer({ id: job.id, isVideo: isVideoURL(job.outputs.render), frames: info.frames || 0, output: job.outputs });
  } else {
    $("review").hidden = true;
  }
  if (!terminal(job.status)) later(() => loadProductJob(id), 2000);
}

// estimateText shows an estimate answer: its credits and breakdown.
function estimateText(est) {
  return [est.credits + " credits" + (est.exact ? "" : " at most"),
    est.breakdown.map((b) => `${b.item}: ${b.units} × ${b.rate} = ${b.credits}` + (b.note ? ` (${b.note})` : ""))];
}

// finish: estimate, then submit, a vfx_finish job of the job shown.
let finishEst = null;
async function finish(ev) {
  ev.preventDefault();
  const parent = viewer ? viewer.id : decodeURIComponent(location.hash.slice(7));
  const inputs = { parent_job_id: parent, target_resolution: +$("finish-res").value };
  const btn = $("finish-submit");
  btn.disabled = true;
  try {
    if (!finishEst || finishEst.parent !== parent || finishEst.res !== inputs.target_resolution) {
      const est = await call("POST", "/v1/products/vfx_finish/estimate", { model_id: "vfx-2.0", inputs });
      const [credits, items] = estimateText(est);
      $("finish-estimate").textContent = credits + " (" + items.join("; ") + ")";
      finishEst = { parent, res: inputs.target_resolution, credits: est.credits, idem: "web-" + crypto.randomUUID() };
      btn.textContent = "Submit for " + est.credits + " credits";
      return;
    }
    const job = await call("POST", "/v1/products/vfx_finish/jobs", { model_id: "vfx-2.0", idempotency_key: finishEst.idem, inputs, max_credits: finishEst.credits });
    const p = pjobInfo(parent);
    rememberPJob({ id: job.id, product: "vfx_finish", target_resolution: inputs.target_resolution, parent, type: p.type, frames: p.frames, credits: finishEst.credits });
    resetFinish();
    location.hash = "#/jobs/" + enc(job.id);
  } catch (e) {
    if (e.status === 401) return signOut();
    flash(e.code + ": " + e.message);
  } finally {
    btn.disabled = false;
  }
}

function resetFinish() {
  finishEst = null;
  $("finish-estimate").textContent = "";
  $("finish-submit").textContent = "Estimate";
}

// ---- submit ----
async function upload(file, label) {
  $("submit-progress").textContent = "uploading " + label + "…";
  const rec = await call("POST", "/v1/uploads", { filename: file.name });
  const res = await fetch(rec.upload_url, { method: "PUT", body: file, headers: { "Content-Type": file.type || "application/octet-stream" } });
  if (!res.ok) throw new APIError(res.status, "UPLOAD_FAILED", "upload of " + label + " failed: HTTP " + res.status);
  return rec.vfx_uri;
}

const isOrg = () => sessionStorage.getItem(KIND) === "org";

function syncModeFields() {
  const mode = $("f-mode").value;
  const org = isOrg();
  const needs = mode === "select" || mode === "custom";
  $("l-alpha").hidden = !needs;
  $("f-alpha").required = needs;
  $("l-alpha-text").textContent = mode === "select" ? "Keyframe (grayscale PNG or JPEG)" : "Matte (image for images, video for videos)";
  $("l-keyframe").hidden = !(mode === "select" && (org || $("f-type").value === "video"));
  $("l-type").hidden = org; // a product job's type is its source's
  $("l-pmode").hidden = !org;
  clearEstimate();
}

// A product submission is estimated first; the estimate holds until a
// field changes.
let estimate = null;
function clearEstimate() {
  estimate = null;
  $("estimate").hidden = true;
  $("f-submit").textContent = isOrg() ? "Upload and estimate" : "Upload and submit";
}

async function submit(ev) {
  ev.preventDefault();
  const btn = $("f-submit");
  btn.disabled = true;
  try {
    if (isOrg()) await submitProduct();
    else await submitGeneration();
  } catch (e) {
    if (e.status === 401) return signOut();
    $("submit-progress").textContent = "";
    flash(e.code + ": " + e.message);
  } finally {
    btn.disabled = false;
  }
}

async function submitGeneration() {
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
  location.hash = "#/jobs/" + enc(job.id);
}

// submitProduct: the first press uploads the media and shows the
// estimate; the second submits the job with max_credits at the estimate
// (same idempotency key if it is pressed again after an uncertain answer).
async function submitProduct() {
  if (!estimate) {
    const mode = $("f-mode").value;
    const inputs = { alpha_mode: mode, max_resolution: +$("f-res").value, mode: $("f-pmode").value };
    const prompt = $("f-prompt").value;
    if (prompt) inputs.prompt = prompt;
    const seed = $("f-seed").value.trim();
    if (seed !== "") inputs.seed = Number(seed);
    const src = $("f-source").files[0];
    inputs.source = await upload(src, "source");
    if (mode === "select" || mode === "custom") inputs.alpha = await upload($("f-alpha").files[0], mode === "select" ? "keyframe" : "matte");
    if (mode === "select") inputs.alpha_keyframe_index = +$("f-keyframe").value || 0;
    if ($("f-reference").files[0]) inputs.reference_image = await upload($("f-reference").files[0], "reference");
    $("submit-progress").textContent = "estimating…";
    const est = await call("POST", "/v1/products/vfx/estimate", { model_id: "vfx-2.0", inputs });
    const video = /\.(mp4|mov)$/i.test(src.name);
    const [credits, items] = estimateText(est);
    $("estimate-credits").textContent = credits;
    $("estimate-items").replaceChildren(...items.map((t) => el("li", {}, t)));
    $("estimate").hidden = false;
    $("submit-progress").textContent = "";
    estimate = {
      inputs, credits: est.credits, idem: "web-" + crypto.randomUUID(),
      info: { product: "vfx", mode: inputs.mode, type: video ? "video" : "image", alpha_mode: mode, prompt: prompt, seed: inputs.seed,
        frames: video && est.breakdown[0] ? est.breakdown[0].units : 0, credits: est.credits },
    };
    $("f-submit").textContent = "Submit for " + est.credits + " credits";
    return;
  }
  $("submit-progress").textContent = "submitting…";
  const job = await call("POST", "/v1/products/vfx/jobs", { model_id: "vfx-2.0", idempotency_key: estimate.idem, inputs: estimate.inputs, max_credits: estimate.credits });
  rememberPJob({ id: job.id, ...estimate.info });
  $("submit-progress").textContent = "";
  $("submit-form").reset();
  syncModeFields();
  location.hash = "#/jobs/" + enc(job.id);
}

// ---- operator ----
async function loadOperator() {
  stopTimer();
  const v = view;
  try {
    const q = await call("GET", "/admin/v1/queue", undefined, "bearer");
    if (v !== view) return;
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
    if (v !== view) return;
    flash(e.code + ": " + e.message);
  }
  later(loadOperator, 5000);
}

// ---- routing ----
// go shows a view: a new hash routes on its hashchange, the same one now.
function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function route() {
  view++;
  stopTimer();
  stopStream();
  const signedIn = !!sessionStorage.getItem(KEY);
  const kind = sessionStorage.getItem(KIND);
  const op = kind === "operator", org = kind === "org";
  $("nav").hidden = !signedIn;
  $("nav-operator").hidden = !op;
  for (const a of document.querySelectorAll("#nav a")) if (a.id !== "nav-operator") a.hidden = op;
  $("who").textContent = signedIn ? (op ? "operator" : org ? "organization key" : "") : "";
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
      $("finish-form").hidden = true;
      resetFinish();
      delete $("job-status").dataset.via;
      delete $("job-status").dataset.first;
    }
    show("job");
    return org ? loadProductJob(id) : loadJob(id);
  }
  if (h === "#/submit") {
    syncModeFields();
    return show("submit");
  }
  if (org) {
    show("pjobs");
    return loadProductJobs();
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
    go(sessionStorage.getItem(KIND) === "operator" ? "#/operator" : "#/jobs");
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
for (const t of ["input", "change"]) $("submit-form").addEventListener(t, () => { if (estimate) clearEstimate(); });
$("pjob-open").addEventListener("submit", (ev) => {
  ev.preventDefault();
  location.hash = "#/jobs/" + enc($("pjob-id").value.trim());
  $("pjob-id").value = "";
});
$("finish-form").addEventListener("submit", finish);
$("finish-res").addEventListener("change", resetFinish);
$("op-refresh").addEventListener("click", loadOperator);
for (const b of document.querySelectorAll(".tabs button")) b.addEventListener("click", () => selectTab(b.dataset.tab));
window.addEventListener("hashchange", route);
route();
