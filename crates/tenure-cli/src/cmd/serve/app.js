// The tenure dashboard: polls the read-only JSON API of `tenure serve`
// once a second and redraws. Every value is written with textContent;
// nothing from the store is parsed as HTML.
"use strict";

const POLL_MS = 1000;
const HISTORY = 300; // depth samples kept per production (5 minutes)
const COLORS = ["#2f6fdf", "#d9480f", "#2b8a3e", "#862e9c", "#c92a2a", "#5c7cfa"];
const MAX_EVENTS = 50;

let token = sessionStorage.getItem("tenure-token");
let eventsAfter = null; // the cursor of the event stream
const depth = new Map(); // production -> [[t, depth]]

async function api(path) {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const r = await fetch(path, { headers, cache: "no-store" });
  if (r.status === 401) {
    document.getElementById("login").hidden = false;
    throw new Error("a bearer token is required");
  }
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}

function ms(us) {
  if (us === null || us === undefined) return "-";
  if (us < 1000) return us + "µs";
  if (us < 1e6) return (us / 1000).toFixed(1) + "ms";
  return (us / 1e6).toFixed(2) + "s";
}

function time(us) {
  return us === null || us === undefined ? "-" : new Date(us / 1000).toISOString();
}

function pct(p) {
  return p.count ? ms(p.p50_us) + " / " + ms(p.p95_us) + " / " + ms(p.p99_us) : "-";
}

function row(tbody, cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = document.createElement("td");
    td.textContent = String(c);
    if (typeof c === "number") td.className = "num";
    tr.appendChild(td);
  }
  tbody.appendChild(tr);
  return tr;
}

function fill(id, rows) {
  const tbody = document.querySelector("#" + id + " tbody");
  tbody.replaceChildren();
  for (const r of rows) row(tbody, r);
}

// Job rows (failures, leases close to expiry): [production, job, ...]; a
// click shows the job (/api/job) below the tables.
function fillJobs(id, rows) {
  const tbody = document.querySelector("#" + id + " tbody");
  tbody.replaceChildren();
  for (const r of rows) {
    const tr = row(tbody, r);
    tr.className = "job";
    tr.addEventListener("click", () => showJob(r[0], r[1]).catch(showError));
  }
}

function showError(e) {
  const status = document.getElementById("status");
  status.textContent = String(e.message || e);
  status.className = "stale";
}

async function showJob(production, job) {
  const q = "production=" + encodeURIComponent(production) + "&job=" + encodeURIComponent(job);
  const j = await api("/api/job?" + q);
  const dl = document.getElementById("job-detail");
  dl.replaceChildren();
  const fields = [
    ["production", j.production], ["job", j.job], ["state", j.state],
    ["attempts", j.attempts + "/" + j.max_attempts], ["priority", j.priority],
    ["holder", j.holder || "-"], ["expires", time(j.expires_us)], ["due", time(j.due_us)],
    ["created", time(j.created_us)], ["updated", time(j.updated_us)],
    ["last error", j.last_error || "-"],
    ["payload", j.payload_len + " B sha256 " + j.payload_sha256],
    ["progress", j.progress_len === null ? "-" : j.progress_len + " B sha256 " + j.progress_sha256],
  ];
  for (const [k, v] of fields) {
    const dt = document.createElement("dt");
    dt.textContent = k;
    const dd = document.createElement("dd");
    dd.textContent = String(v);
    dd.dataset.field = k;
    dl.append(dt, dd);
  }
  document.getElementById("job").hidden = false;
}

// The claim gates as badges: paused (since when), concurrency limit, rate limit.
function gateBadges(g) {
  const out = [];
  if (g.paused_us !== null) out.push(["paused", "paused since " + time(g.paused_us)]);
  if (g.concurrency !== null) out.push(["limit", "limit " + g.concurrency]);
  if (g.rate !== null) {
    const per = g.rate.claims / (g.rate.interval_us / 1e6);
    out.push(["rate", "rate " + Number(per.toPrecision(4)) + "/s burst " + g.rate.burst]);
  }
  return out;
}

function gatesCell(td, g) {
  const badges = gateBadges(g);
  if (!badges.length) td.textContent = "-";
  for (const [kind, text] of badges) {
    const b = document.createElement("span");
    b.className = "badge " + kind;
    b.textContent = text;
    td.appendChild(b);
  }
}

function drawDepth() {
  const c = document.getElementById("depth");
  const g = c.getContext("2d");
  g.clearRect(0, 0, c.width, c.height);
  let max = 1;
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const s of depth.values()) {
    for (const [t, d] of s) {
      max = Math.max(max, d);
      t0 = Math.min(t0, t);
      t1 = Math.max(t1, t);
    }
  }
  const span = Math.max(t1 - t0, 1);
  g.fillStyle = "#6b7280";
  g.font = "11px sans-serif";
  g.fillText(String(max), 4, 12);
  g.fillText("0", 4, c.height - 4);
  const legend = document.getElementById("legend");
  legend.replaceChildren();
  let i = 0;
  for (const [name, s] of depth) {
    const color = COLORS[i % COLORS.length];
    g.strokeStyle = color;
    g.lineWidth = 2;
    g.beginPath();
    s.forEach(([t, d], k) => {
      const x = 30 + ((t - t0) / span) * (c.width - 40);
      const y = c.height - 6 - (d / max) * (c.height - 20);
      if (k === 0) g.moveTo(x, y);
      else g.lineTo(x, y);
    });
    g.stroke();
    const item = document.createElement("span");
    const swatch = document.createElement("i");
    swatch.className = "c" + (i % COLORS.length);
    item.appendChild(swatch);
    item.appendChild(document.createTextNode(name));
    legend.appendChild(item);
    i += 1;
  }
}

async function poll() {
  const stats = await api("/api/stats");
  document.getElementById("now").textContent = time(stats.now_us);
  document.getElementById("mark").textContent = time(stats.high_water_us);
  const rows = [];
  const failures = [];
  const expiring = [];
  for (const p of stats.productions) {
    const j = p.jobs;
    rows.push([[
      p.name + (p.cancelled ? " (cancelled)" : ""),
      j.waiting_due, j.waiting_later, j.claimed_live, j.claimed_expired,
      j.completed, j.failed, j.cancelled,
      ms(p.oldest_due_age_us), p.expiring_within,
      pct(p.flow.wait), pct(p.flow.run),
      (p.flow.claims / (p.flow.covered_us / 1e6)).toFixed(2),
    ], p.gates]);
    const s = depth.get(p.name) || [];
    s.push([stats.now_us, j.waiting_due + j.waiting_later + j.claimed_live + j.claimed_expired]);
    if (s.length > HISTORY) s.shift();
    depth.set(p.name, s);
    const q = "production=" + encodeURIComponent(p.name) + "&limit=20";
    if (j.failed > 0) {
      const f = await api("/api/failures?" + q);
      for (const x of f.jobs) {
        failures.push([x.production, x.job, x.attempts + "/" + x.max_attempts, x.last_error || "-",
          x.payload_len + " B sha256 " + x.payload_sha256.slice(0, 12)]);
      }
    }
    if (p.expiring_within > 0) {
      const e = await api("/api/expiring?" + q);
      for (const x of e.jobs) {
        expiring.push([x.production, x.job, x.holder || "-", ms(x.expires_us - e.now_us)]);
      }
    }
  }
  const tbody = document.querySelector("#productions tbody");
  tbody.replaceChildren();
  for (const [cells, gates] of rows) {
    const tr = row(tbody, cells);
    const td = document.createElement("td");
    td.className = "gates";
    gatesCell(td, gates);
    tr.appendChild(td);
  }
  fillJobs("failures", failures);
  fillJobs("expiring", expiring);
  drawDepth();
  await pollEvents();
}

async function pollEvents() {
  const tbody = document.querySelector("#events tbody");
  if (eventsAfter === null) {
    // Start at the newest events: the server finds the head of the log.
    const page = await api("/api/events?tail=" + MAX_EVENTS + "&limit=" + MAX_EVENTS);
    tbody.replaceChildren();
    for (const e of page.events) addEvent(tbody, e);
    eventsAfter = page.next_after;
    return;
  }
  let page;
  try {
    page = await api("/api/events?limit=1000&after=" + eventsAfter);
  } catch (e) {
    // Pruned past the cursor (410): start again at the tail.
    eventsAfter = null;
    throw e;
  }
  eventsAfter = page.next_after;
  for (const e of page.events.slice(-MAX_EVENTS)) addEvent(tbody, e);
}

function addEvent(tbody, e) {
  const tr = document.createElement("tr");
  for (const c of [e.seq, time(e.at_us), e.production, e.job || "-", e.kind, e.holder || "-", e.detail]) {
    const td = document.createElement("td");
    td.textContent = String(c);
    tr.appendChild(td);
  }
  tbody.insertBefore(tr, tbody.firstChild);
  while (tbody.children.length > MAX_EVENTS) tbody.removeChild(tbody.lastChild);
}

async function loop() {
  const status = document.getElementById("status");
  try {
    await poll();
    status.textContent = "live";
    status.className = "";
    document.body.dataset.ready = "1";
  } catch (e) {
    status.textContent = String(e.message || e);
    status.className = "stale";
  }
  setTimeout(loop, POLL_MS);
}

document.getElementById("login-go").addEventListener("click", () => {
  token = document.getElementById("token").value.trim();
  sessionStorage.setItem("tenure-token", token);
  document.getElementById("login").hidden = true;
});

loop();
