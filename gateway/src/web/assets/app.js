// covo dashboard: plain JavaScript, no build step. Talks to /api/* and listens to /api/events.
"use strict";
const $ = (id) => document.getElementById(id);
const el = (tag, props, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
};

async function api(path, opts) {
  const o = opts || {};
  const r = await fetch(path, {
    method: o.method || "GET",
    headers: o.body ? { "content-type": "application/json" } : {},
    body: o.body ? JSON.stringify(o.body) : undefined,
    credentials: "same-origin",
  });
  if (r.status === 401) { location.reload(); throw new Error("unauthorized"); }
  let j = null;
  try { j = await r.json(); } catch (_) { j = null; }
  if (!r.ok) {
    const err = new Error((j && j.error && j.error.message) || r.statusText);
    err.body = j;
    throw err;
  }
  return j;
}

// An error element that shows a refusal's rule.
function errorView(e) {
  const span = el("span", { class: "error" });
  if (e && e.rule) span.append(el("span", { class: "rule" }, e.rule), " ");
  span.append((e && e.message) || String(e));
  return span;
}

// ---- sensors: live values and a chart per quantity ----
const series = new Map(); // "sensor/quantity" -> {points:[[t,v]], unit, node}
const HOURS = 24;

function fmt(v) { return Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1); }

function drawChart(s) {
  const pts = s.points;
  const svg = s.node.querySelector("svg");
  const line = svg.querySelector("polyline");
  if (pts.length < 2) { line.setAttribute("points", ""); return; }
  const t0 = pts[0][0], t1 = pts[pts.length - 1][0];
  let lo = Infinity, hi = -Infinity;
  for (const [, v] of pts) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  if (hi - lo < 1e-9) { hi += 0.5; lo -= 0.5; }
  const W = 200, H = 44;
  line.setAttribute("points", pts.map(([t, v]) =>
    ((t - t0) / Math.max(1, t1 - t0) * W).toFixed(1) + "," + (H - 2 - (v - lo) / (hi - lo) * (H - 4)).toFixed(1)).join(" "));
  s.node.querySelector(".lo").textContent = "min " + fmt(lo);
  s.node.querySelector(".hi").textContent = "max " + fmt(hi);
}

function quantityNode(sensor, quantity, unit) {
  const key = sensor + "/" + quantity;
  let s = series.get(key);
  if (s) return s;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 200 44");
  svg.setAttribute("preserveAspectRatio", "none");
  svg.append(document.createElementNS("http://www.w3.org/2000/svg", "polyline"));
  const node = el("div", { class: "q", "data-key": key, id: "q-" + sensor + "-" + quantity },
    el("div", { class: "n" }, sensor + " · " + quantity),
    el("div", {}, el("span", { class: "v" }, "–"), el("span", { class: "u" }, unit)),
    svg,
    el("div", { class: "span" }, el("span", { class: "lo" }), el("span", { class: "hi" })));
  const box = $("sensors");
  if (series.size === 0) box.textContent = "";
  box.append(node);
  s = { points: [], unit, node };
  series.set(key, s);
  api("/api/history?sensor=" + encodeURIComponent(sensor) + "&quantity=" + encodeURIComponent(quantity) + "&hours=" + HOURS)
    .then((h) => { s.points = h.points.concat(s.points.filter((p) => !h.points.length || p[0] > h.points[h.points.length - 1][0])); drawChart(s); })
    .catch(() => {});
  return s;
}

function showValue(sensor, quantity, value, unit, at) {
  const s = quantityNode(sensor, quantity, unit);
  s.node.querySelector(".v").textContent = fmt(value);
  s.node.querySelector(".u").textContent = unit;
  s.node.title = "sampled " + at;
  return s;
}

async function loadSensors() {
  const j = await api("/api/sensors");
  for (const r of j.readings) showValue(r.sensor, r.quantity, r.value, r.unit, r.at);
}

// Kept for measurements: when each sample arrived, against when it was taken.
window.covoSamples = [];
function onSample(d) {
  window.covoSamples.push({ sensor: d.sensor, at: d.at, received: Date.now() });
  if (window.covoSamples.length > 100) window.covoSamples.shift();
  const t = Math.floor(Date.parse(d.at) / 1000);
  for (const r of d.readings || []) {
    const s = showValue(d.sensor, r.quantity, r.value, r.unit, d.at);
    s.points.push([t, r.value]);
    if (s.points.length > 400) s.points.shift();
    drawChart(s);
  }
}

// ---- board, devices and controls ----
async function actuate(body, node) {
  $("control-error").hidden = true;
  node.disabled = true;
  try {
    await api("/api/actuate", { method: "POST", body });
  } catch (e) {
    const box = $("control-error");
    box.textContent = "";
    box.append(errorView(e.body && e.body.error ? e.body.error : e));
    box.hidden = false;
  } finally {
    node.disabled = false;
    loadBoard();
    loadLog();
  }
}

function controlView(d) {
  const info = el("div", { class: "name" }, d.name, el("small", {}, d.driver + (d.pin != null ? " · pin " + d.pin : "") + (d.channel != null ? " · channel " + d.channel : "")));
  if (d.kind === "switch") {
    const on = !!(d.state && d.state.on);
    const b = el("button", { class: "switch", role: "switch", "aria-checked": String(on), id: "switch-" + d.name, "aria-label": d.name });
    b.addEventListener("click", () => actuate({ device: d.name, on: b.getAttribute("aria-checked") !== "true" }, b));
    return el("div", { class: "ctl" }, info, el("span", { class: "muted", id: "state-" + d.name }, on ? "on" : "off"), b);
  }
  if (d.kind === "pwm") {
    const duty = d.state && d.state.duty != null ? d.state.duty : 0;
    const out = el("span", { class: "muted", id: "state-" + d.name }, Math.round(duty * 100) + "%");
    const r = el("input", { type: "range", min: "0", max: "100", step: "1", value: String(Math.round(duty * 100)), id: "slider-" + d.name, "aria-label": d.name });
    r.addEventListener("input", () => { out.textContent = r.value + "%"; });
    r.addEventListener("change", () => actuate({ device: d.name, duty: Number(r.value) / 100 }, r));
    return el("div", { class: "ctl" }, info, r, out);
  }
  return null;
}

// Updates a control in place (a rebuilt slider would lose a drag in progress).
function updateControl(node, d) {
  if (d.kind === "switch") {
    const on = !!(d.state && d.state.on);
    node.querySelector(".switch").setAttribute("aria-checked", String(on));
    node.querySelector("#state-" + CSS.escape(d.name)).textContent = on ? "on" : "off";
  } else if (d.kind === "pwm") {
    const r = node.querySelector("input[type=range]");
    const pct = Math.round((d.state && d.state.duty != null ? d.state.duty : 0) * 100);
    if (document.activeElement !== r) r.value = String(pct);
    node.querySelector("#state-" + CSS.escape(d.name)).textContent = pct + "%";
  }
}

const controlNodes = new Map();
async function loadBoard() {
  const j = await api("/api/board");
  $("board-name").textContent = j.board.name + " · " + j.board.model;
  const controls = $("controls");
  const names = j.devices.filter((d) => d.kind === "switch" || d.kind === "pwm").map((d) => d.name).join();
  if (controls.dataset.names !== names) {
    controls.textContent = "";
    controlNodes.clear();
    controls.dataset.names = names;
    for (const d of j.devices) {
      const c = controlView(d);
      if (c) { controls.append(c); controlNodes.set(d.name, c); }
    }
    if (!controlNodes.size) controls.append(el("p", { class: "muted" }, "No switches or PWM outputs on this board."));
  } else {
    for (const d of j.devices) if (controlNodes.has(d.name)) updateControl(controlNodes.get(d.name), d);
  }
  const list = $("board");
  list.textContent = "";
  if (j.read_only) list.append(el("p", {}, el("span", { class: "pill warn" }, "read-only"), " writes are refused"));
  if (j.opened) list.append(el("p", { class: "error" }, "the board did not open: " + j.opened));
  for (const d of j.devices) {
    const where = [d.bus != null ? "bus " + d.bus : null, d.address != null ? "0x" + d.address.toString(16) : null,
      d.pin != null ? "pin " + d.pin : null, d.channel != null ? "channel " + d.channel : null, d.port ? "port " + d.port : null].filter(Boolean).join(", ");
    let state = "";
    if (d.state && d.state.on !== undefined) state = d.state.on ? " · on" : " · off";
    if (d.state && d.state.duty !== undefined) state = " · " + Math.round(d.state.duty * 100) + "%";
    list.append(el("div", { class: "dev" }, el("b", {}, d.name), " ", el("span", { class: "muted" }, d.driver + (where ? " (" + where + ")" : "") + state + (d.note ? " — " + d.note : ""))));
  }
}

// ---- chat ----
let botMsg = null;
function addMsg(cls, text) {
  const m = el("div", { class: "msg " + cls }, text);
  $("chat-log").append(m);
  $("chat-log").scrollTop = 1e9;
  return m;
}

function onChat(d) {
  if (d.kind === "delta") {
    if (!botMsg) botMsg = addMsg("bot pending", "");
    botMsg.textContent += d.text;
  } else if (d.kind === "tool") {
    botMsg = null;
    $("chat-log").append(el("div", { class: "tool" }, "→ " + d.tool + " " + JSON.stringify(d.args)));
  } else if (d.kind === "result") {
    const t = el("div", { class: "tool " + (d.ok ? "ok" : "bad") }, "← " + d.tool + " ");
    t.append(d.ok ? String(d.result).slice(0, 300) : errorView(d.error));
    $("chat-log").append(t);
    if (d.changes_board) loadBoard();
    loadLog();
  } else if (d.kind === "answer" || d.kind === "error") {
    if (botMsg && botMsg.textContent === d.text) { botMsg.classList.remove("pending"); }
    else { if (botMsg && !botMsg.textContent) botMsg.remove(); addMsg(d.kind === "answer" ? "bot answer" : "bot err", d.text); }
    botMsg = null;
    $("chat-send").disabled = false;
    loadLog();
  } else if (d.kind === "note") {
    $("chat-log").append(el("div", { class: "tool" }, d.text));
  }
  $("chat-log").scrollTop = 1e9;
}

// The conversation so far, when the page is opened again.
async function loadChat() {
  const j = await api("/api/chat");
  if (!j.messages.length) return;
  $("chat-log").textContent = "";
  for (const m of j.messages) {
    if (m.role === "user") addMsg("user", m.text);
    else if (m.role === "assistant") addMsg("bot answer", m.text);
    else $("chat-log").append(el("div", { class: "tool" }, "→ " + m.tool + " " + m.args));
  }
  if (j.busy) $("chat-send").disabled = true;
}

async function sendChat(ev) {
  ev.preventDefault();
  const input = $("chat-input");
  const text = input.value.trim();
  if (!text) return;
  addMsg("user", text);
  input.value = "";
  botMsg = null;
  $("chat-send").disabled = true;
  try {
    await api("/api/chat", { method: "POST", body: { text } });
  } catch (e) {
    addMsg("bot err", e.message);
    $("chat-send").disabled = false;
  }
}

// ---- approvals ----
async function loadApprovals() {
  const j = await api("/api/approvals");
  const box = $("approvals");
  box.textContent = "";
  $("approvals-count").textContent = String(j.pending.length);
  $("approvals-count").className = "pill" + (j.pending.length ? " warn" : "");
  // Waiting approvals move to the top of the page.
  $("approvals-card").classList.toggle("urgent", j.pending.length > 0);
  if (!j.pending.length) box.append(el("p", { class: "muted" }, "Nothing waits for approval."));
  for (const p of j.pending) {
    const answer = (approve) => api("/api/approvals/" + p.id, { method: "POST", body: { approve } }).catch(() => {}).then(loadApprovals);
    box.append(el("div", { class: "appr", id: "approval-" + p.id },
      el("b", {}, p.tool), el("span", { class: "muted" }, " asks to run (expires in " + Math.round(p.expires_in_ms / 1000) + " s)"),
      el("code", {}, JSON.stringify(p.args)),
      el("div", { class: "row" },
        el("button", { class: "approve", onclick: () => answer(true) }, "Approve"),
        el("button", { class: "deny", onclick: () => answer(false) }, "Deny"))));
  }
}

// ---- the tool-call log ----
let logBefore = null;
let logNext = null;
async function loadLog(before) {
  if (before !== undefined) logBefore = before;
  const j = await api("/api/audit?limit=25" + (logBefore ? "&before=" + logBefore : ""));
  logNext = j.next_before;
  const body = $("log").querySelector("tbody");
  body.textContent = "";
  for (const e of j.entries) {
    const ok = e.outcome === "ok";
    const outcome = el("td", { class: ok ? "ok" : "bad" });
    if (e.rule) outcome.append(el("span", { class: "rule" }, e.rule), " ");
    outcome.append(e.outcome);
    body.append(el("tr", { title: e.args }, el("td", {}, e.at.replace("T", " ").slice(5, 19)), el("td", {}, e.via), el("td", {}, e.tool), outcome,
      el("td", {}, (e.micros / 1000).toFixed(1))));
    if (!ok && e.detail) body.append(el("tr", {}, el("td", { class: "detail", colspan: "5" }, e.detail)));
  }
  if (!j.entries.length) body.append(el("tr", {}, el("td", { colspan: "5", class: "muted" }, "No tool calls yet.")));
  $("log-older").disabled = !logNext;
}

// ---- live events ----
let es = null;
function connect() {
  if (es) return;
  es = new EventSource("/api/events");
  es.addEventListener("hello", () => { $("live").textContent = "live"; $("live").className = "pill on"; loadApprovals(); });
  es.addEventListener("sample", (e) => onSample(JSON.parse(e.data)));
  es.addEventListener("chat", (e) => onChat(JSON.parse(e.data)));
  es.addEventListener("approvals", () => loadApprovals());
  es.addEventListener("board", () => loadBoard());
  es.addEventListener("lagged", () => { loadSensors(); loadApprovals(); loadBoard(); });
  es.onerror = () => { $("live").textContent = "offline"; $("live").className = "pill off"; };
}
// A page left for another (or kept in the back-forward cache) closes its stream: browsers open
// at most 6 HTTP/1.1 connections to one host, and the server holds a place for each stream.
window.addEventListener("pagehide", () => { if (es) { es.close(); es = null; } });
window.addEventListener("pageshow", (e) => { if (e.persisted) { connect(); loadBoard(); loadSensors(); loadApprovals(); loadLog(); } });

// Runs once the document is parsed (the script is deferred).
function init() {
  $("chat-form").addEventListener("submit", sendChat);
  $("chat-new").addEventListener("click", async () => { try { await api("/api/chat/new", { method: "POST" }); $("chat-log").textContent = ""; } catch (e) { addMsg("bot err", e.message); } });
  $("log-older").addEventListener("click", () => logNext && loadLog(logNext));
  $("log-newer").addEventListener("click", () => loadLog(null));
  connect();
  loadBoard().catch(() => {});
  loadSensors().catch(() => {});
  loadApprovals().catch(() => {});
  loadLog().catch(() => {});
  loadChat().catch(() => {});
}
// After the first frame: the page paints before the stream opens and the data loads.
const start = () => requestAnimationFrame(() => setTimeout(init, 0));
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
