// The ray-go dashboard: one page, a view per hash (#overview, #jobs, ...), each drawn
// from the JSON under /api/. No framework, nothing loaded from elsewhere; every value is
// put in the page as text (textContent), never as markup.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";

// h makes an element: h("td", {class: "mono"}, "text", child, ...).
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") el.className = v;
    else if (k === "width") el.style.width = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v);
  }
  for (const kid of kids) {
    if (kid === null || kid === undefined) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}

function s(tag, attrs, ...kids) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  for (const kid of kids) el.append(kid instanceof Node ? kid : String(kid));
  return el;
}

function fmtBytes(n) {
  if (!n) return "0 B";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + u[i];
}

function fmtNum(v) { return Math.round(v * 100) / 100; }
function short(id) { return id ? String(id).slice(0, 12) : "-"; }
function ns2date(ns) { return ns ? new Date(ns / 1e6).toLocaleString() : "-"; }
function dur(a, b) {
  if (!a || !b || b < a) return "";
  const ms = (b - a) / 1e6;
  return ms < 1000 ? ms.toFixed(1) + " ms" : (ms / 1000).toFixed(2) + " s";
}

function bar(kind, used, total, text) {
  const pct = total > 0 ? Math.min(100, 100 * used / total) : 0;
  return h("div", {class: "bar " + kind, title: text},
    h("div", {class: "fill", width: pct + "%"}), h("span", {class: "text"}, text));
}

function state(st) { return h("span", {class: "state " + st}, st); }

function fill(table, rows) {
  const body = document.querySelector(table + " tbody");
  body.replaceChildren(...rows);
  if (rows.length === 0) {
    const n = document.querySelectorAll(table + " thead th").length;
    body.append(h("tr", {}, h("td", {colspan: n, class: "muted"}, "none")));
  }
}

async function api(path, asText) {
  const r = await fetch(path, {credentials: "same-origin"});
  if (!r.ok) throw new Error(path + ": " + r.status + " " + (await r.text()).trim());
  return asText ? r.text() : r.json();
}

function showError(e) {
  const p = document.getElementById("error");
  if (e) { p.textContent = String(e.message || e); p.classList.remove("hidden"); }
  else p.classList.add("hidden");
}

function updated() {
  document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
}

// ---- Overview ----

async function overview() {
  const st = await api("/api/cluster");
  const c = st.cluster, machines = st.machines || {};
  const card = (label, value, id) => h("div", {class: "card"}, h("div", {class: "label"}, label),
    h("div", {class: "value", id: id}, value));
  document.getElementById("cards").replaceChildren(
    card("Nodes alive", c.alive_nodes, "node-count"),
    card("Nodes dead", c.dead_nodes, "dead-count"),
    card("Jobs running", c.running_jobs, "running-jobs"),
    card("CPU in use", fmtNum(c.resources_in_use.CPU || 0) + " / " + fmtNum(c.resources_total.CPU || 0)),
    card("Object store", fmtBytes(c.object_store_used) + " / " + fmtBytes(c.object_store_budget)));
  fill("#nodes-table", st.nodes.map(n => {
    const m = machines[n.agent_id];
    const cpuUsed = n.resources_in_use.CPU || 0, cpuTotal = n.resources_total.CPU || 0;
    return h("tr", {"data-node": n.agent_id},
      h("td", {class: "mono"}, n.agent_id), h("td", {}, n.host), h("td", {}, n.head ? "head" : "agent"),
      h("td", {}, state(n.alive ? "ALIVE" : "DEAD")),
      h("td", {}, bar("cpu", cpuUsed, cpuTotal, fmtNum(cpuUsed) + " / " + fmtNum(cpuTotal) + " CPU" +
        (m ? " · machine " + Math.round(m.cpu_percent) + "%" : ""))),
      h("td", {}, m && m.mem_total ? bar("mem", m.mem_used, m.mem_total, fmtBytes(m.mem_used) + " / " + fmtBytes(m.mem_total))
        : h("span", {class: "muted"}, n.alive ? "not known yet" : "-")),
      h("td", {}, bar("store", n.object_store_used, n.object_store_budget,
        fmtBytes(n.object_store_used) + " / " + fmtBytes(n.object_store_budget))),
      h("td", {}, n.workers), h("td", {}, n.started));
  }));
  // The drivers joined to the cluster (rayctl status's and list nodes' role driver).
  fill("#drivers-table", (st.drivers || []).map(d => h("tr", {"data-driver": d.node_id, "data-state": d.state},
    h("td", {class: "mono"}, d.node_id), h("td", {}, d.host), h("td", {}, d.pid), h("td", {class: "mono"}, d.job_id),
    h("td", {}, state(d.state)),
    h("td", {}, d.state === "ALIVE" ? bar("store", d.object_store_used, d.object_store_budget,
      fmtBytes(d.object_store_used) + " / " + fmtBytes(d.object_store_budget)) : "-"),
    h("td", {}, d.started || "-"), h("td", {}, d.last_heartbeat || "-"), h("td", {}, driverDetail(d)))));
  // What waits for resources (rayctl status's Demands).
  const dm = st.demands || {};
  fill("#demands-table", [
    ...(dm.tasks || []).map(t => h("tr", {"data-demand": "tasks"},
      h("td", {class: "mono"}, fmtShape(t.shape)),
      h("td", {}, t.placement_group ? "tasks/actors in placement group " + t.placement_group : "tasks/actors"),
      h("td", {}, [t.tasks ? t.tasks + " task(s)" : "", t.actors ? t.actors + " actor(s)" : ""].filter(Boolean).join(", ")),
      h("td", {class: "mono"}, (t.agent_ids || []).join(", ")), h("td", {}, ""))),
    ...(dm.placement_groups || []).map(g => h("tr", {"data-demand": "placement-group", "data-group": g.placement_group_id},
      h("td", {class: "mono"}, fmtBundles(g.bundles || []) + " (" + g.strategy + ")"),
      h("td", {}, "placement group " + g.placement_group_id + (g.name ? " \"" + g.name + "\"" : "")),
      h("td", {}, g.state === "PENDING" ? "pending " + (g.pending_seconds || 0) + " s" : g.state.toLowerCase()),
      h("td", {class: "mono"}, "job " + g.job_id), h("td", {}, g.reason || "")))]);
}

// fmtShape prints resources as rayctl status does: "{CPU: 1, GPU: 1, accel: 2}".
function fmtShape(m) {
  const rank = n => n === "CPU" ? 0 : n === "GPU" ? 1 : 2;
  const names = Object.keys(m || {}).sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  return "{" + names.map(n => n + ": " + fmtNum(m[n])).join(", ") + "}";
}

// fmtBundles counts runs of equal bundles: "{CPU: 1} * 2, {GPU: 1} * 1".
function fmtBundles(bs) {
  const parts = [];
  for (let i = 0; i < bs.length;) {
    let j = i + 1;
    while (j < bs.length && fmtShape(bs[j]) === fmtShape(bs[i])) j++;
    parts.push(fmtShape(bs[i]) + " * " + (j - i));
    i = j;
  }
  return parts.length ? parts.join(", ") : "{}";
}

// driverDetail says how long an unreachable driver has been silent, or when and why a
// dead one was taken for dead.
function driverDetail(d) {
  if (d.state === "UNREACHABLE") return d.last_heartbeat ? "silent " + d.silent_seconds + " s" : "lease lapsed";
  if (d.state === "DEAD") return "dead since " + (d.died || "?") + (d.reason ? ": " + d.reason : "");
  return "";
}

// ---- Jobs ----

async function jobs() {
  const st = await api("/api/cluster");
  fill("#jobs-table", st.jobs.map(j => h("tr", {"data-job": j.job_id},
    h("td", {class: "mono"}, j.job_id), h("td", {}, state(j.state)), h("td", {class: "mono"}, j.namespace || "-"),
    h("td", {class: "mono"}, j.submission_id || "-"),
    h("td", {}, j.start), h("td", {}, j.end || "-"), h("td", {class: "mono"}, j.driver),
    h("td", {}, j.driver_state ? state(j.driver_state) : "-"),
    h("td", {class: "mono"}, j.entrypoint || "-"), h("td", {}, j.message || ""),
    h("td", {}, j.submission_id ? h("button", {class: "link", onclick: () => showLog(j.submission_id)}, "logs") : "-"))));
}

let shownLog = "";
async function showLog(id) {
  shownLog = id;
  document.getElementById("job-log-box").classList.remove("hidden");
  document.getElementById("job-log-title").textContent = "Output of submission " + id;
  const text = await api("/api/logs/" + encodeURIComponent(id), true);
  const pre = document.getElementById("job-log");
  pre.textContent = text || "(no output yet)";
  pre.scrollTop = pre.scrollHeight;
}

// ---- Actors ----

// One page of the actor table: the server filters it and returns the first actorPage (the
// actors that are not dead first, newest change first) with how many there are.
const actorPage = 1000;
async function actors() {
  const q = new URLSearchParams({limit: String(actorPage)});
  const f = document.getElementById("actor-filter").value.trim();
  if (f) q.set("filter", f);
  const res = await api("/api/actors?" + q);
  let text = res.actors.length + " of " + res.matched + (f ? " matching" : "") + " actors shown (not dead first, newest first); " +
    res.total + " in the cluster, " + res.dead + " dead";
  document.getElementById("actors-summary").textContent = text;
  fill("#actors-table", res.actors.map(a => h("tr", {"data-actor": a.actor_id, title: history(a.history)},
      h("td", {class: "mono"}, short(a.actor_id)), h("td", {}, a.class), h("td", {}, a.name || "-"),
      h("td", {class: "mono"}, a.namespace || "-"), h("td", {}, state(a.state)),
      h("td", {class: "mono", title: a.node ? "worker process " + a.node + (a.agent_id ? " on machine (node) " + a.agent_id : "") : ""},
        short(a.node)), h("td", {class: "mono"}, a.job_id), h("td", {}, a.restarts + " / " + a.max_restarts),
      h("td", {}, a.start_time || "-"), h("td", {}, a.end_time || "-"), h("td", {}, a.detail || ""))));
}

// history is an actor's transitions as one line per change (the row's tooltip).
function history(hist) {
  return (hist || []).map(t => t.time + "  " + t.state + "  #" + t.incarnation + (t.node ? " on " + short(t.node) : "") +
    (t.detail ? "  " + t.detail : "")).join("\n");
}

// ---- Tasks ----

function query(form) {
  const q = new URLSearchParams();
  for (const [k, v] of new FormData(form)) if (String(v).trim()) q.set(k, String(v).trim());
  return q;
}

async function tasks() {
  const q = query(document.getElementById("task-form"));
  const res = await api("/api/tasks?" + q);
  let text = res.tasks.length + " of " + res.total + " task attempts (newest first), from " + res.processes + " processes";
  if (res.missing.length) text += "; did not answer in time: " + res.missing.join(", ");
  if (res.dropped) text += "; " + res.dropped + " older records dropped by their processes";
  document.getElementById("tasks-summary").textContent = text;
  fill("#tasks-table", res.tasks.map(t => h("tr", {"data-task": t.task_id, "data-state": t.state},
    h("td", {class: "mono"}, short(t.task_id)), h("td", {}, t.attempt), h("td", {}, t.name), h("td", {}, state(t.state)),
    h("td", {class: "mono"}, t.job_id), h("td", {class: "mono"}, short(t.node || t.worker)), h("td", {}, ns2date(t.started)),
    h("td", {}, dur(t.started, t.ended)), h("td", {}, t.error_type || ""), h("td", {class: "err"}, t.error || ""))));
}

// ---- Objects ----

async function objects() {
  const q = query(document.getElementById("object-form"));
  const res = await api("/api/objects?" + q);
  let text = res.objects.length + " of " + res.total + " objects (by ID), owned by " + res.processes + " processes";
  if (res.missing.length) text += "; did not answer in time: " + res.missing.join(", ");
  document.getElementById("objects-summary").textContent = text;
  fill("#objects-sums", res.summary.map(c => h("tr", {},
    h("td", {}, state(c.state)), h("td", {}, c.reference_type), h("td", {}, c.count), h("td", {}, fmtBytes(c.bytes)))));
  fill("#objects-table", res.objects.map(o => h("tr", {"data-object": o.object_id, "data-ref": o.reference_type},
    h("td", {class: "mono", title: o.object_id}, short(o.object_id)), h("td", {"data-size": o.size}, fmtBytes(o.size)),
    h("td", {}, state(o.state)), h("td", {}, o.reference_type),
    h("td", {class: "mono", title: o.location || ""}, o.location === "INLINE" ? "inline" : short(o.location)),
    h("td", {class: "mono", title: o.owner_node}, short(o.owner_node)), h("td", {class: "mono"}, o.job_id),
    h("td", {class: "mono", title: o.task_id}, short(o.task_id)), h("td", {}, o.local_refs + " / " + o.lineage_refs))));
}

// ---- Timeline ----

const stateColor = {FINISHED: "#1f9d55", FAILED: "#d64545", FAILED_RETRIED: "#e07b39", RUNNING: "#2f6fde", CANCELLED: "#888"};

async function timeline() {
  const form = document.getElementById("timeline-form");
  const q = query(form);
  document.getElementById("trace-link").setAttribute("href", "/api/timeline?" + q);
  const res = await api("/api/tasks?" + q);
  const spans = res.tasks.map(t => ({t, start: t.started || t.dispatched, end: t.ended || (t.state === "RUNNING" ? res.now : 0)}))
    .filter(x => x.start && x.end && x.end >= x.start);
  const box = document.getElementById("timeline");
  document.getElementById("timeline-summary").textContent = spans.length + " task attempts that ran (of " + res.tasks.length +
    " shown): a row per worker, a bar per attempt; hover a bar for its task";
  if (!spans.length) { box.replaceChildren(h("p", {class: "muted"}, "no task has run yet")); return; }
  const rows = [...new Set(spans.map(x => (x.t.node ? short(x.t.node) + " " : "") + (x.t.worker || "-")))].sort();
  // The axis ends where the last attempt that ended ended (or the last running one
  // started): a task running for minutes does not squeeze the others into a line; running
  // attempts reach the right edge.
  const t0 = Math.min(...spans.map(x => x.start));
  const t1 = Math.max(...spans.map(x => x.t.ended ? x.end : x.start)) + 1;
  for (const sp of spans) sp.end = Math.min(sp.end, t1);
  const left = 230, width = Math.max(900, box.clientWidth - 20), rowH = 22, top = 24;
  const x = v => left + (width - left - 10) * (v - t0) / Math.max(1, t1 - t0);
  const svg = s("svg", {width: width, height: top + rows.length * rowH + 10, id: "timeline-svg"});
  for (let i = 0; i <= 5; i++) {
    const v = t0 + (t1 - t0) * i / 5;
    const label = t1 - t0 < 2e9 ? ((v - t0) / 1e6).toFixed(1) + " ms" : ((v - t0) / 1e9).toFixed(2) + " s";
    svg.append(s("line", {x1: x(v), x2: x(v), y1: 16, y2: top + rows.length * rowH, stroke: "#e4e7ec"}),
      s("text", {x: x(v), y: 12, "text-anchor": i === 0 ? "start" : i === 5 ? "end" : "middle"}, "+" + label));
  }
  rows.forEach((r, i) => svg.append(s("text", {x: 4, y: top + i * rowH + 15, class: "mono"}, r.slice(0, 36))));
  for (const sp of spans) {
    const row = rows.indexOf((sp.t.node ? short(sp.t.node) + " " : "") + (sp.t.worker || "-"));
    const rect = s("rect", {x: x(sp.start), y: top + row * rowH + 3, width: Math.max(2, x(sp.end) - x(sp.start)), height: rowH - 6,
      rx: 2, fill: stateColor[sp.t.state] || "#999", "data-state": sp.t.state, class: "span"});
    rect.append(s("title", {}, sp.t.name + " " + sp.t.state + " " + dur(sp.start, sp.end) + (sp.t.error ? ": " + sp.t.error : "")));
    svg.append(rect);
  }
  box.replaceChildren(svg);
}

// ---- Metrics ----

const charts = [
  {title: "Tasks by state", series: [["tasks_running", "running", "#2f6fde"], ["tasks_pending", "pending", "#d99a1e"],
    ["tasks_failed", "failed", "#d64545"]]},
  {title: "Tasks finished (since each process started)", series: [["tasks_finished", "finished", "#1f9d55"]]},
  {title: "CPUs in use / total", series: [["cpu_used", "in use", "#2f6fde"], ["cpu_total", "total", "#9aa3b5"]]},
  {title: "Object store", bytes: true, series: [["object_store_used", "used", "#1f9d8a"], ["object_store_budget", "budget", "#9aa3b5"]]},
  {title: "Nodes, jobs and actors", series: [["nodes_alive", "nodes alive", "#1d2330"], ["jobs_running", "jobs running", "#8a5cd6"],
    ["actors_alive", "actors alive", "#e07b39"]]},
  {title: "Head machine CPU %", series: [["head_cpu_percent", "CPU %", "#2f6fde"]]},
  {title: "Head machine memory", bytes: true, series: [["head_mem_used", "used", "#8a5cd6"], ["head_mem_total", "total", "#9aa3b5"]]},
];

function chart(def, samples, windowMs) {
  const W = 440, H = 170, L = 56, R = 8, T = 8, B = 22;
  // The x axis reaches back to the first sample (at least 5 minutes, at most the window).
  const now = Date.now(), first = samples.length ? samples[0].t : now;
  const span = Math.min(windowMs, Math.max(5 * 60000, now - first)), from = now - span;
  let maxV = 0;
  for (const smp of samples) for (const [k] of def.series) maxV = Math.max(maxV, smp[k] || 0);
  maxV = maxV > 0 ? maxV * 1.1 : 1;
  const x = t => L + (W - L - R) * (t - from) / span, y = v => T + (H - T - B) * (1 - v / maxV);
  const svg = s("svg", {width: "100%", viewBox: "0 0 " + W + " " + H});
  for (let i = 0; i <= 4; i++) {
    const v = maxV * i / 4;
    svg.append(s("line", {x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#eceff3"}),
      s("text", {x: 2, y: y(v) + 3}, def.bytes ? fmtBytes(v) : fmtNum(v)));
  }
  const minutes = span / 60000, step = minutes <= 5 ? 1 : minutes <= 20 ? 5 : 15;
  for (let m = 0; m <= minutes + 1e-9; m += step) {
    svg.append(s("text", {x: x(now - m * 60000) - 12, y: H - 6}, m ? "-" + m + " min" : "now"));
  }
  for (const [k, , color] of def.series) {
    const pts = samples.map(smp => x(smp.t).toFixed(1) + "," + y(smp[k] || 0).toFixed(1)).join(" ");
    if (pts) svg.append(s("polyline", {points: pts, fill: "none", stroke: color, "stroke-width": 1.6, "data-series": k}));
  }
  const last = samples.length ? samples[samples.length - 1] : null;
  const legend = h("div", {class: "legend"}, ...def.series.map(([k, name, color]) => h("span", {},
    h("i", {width: "10px", class: "sw-" + k}), name + (last ? ": " + (def.bytes ? fmtBytes(last[k] || 0) : fmtNum(last[k] || 0)) : ""))));
  def.series.forEach(([k, , color], i) => { legend.children[i].firstChild.style.background = color; });
  return h("div", {class: "chart"}, h("h4", {}, def.title), svg, legend);
}

async function metrics() {
  const res = await api("/api/metrics");
  const box = document.getElementById("charts");
  box.replaceChildren(...charts.map(c => chart(c, res.samples, res.window_ms)));
  box.setAttribute("data-samples", res.samples.length);
}

// ---- Router ----

const views = {overview, jobs, actors, tasks, objects, timeline, metrics};
const autoRefresh = {overview: true, jobs: true, actors: true, metrics: true};
let current = "";

async function show(name, manual) {
  if (!views[name]) name = "overview";
  current = name;
  for (const sec of document.querySelectorAll(".view")) sec.classList.toggle("active", sec.id === "view-" + name);
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.view === name);
  try {
    await views[name]();
    if (name === "jobs" && shownLog) await showLog(shownLog);
    showError(null);
    updated();
    document.body.setAttribute("data-loaded", name);
  } catch (e) {
    showError(e);
  }
}

window.addEventListener("hashchange", () => show(location.hash.slice(1), true));
let actorFilterTimer = null; // the filter asks the server once typing pauses
document.getElementById("actor-filter").addEventListener("input", () => {
  clearTimeout(actorFilterTimer);
  actorFilterTimer = setTimeout(() => show("actors", true), 300);
});
document.getElementById("task-form").addEventListener("submit", e => { e.preventDefault(); show("tasks", true); });
document.getElementById("object-form").addEventListener("submit", e => { e.preventDefault(); show("objects", true); });
document.getElementById("timeline-form").addEventListener("submit", e => { e.preventDefault(); show("timeline", true); });
setInterval(() => { if (autoRefresh[current] && !document.hidden) show(current, false); }, 5000);
show(location.hash.slice(1) || "overview", true);
