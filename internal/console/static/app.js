// zkd console: a small hand-written client of the console's JSON API (api/...). No
// framework and nothing loaded from elsewhere: the page must work on an air-gapped host.
"use strict";

const api = "api/";
const PAGE = 500;

// el builds an element: el("td", {class: "x"}, "text", child, ...).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : String(k));
  return e;
}

// shown renders a name, path or id with its invisible code points (invisibleChars, from
// display.js) escaped as \u202e, each in a span of its own: a right-to-left override or a
// zero-width space must not change what a name appears to be. The escapes are Display's in
// internal/console/display.go.
function shown(text) {
  text = String(text);
  const f = document.createDocumentFragment();
  let last = 0;
  for (const m of String(text).matchAll(invisibleChars)) {
    if (m.index > last) f.append(text.slice(last, m.index));
    const cp = m[0].codePointAt(0);
    const hex = cp.toString(16);
    const esc = cp > 0xffff ? "\\u{" + hex + "}" : "\\u" + hex.padStart(4, "0");
    f.append(el("span", { class: "esc", title: "U+" + hex.toUpperCase().padStart(4, "0") }, esc));
    last = m.index + m[0].length;
  }
  if (last < text.length) f.append(text.slice(last));
  return f;
}

function cred() { return sessionStorage.getItem("zkd-cred") || ""; }

function headers(extra) {
  const h = Object.assign({}, extra);
  if (cred()) h["Authorization"] = "digest " + cred();
  return h;
}

// get fetches a JSON API answer; a refusal throws an Error carrying its message and status.
async function get(path, params) {
  const q = new URLSearchParams(params || {}).toString();
  const resp = await fetch(api + path + (q ? "?" + q : ""), { headers: headers() });
  return answer(resp);
}

async function post(path, body) {
  const resp = await fetch(api + path, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json", "X-Zkd-Console": "1" }),
    body: JSON.stringify(body),
  });
  return answer(resp);
}

async function answer(resp) {
  let body;
  try { body = await resp.json(); } catch (e) { body = { error: resp.statusText }; }
  if (!resp.ok) {
    const err = new Error(body.error || resp.statusText);
    err.status = resp.status;
    throw err;
  }
  return body;
}

function join(parent, name) { return parent === "/" ? "/" + name : parent + "/" + name; }

// ---- tabs

const loaders = {};
let current = "";

function showTab(name) {
  if (!document.getElementById("tab-" + name)) name = "tree";
  current = name;
  for (const s of document.querySelectorAll(".tab")) s.classList.toggle("active", s.id === "tab-" + name);
  for (const a of document.querySelectorAll("#tabs a")) a.classList.toggle("active", a.dataset.tab === name);
  if (loaders[name]) loaders[name]();
}

// ---- tree

// loadChildren fills ul with one page of path's children and, when there are more, a
// "more" row that loads the next page.
async function loadChildren(ul, path, after) {
  let page;
  try {
    page = await get("children", { path: path, after: after || "", limit: PAGE });
  } catch (e) {
    ul.append(el("li", { class: "err" }, e.message));
    return;
  }
  for (const c of page.children) ul.append(treeItem(join(path, c.name), c));
  if (page.next) {
    const more = el("li", { class: "more" }, "more (" + page.total + " children)…");
    more.addEventListener("click", () => { more.remove(); loadChildren(ul, path, page.next); });
    ul.append(more);
  }
}

function treeItem(path, c) {
  const name = path === "/" ? "/" : path.slice(path.lastIndexOf("/") + 1);
  const toggle = el("span", { class: "toggle" }, c.numChildren > 0 ? "▸" : "·");
  const row = el("div", { class: "tree-row", "data-path": path }, toggle, el("span", { class: "name" }, shown(name)));
  // The root is drawn before its count is known.
  if (c.numChildren > 0 && path !== "/") row.append(el("span", { class: "count" }, c.numChildren));
  if (c.ephemeral) row.append(el("span", { class: "eph" }, "ephemeral"));
  const li = el("li", {}, row);
  let sub = null;
  toggle.addEventListener("click", (ev) => {
    ev.stopPropagation();
    if (c.numChildren === 0) return;
    if (sub) {
      sub.remove();
      sub = null;
      toggle.textContent = "▸";
      return;
    }
    sub = el("ul", {});
    li.append(sub);
    toggle.textContent = "▾";
    loadChildren(sub, path);
  });
  row.addEventListener("click", () => {
    for (const s of document.querySelectorAll(".tree-row.selected")) s.classList.remove("selected");
    row.classList.add("selected");
    showNode(path);
  });
  return li;
}

let treeLoaded = false;
loaders.tree = () => {
  if (treeLoaded) return;
  treeLoaded = true;
  const root = document.getElementById("tree");
  root.textContent = "";
  const ul = el("ul", {});
  root.append(ul);
  const item = treeItem("/", { numChildren: 1 });
  ul.append(item);
  item.querySelector(".toggle").click();
};

// ---- node view

function statTable(stat) {
  const t = el("table", {});
  for (const [k, v] of Object.entries(stat)) {
    let shown = v;
    if ((k === "ctime" || k === "mtime") && v > 0) shown = v + "  (" + new Date(v).toISOString() + ")";
    t.append(el("tr", {}, el("th", {}, k), el("td", {}, shown)));
  }
  return t;
}

async function showNode(path) {
  const box = document.getElementById("node");
  box.textContent = "";
  let n;
  try {
    n = await get("node", { path: path });
  } catch (e) {
    box.append(el("p", { class: "err" }, shown(path), ": " + e.message));
    return;
  }
  box.append(el("h2", { id: "node-path" }, shown(n.path)));
  if (n.dataHidden) {
    box.append(el("p", { class: "err", id: "data-hidden" }, "no READ permission for these credentials: data and ACL are hidden"));
  } else {
    const d = n.data;
    const views = el("div", { class: "views" }, "data, " + d.size + " bytes: ");
    const pre = el("pre", { id: "data-view" });
    const forms = [];
    if (d.json !== undefined) forms.push(["JSON", d.json]);
    if (d.text !== undefined) forms.push(["text", d.text]);
    forms.push(["hex", d.hex + (d.hexTruncated ? "… (first 64 KiB)" : "")]);
    forms.push(["base64", d.base64]);
    for (const [label, text] of forms) {
      const b = el("button", { type: "button", "data-view": label }, label);
      b.addEventListener("click", () => {
        for (const o of views.querySelectorAll("button")) o.classList.remove("active");
        b.classList.add("active");
        pre.textContent = text;
      });
      views.append(b);
    }
    box.append(views, pre);
    views.querySelector("button").click();
    box.append(editForm(n));
  }
  box.append(el("h3", {}, "Stat"), statTable(n.stat));
  if (!n.dataHidden) {
    const acl = el("table", { id: "acl-table" }, el("tr", {}, el("th", {}, "scheme"), el("th", {}, "id"), el("th", {}, "perms")));
    for (const a of n.acl) acl.append(el("tr", {}, el("td", {}, a.scheme), el("td", {}, shown(a.id)), el("td", {}, a.perms)));
    box.append(el("h3", {}, "ACL"), acl, aclForm(n));
  }
}

function status(node, ok, text) {
  node.className = ok ? "ok" : "err";
  node.textContent = text;
}

function editForm(n) {
  const text = n.data.text !== undefined;
  const area = el("textarea", { id: "edit-data", rows: 6 });
  area.value = text ? n.data.text : n.data.hex.split("\n").map((l) => l.slice(10, 58)).join(" ").replace(/\s+/g, " ").trim();
  const enc = el("select", { id: "edit-encoding" }, el("option", { value: "text" }, "text"), el("option", { value: "hex" }, "hex"), el("option", { value: "base64" }, "base64"));
  enc.value = text ? "text" : "hex";
  if (!text && n.data.hexTruncated) { area.value = n.data.base64; enc.value = "base64"; }
  const version = el("input", { id: "edit-version", size: 6, value: n.stat.version });
  const st = el("span", { id: "edit-status" });
  const save = el("button", { id: "edit-save", type: "submit" }, "Save data");
  const form = el("form", {}, el("fieldset", {}, el("legend", {}, "Edit data"), area,
    el("label", {}, "encoding ", enc), " ", el("label", {}, "expected version ", version), " ", save, " ", st));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const s = await post("set", { path: n.path, data: area.value, encoding: enc.value, version: parseInt(version.value, 10) });
      status(st, true, "saved: version " + s.version);
      setTimeout(() => showNode(n.path), 600);
    } catch (e) {
      status(st, false, "refused (" + (e.status || "?") + "): " + e.message);
    }
  });
  return form;
}

function aclForm(n) {
  const area = el("textarea", { id: "acl-edit", rows: 3 });
  area.value = n.acl.map((a) => a.scheme + ":" + a.id + ":" + a.perms).join("\n");
  const version = el("input", { id: "acl-version", size: 6, value: n.stat.aversion });
  const st = el("span", { id: "acl-status" });
  const form = el("form", {}, el("fieldset", {}, el("legend", {}, "Edit ACL (scheme:id:perms, one a line)"), area,
    el("label", {}, "expected aversion ", version), " ", el("button", { id: "acl-save", type: "submit" }, "Save ACL"), " ", st));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const acl = [];
    for (const line of area.value.split("\n").map((l) => l.trim()).filter((l) => l)) {
      // The id itself may hold colons (digest user:hash, ip v6): scheme first, perms last.
      const a = line.indexOf(":"), b = line.lastIndexOf(":");
      if (a < 0 || a === b) { status(st, false, "not scheme:id:perms: " + line); return; }
      acl.push({ scheme: line.slice(0, a), id: line.slice(a + 1, b), perms: line.slice(b + 1) });
    }
    try {
      const s = await post("setacl", { path: n.path, acl: acl, version: parseInt(version.value, 10) });
      status(st, true, "saved: aversion " + s.aversion);
      setTimeout(() => showNode(n.path), 600);
    } catch (e) {
      status(st, false, "refused (" + (e.status || "?") + "): " + e.message);
    }
  });
  return form;
}

// ---- search

async function search(ev) {
  ev.preventDefault();
  const out = document.getElementById("search-results");
  const st = document.getElementById("search-status");
  out.textContent = "";
  st.className = "";
  st.textContent = "searching…";
  try {
    const r = await get("search", { q: document.getElementById("search-input").value, mode: document.getElementById("search-mode").value });
    st.textContent = r.matches.length + " matches, " + r.visited + " nodes visited" + (r.stopped ? " — stopped: " + r.stopped : "");
    for (const p of r.matches) {
      const li = el("li", { "data-path": p }, shown(p));
      li.addEventListener("click", () => {
        for (const s of document.querySelectorAll(".tree-row.selected")) s.classList.remove("selected");
        location.hash = "#tree";
        showNode(p);
      });
      out.append(li);
    }
  } catch (e) {
    status(st, false, e.message);
  }
}

// ---- sessions, watches, ensemble

function fillTable(id, rows) {
  const body = document.querySelector("#" + id + " tbody");
  body.textContent = "";
  for (const r of rows) body.append(r);
}

loaders.sessions = async () => {
  try {
    const ss = await get("sessions");
    fillTable("sessions-table", ss.map((s) => {
      const link = el("a", { href: "#sessions" }, s.ephemerals);
      link.addEventListener("click", () => showEphemerals(s.id));
      return el("tr", {}, el("td", {}, s.id), el("td", {}, s.timeout), el("td", {}, s.remote || "(elsewhere)"), el("td", {}, link));
    }));
  } catch (e) {
    fillTable("sessions-table", [el("tr", {}, el("td", { class: "err", colspan: 4 }, e.message))]);
  }
};

async function showEphemerals(id) {
  const box = document.getElementById("session-ephemerals");
  box.textContent = "";
  try {
    const ps = await get("ephemerals", { session: id });
    box.append(el("h3", {}, "ephemerals of " + id), el("ul", { class: "plain" }, ...ps.map((p) => el("li", {}, shown(p)))));
  } catch (e) {
    box.append(el("p", { class: "err" }, e.message));
  }
}

loaders.watches = async () => {
  try {
    const ws = await get("watches");
    fillTable("watches-table", ws.map((w) => el("tr", {}, el("td", {}, shown(w.path)), el("td", {}, w.sessions.join(" ")))));
  } catch (e) {
    fillTable("watches-table", [el("tr", {}, el("td", { class: "err", colspan: 2 }, e.message))]);
  }
};

loaders.ensemble = async () => {
  const sum = document.getElementById("ensemble-summary");
  try {
    const e = await get("ensemble");
    sum.textContent = "this server: " + e.mode + ", last zxid " + e.zxid + (e.leader >= 0 ? ", leader " + e.leader : "");
    fillTable("ensemble-table", e.members.map((m) => el("tr", {},
      el("td", {}, m.id + (m.self ? " (this)" : "")),
      el("td", {}, (m.leader ? "leader" : m.observer ? "observer" : "participant")),
      el("td", {}, m.quorum), el("td", {}, m.election),
      el("td", {}, m.leader ? "" : m.known ? (m.synced ? "yes" : "syncing") : "?"),
      el("td", {}, m.zxid || ""), el("td", {}, m.lag === undefined ? "" : m.lag))));
  } catch (e) {
    status(sum, false, e.message);
  }
};

// ---- metrics: poll every second, draw each series on its own canvas

const series = [
  { key: "outstanding_requests", title: "outstanding requests" },
  { key: "avg_latency", title: "latency avg (ms)" },
  { key: "max_latency", title: "latency max (ms)" },
  { key: "znode_count", title: "znodes" },
  { key: "packets", title: "packets/s (received + sent)", rate: true },
  { key: "num_alive_connections", title: "connections" },
];
const KEEP = 120;
let poller = null;
let last = null;

function setupCharts() {
  const box = document.getElementById("charts");
  if (box.childElementCount) return;
  for (const s of series) {
    s.points = [];
    s.canvas = el("canvas", { width: 420, height: 160, "data-key": s.key });
    s.label = el("span", {});
    box.append(el("div", { class: "chart" }, el("h3", {}, s.title, ": ", s.label), s.canvas));
    // Draw at the size the canvas is shown at, not stretched.
    s.canvas.width = s.canvas.clientWidth || 420;
  }
}

function draw(s) {
  const c = s.canvas, g = c.getContext("2d");
  c.dataset.points = s.points.length;
  const w = c.width, h = c.height, pad = 4;
  g.clearRect(0, 0, w, h);
  g.strokeStyle = "#e1e5ec";
  g.beginPath();
  for (let i = 1; i < 4; i++) { g.moveTo(0, (h * i) / 4); g.lineTo(w, (h * i) / 4); }
  g.stroke();
  if (s.points.length === 0) return;
  const top = Math.max(1, ...s.points) * 1.1;
  g.fillStyle = "#7a8699";
  g.font = "11px sans-serif";
  g.fillText(String(Math.round(top)), pad, 12);
  g.strokeStyle = "#2a62c9";
  g.lineWidth = 1.5;
  g.beginPath();
  // The first points are spread over the width; from KEEP on, the chart scrolls.
  const step = w / (Math.min(KEEP, Math.max(s.points.length, 10)) - 1);
  s.points.forEach((v, i) => {
    const x = w - (s.points.length - 1 - i) * step;
    const y = h - pad - (v / top) * (h - 2 * pad);
    if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
  });
  g.stroke();
}

async function poll() {
  let m;
  try { m = await get("metrics"); } catch (e) { return; }
  m.packets = (m.packets_received || 0) + (m.packets_sent || 0);
  for (const s of series) {
    let v = Number(m[s.key] || 0);
    if (s.rate) {
      const prev = last ? last[s.key] : null;
      const dt = last ? (m.time_ms - last.time_ms) / 1000 : 0;
      // A counter that went down was reset (srst): no rate for that second.
      v = prev !== null && dt > 0 && v >= prev ? (v - prev) / dt : null;
      if (v === null) continue;
    }
    s.points.push(v);
    if (s.points.length > KEEP) s.points.shift();
    s.label.textContent = Math.round(v * 10) / 10;
    draw(s);
  }
  last = m;
}

loaders.metrics = () => {
  setupCharts();
  if (!poller) {
    poll();
    poller = setInterval(() => { if (current === "metrics") poll(); }, 1000);
  }
};

// ---- start

function showCred() {
  document.getElementById("cred-state").textContent = cred() ? "as " + cred().split(":")[0] : "anonymous";
}

document.addEventListener("DOMContentLoaded", () => {
  const c = document.getElementById("cred");
  c.value = cred();
  c.addEventListener("change", () => { sessionStorage.setItem("zkd-cred", c.value); showCred(); });
  document.getElementById("cred-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem("zkd-cred", c.value);
    showCred();
  });
  showCred();
  document.getElementById("search-form").addEventListener("submit", search);
  window.addEventListener("hashchange", () => showTab(location.hash.slice(1)));
  showTab(location.hash.slice(1) || "tree");
});
