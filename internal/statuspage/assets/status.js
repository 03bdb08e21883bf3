// weir status page: reads api/v1/status once a second and draws the
// pipeline, its components, partitions and recent events. Plain DOM, no
// library; data is only ever set as text, never parsed as HTML.
"use strict";

(function () {
  const STATUS_URL = "api/v1/status?partitions=100";
  const PERIOD_MS = 1000;
  const TIMEOUT_MS = 4000;
  const SVG = "http://www.w3.org/2000/svg";

  let last = null;        // the last status received
  let lastAt = 0;         // when it was received (browser clock)
  let downSince = 0;      // when requests began to fail, 0 while they succeed
  let refusal = "";       // why weir refused the status (401, 403), shown instead
  let asked = false;      // the token was asked for once already
  const sorts = {};       // source name -> {key, desc}

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, attrs[k]);
    }
    if (text !== undefined) e.textContent = text;
    return e;
  }
  // wrapping sets e's text with a line break allowed after every "/", so
  // that a path wraps between its parts instead of inside a word.
  function wrapping(e, text) {
    const parts = String(text).split(/(?<=\/)(?=[^\s\/])/);
    e.replaceChildren();
    parts.forEach((p, i) => {
      if (i > 0) e.appendChild(document.createElement("wbr"));
      e.appendChild(document.createTextNode(p));
    });
    return e;
  }
  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // ---- formatting ----
  function time(iso) {
    if (!iso) return "";
    const d = new Date(iso);
    return isNaN(d) ? "" : d.toLocaleTimeString([], { hour12: false });
  }
  function rate(v) {
    if (!v) return "0";
    if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (v >= 1e4) return (v / 1e3).toFixed(0) + "k";
    if (v >= 1e3) return (v / 1e3).toFixed(1) + "k";
    if (v >= 10) return v.toFixed(0);
    return v.toFixed(1);
  }
  function count(v) { return (v || 0).toLocaleString("en-US"); }
  function dur(ms) {
    if (!ms) return "";
    const s = Math.floor(ms / 1000);
    if (s < 1) return "<1s";
    if (s < 60) return s + "s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + "m" + String(s % 60).padStart(2, "0") + "s";
    const h = Math.floor(m / 60);
    return h + "h" + String(m % 60).padStart(2, "0") + "m";
  }
  function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  const STATE_WORDS = { ok: "ok", opening: "opening", finished: "finished", stalled: "stalled",
    retrying: "retrying", failing: "failing", given_up: "given up", idle: "idle" };
  function stateText(n) {
    let s = STATE_WORDS[n.state] || n.state;
    if (n.waiting_on && n.waiting_on.length) s += ": waiting on " + n.waiting_on.join(", ");
    if (n.since && n.state !== "ok") s += " since " + time(n.since);
    return s;
  }

  // ---- the graph ----
  //
  // Wide enough, the graph is drawn in columns, left to right: sources, then
  // transforms by their longest path from a source, then sinks, then the
  // sinks fed by other sinks (dead letters). An edge that spans columns gets
  // a slot of its own in each column it crosses, so no edge passes behind a
  // node. On a narrow window the nodes form one column in the same order and
  // the edges run down lanes at their left. Either way the drawing is as
  // wide as the window, never wider, and its text keeps its size.

  const NODE_H = 96, PAD = 8, SLOT_H = 12, VGAP = 16, MIN_GAP = 64, MIN_W = 132, MAX_W = 190, LANE = 9;

  // columns assigns each node its column.
  function columns(nodes, edges) {
    const idx = new Map(nodes.map((n, i) => [n.name, i]));
    const preds = nodes.map(() => []);
    for (const e of edges) {
      if (idx.has(e.from) && idx.has(e.to)) preds[idx.get(e.to)].push(idx.get(e.from));
    }
    const col = nodes.map(() => -1);
    const visiting = new Set();
    function depth(i) {
      if (col[i] >= 0) return col[i];
      if (nodes[i].kind === "source" || visiting.has(i)) return 0;
      visiting.add(i);
      let d = 0;
      for (const p of preds[i]) if (nodes[p].kind !== "sink") d = Math.max(d, depth(p) + 1);
      visiting.delete(i);
      col[i] = d;
      return d;
    }
    nodes.forEach((n, i) => { if (n.kind !== "sink") col[i] = depth(i); });
    let sinkCol = 1;
    nodes.forEach((n, i) => { if (n.kind !== "sink") sinkCol = Math.max(sinkCol, col[i] + 1); });
    nodes.forEach((n, i) => {
      if (n.kind === "sink") col[i] = preds[i].some((p) => nodes[p].kind === "sink") ? sinkCol + 1 : sinkCol;
    });
    return { col, idx };
  }

  // chains turns every edge into a chain of items, one per column it
  // touches: its two nodes and a slot in each column between them. Items
  // 0..nodes-1 are the nodes; slots come after.
  function chains(nodes, edges, col, idx) {
    const itemCol = col.slice();
    const preds = nodes.map(() => []);
    const paths = [];
    for (const e of edges) {
      const u = idx.get(e.from), v = idx.get(e.to);
      if (u === undefined || v === undefined) continue;
      const path = [u];
      for (let c = col[u] + 1; c < col[v]; c++) {
        const s = itemCol.length;
        itemCol.push(c);
        preds.push([path[path.length - 1]]);
        path.push(s);
      }
      path.push(v);
      preds[v].push(path[path.length - 2]);
      paths.push({ e, path });
    }
    return { itemCol, preds, paths };
  }

  // order sorts each column's items by the mean position of their
  // predecessors, to keep edges from crossing where it can.
  function order(itemCol, preds) {
    const ncol = Math.max(...itemCol) + 1;
    const cols = Array.from({ length: ncol }, () => []);
    itemCol.forEach((c, i) => cols[c].push(i));
    const pos = new Array(itemCol.length).fill(0);
    cols.forEach((c) => c.forEach((i, k) => { pos[i] = k; }));
    for (let pass = 0; pass < 3; pass++) {
      for (let c = 1; c < ncol; c++) {
        const key = new Map(cols[c].map((i) => [i,
          preds[i].length ? preds[i].reduce((a, p) => a + pos[p], 0) / preds[i].length : pos[i]]));
        cols[c].sort((a, b) => key.get(a) - key.get(b) || a - b);
        cols[c].forEach((i, k) => { pos[i] = k; });
      }
    }
    return cols;
  }

  // across lays the columns out left to right, or returns null when the
  // window is too narrow for them.
  function across(nodes, cols, width) {
    const n = cols.length;
    const w = Math.min(MAX_W, Math.floor((width - 2 * PAD - (n - 1) * MIN_GAP) / n));
    if (w < MIN_W) return null;
    const gap = n > 1 ? Math.min(150, (width - 2 * PAD - n * w) / (n - 1)) : 0;
    const x0 = (width - (n * w + (n - 1) * gap)) / 2;
    const size = (i) => (i < nodes.length ? NODE_H : SLOT_H);
    const colH = cols.map((c) => c.reduce((a, i) => a + size(i), 0) + (c.length - 1) * VGAP);
    const height = Math.max(...colH) + 2 * PAD;
    const boxes = [];
    cols.forEach((c, ci) => {
      let y = (height - colH[ci]) / 2;
      for (const i of c) {
        boxes[i] = { x: x0 + ci * (w + gap), y, w, h: size(i) };
        y += size(i) + VGAP;
      }
    });
    return { boxes, width, height, gap, across: true };
  }

  // down lays the nodes out in one column, edges in lanes at their left.
  function down(nodes, cols, paths, width) {
    const rows = [];
    cols.forEach((c) => c.forEach((i) => { if (i < nodes.length) rows.push(i); }));
    const row = new Map(rows.map((i, r) => [i, r]));
    // Lanes: an edge holds its lane from its first row to its last; the
    // next edge takes the first lane free by then.
    const spans = paths.map((p) => ({ p, a: row.get(p.path[0]), b: row.get(p.path[p.path.length - 1]) }))
      .sort((x, y) => x.a - y.a || x.b - y.b);
    const laneEnd = [];
    for (const s of spans) {
      let l = laneEnd.findIndex((end) => end <= s.a);
      if (l < 0) { l = laneEnd.length; laneEnd.push(0); }
      laneEnd[l] = s.b;
      s.p.lane = l;
    }
    const x = PAD + laneEnd.length * LANE + 6;
    const w = Math.min(420, width - x - PAD);
    const boxes = [];
    let y = PAD + 14;
    for (const i of rows) {
      boxes[i] = { x, y, w, h: NODE_H };
      y += NODE_H + 24;
    }
    return { boxes, width, height: y - 24 + PAD, across: false };
  }

  function edgePath(L, p, ports) {
    const pts = p.path.map((i) => L.boxes[i]);
    const a = pts[0], b = pts[pts.length - 1];
    if (L.across) {
      const port = ports.get(p.e.from + "\u0000" + (p.e.output || ""));
      let x = a.x + a.w, y = port !== undefined ? a.y + port : a.y + a.h / 2;
      let d = `M${x},${y}`;
      const start = { x, y };
      const curve = (x2, y2) => {
        const c = Math.max(20, (x2 - x) / 2);
        d += ` C${x + c},${y} ${x2 - c},${y2} ${x2},${y2}`;
        x = x2; y = y2;
      };
      for (const s of pts.slice(1, -1)) {
        curve(s.x, s.y + s.h / 2);
        d += ` L${s.x + s.w},${y}`;
        x = s.x + s.w;
      }
      curve(b.x, b.y + b.h / 2);
      return { d, start };
    }
    const lx = PAD + p.lane * LANE + 2;
    const y1 = a.y + a.h * 0.7, y2 = b.y + b.h * 0.3;
    const d = `M${a.x},${y1} L${lx + 4},${y1} Q${lx},${y1} ${lx},${y1 + 4} L${lx},${y2 - 4} Q${lx},${y2} ${lx + 4},${y2} L${b.x},${y2}`;
    return { d, start: { x: a.x, y: y1 } };
  }

  function drawGraph(st) {
    const box = $("graph");
    const width = Math.max(220, Math.floor(box.clientWidth));
    const nodes = st.nodes;
    const { col, idx } = columns(nodes, st.edges);
    const { itemCol, preds, paths } = chains(nodes, st.edges, col, idx);
    const cols = order(itemCol, preds);
    const L = across(nodes, cols, width) || down(nodes, cols, paths, width);
    const root = svg("svg", { viewBox: `0 0 ${L.width} ${L.height}`, width: L.width, height: L.height, role: "img",
      "data-layout": L.across ? "across" : "down", "aria-label": "pipeline graph: " + nodes.map((n) => n.name).join(", ") });
    const defs = svg("defs");
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
    marker.appendChild(svg("path", { d: "M0,0 L10,5 L0,10 z" }));
    defs.appendChild(marker);
    root.appendChild(defs);

    // A route's edges leave from one port per output, spread along its
    // right side, where the output's name is written.
    // The ports are ordered by where their edges go, so they do not cross.
    const ports = new Map();
    nodes.forEach((n, i) => {
      if (!n.outputs || !L.across) return;
      const ys = new Map(n.outputs.map((o) => [o, []]));
      for (const p of paths) {
        if (p.e.from === n.name && ys.has(p.e.output)) {
          const next = L.boxes[p.path[1]];
          ys.get(p.e.output).push(next.y + next.h / 2);
        }
      }
      const mean = (o) => { const v = ys.get(o); return v.length ? v.reduce((a, y) => a + y, 0) / v.length : Infinity; };
      const sorted = n.outputs.slice().sort((a, b) => mean(a) - mean(b));
      sorted.forEach((o, k) => ports.set(n.name + "\u0000" + o, L.boxes[i].h * (k + 1) / (sorted.length + 1)));
    });
    const labels = new Map();  // across: one label per port
    const above = new Map();   // down: labels above the target node
    for (const p of paths) {
      const { d, start } = edgePath(L, p, ports);
      root.appendChild(svg("path", { d, class: p.e.dead_letter ? "edge dead" : "edge", "marker-end": "url(#arrow)",
        "data-from": p.e.from, "data-to": p.e.to }));
      const text = p.e.dead_letter ? "dead letter" : p.e.output || "";
      if (!text) continue;
      if (L.across) {
        labels.set(p.e.from + "\u0000" + text, { text, x: start.x + 4, y: start.y, from: p.e.from });
      } else {
        const t = p.path[p.path.length - 1];
        const list = above.get(t) || [];
        list.push(p.e.dead_letter ? "dead letters from " + p.e.from : "from " + p.e.from + "." + text);
        above.set(t, list);
      }
    }
    for (const lb of labels.values()) {
      const t = clip(lb.text, Math.max(4, Math.floor((L.gap - 14) / 6.2)));
      const w = t.length * 6.2 + 8;
      const g = svg("g", { class: "label", "data-from": lb.from });
      g.appendChild(svg("title", {}, lb.text));
      g.appendChild(svg("rect", { x: lb.x, y: lb.y - 8, width: w, height: 16, rx: 4 }));
      g.appendChild(svg("text", { x: lb.x + 4, y: lb.y + 4 }, t));
      root.appendChild(g);
    }
    for (const [t, list] of above) {
      const b = L.boxes[t];
      const g = svg("g", { class: "label", "data-to": nodes[t].name });
      g.appendChild(svg("text", { x: b.x + 2, y: b.y - 6 }, clip(list.join(", "), Math.floor(b.w / 6.2))));
      root.appendChild(g);
    }
    nodes.forEach((n, i) => root.appendChild(drawNode(n, L.boxes[i])));
    box.replaceChildren(root);
  }

  function drawNode(n, b) {
    const chars = Math.floor((b.w - 14) / 6.6);
    const g = svg("g", { class: "node", "data-name": n.name, "data-kind": n.kind, "data-state": n.state,
      transform: `translate(${b.x},${b.y})` });
    const tip = [n.name + " (" + n.kind + ", " + n.type + ")", stateText(n)];
    if (n.error) tip.push(n.error);
    g.appendChild(svg("title", {}, tip.join("\n")));
    g.appendChild(svg("rect", { width: b.w, height: b.h, rx: 8 }));
    g.appendChild(svg("text", { class: "name", x: 8, y: 17 }, clip(n.name, chars - 1)));
    g.appendChild(svg("text", { class: "sub", x: 8, y: 32 }, clip(n.kind + " · " + (n.type || "?"), chars + 2)));
    if (n.kind === "source") {
      g.appendChild(svg("text", { class: "flow", x: 8, y: 48 }, "read " + rate(n.out_per_sec) + "/s"));
    } else {
      g.appendChild(svg("text", { class: "flow", x: 8, y: 48 }, "in " + rate(n.in_per_sec) + "/s"));
      g.appendChild(svg("text", { class: "flow", x: b.w - 8, y: 48, "text-anchor": "end" }, "out " + rate(n.out_per_sec) + "/s"));
    }
    let word = STATE_WORDS[n.state] || n.state;
    if (n.consecutive_failures && n.state !== "ok") word += " (" + n.consecutive_failures + ")";
    if (n.waiting_on && n.waiting_on.length) word += ": waiting on " + n.waiting_on.join(", ");
    g.appendChild(svg("text", { class: "state", x: 8, y: 64 }, clip(word, chars)));
    const detail = [];
    if (n.since && n.state !== "ok") detail.push("since " + time(n.since));
    if (n.errors) detail.push(count(n.errors) + (n.errors === 1 ? " error" : " errors"));
    if (n.stalled_partitions) detail.push("holds " + n.stalled_partitions + " stalled");
    g.appendChild(svg("text", { class: "sub", x: 8, y: 79 }, clip(detail.join(" · "), chars + 2)));
    if (n.error) g.appendChild(svg("text", { class: "err", x: 8, y: 92 }, clip(n.error, chars + 3)));
    return g;
  }

  // ---- the components table ----
  function drawNodes(st) {
    const body = $("nodes").tBodies[0];
    const rows = st.nodes.map((n) => {
      const tr = el("tr", { "data-name": n.name, "data-state": n.state });
      const details = [];
      if (n.error) details.push(n.error);
      if (n.stalled_partitions) details.push("holds " + n.stalled_partitions + " stalled partition" + (n.stalled_partitions === 1 ? "" : "s") + ": " + n.holding.map((h) => h.partition + " (" + h.source + ")").join(", "));
      if (n.outputs) details.push("outputs: " + n.outputs.join(", "));
      if (n.dead_letter) details.push("dead letters to " + n.dead_letter);
      if (n.rejected) details.push(count(n.rejected) + " rejected");
      if (n.exactly_once) details.push("exactly once: " + count(n.already_held || 0) + " already held, not written again");
      const cells = [
        ["name", n.name, "name"], ["kind", n.kind + " · " + n.type],
        ["in/s", n.kind === "source" ? "" : rate(n.in_per_sec), "num"], ["out/s", rate(n.out_per_sec), "num"],
        ["in", n.kind === "source" ? "" : count(n.in), "num"], ["out", count(n.out), "num"],
        ["errors", count(n.errors), "num"], ["state", stateText(n), "state"], ["details", details.join("; "), "why"],
      ];
      for (const [label, text, cls] of cells) {
        if (cls === "why") tr.appendChild(wrapping(el("td", { "data-label": label, class: cls }), text));
        else tr.appendChild(el("td", { "data-label": label, class: cls, title: cls === "name" ? text : undefined }, text));
      }
      return tr;
    });
    body.replaceChildren(...rows);
  }

  // ---- partitions ----
  const PART_COLS = [
    { key: "name", label: "partition" },
    { key: "status", label: "status" },
    { key: "committed", label: "committed", num: true },
    { key: "watermark", label: "watermark", num: true },
    { key: "in_flight_batches", label: "in flight", num: true },
    { key: "stall_ms", label: "stalled for", num: true },
    { key: "lag", label: "lag", num: true },
    { key: "rewinds", label: "rewinds", num: true },
    { key: "why", label: "why", nosort: true },
  ];

  function partCell(p, c) {
    switch (c.key) {
      case "committed": case "watermark": case "in_flight_batches": case "rewinds": return count(p[c.key]);
      case "stall_ms": return dur(p.stall_ms) || "–";
      case "lag": return p.lag === undefined ? "–" : count(p.lag);
      case "why": {
        if (p.explanation) return p.explanation;
        return (p.held_by || []).length ? "held by " + p.held_by.join(", ") : "";
      }
      default: return String(p[c.key]);
    }
  }

  function sortParts(parts, s) {
    const k = s.key;
    const v = (p) => (k === "lag" ? (p.lag === undefined ? -1 : p.lag) : p[k]);
    return parts.slice().sort((a, b) => {
      const x = v(a), y = v(b);
      const r = typeof x === "number" ? x - y : String(x).localeCompare(String(y), "en", { numeric: true });
      return (s.desc ? -r : r) || a.name.localeCompare(b.name, "en", { numeric: true });
    });
  }

  function drawSource(src) {
    const s = sorts[src.name] || (sorts[src.name] = { key: "stall_ms", desc: true });
    const wrap = el("div", { class: "source", "data-source": src.name });
    wrap.appendChild(el("h3", {}, src.name));
    const sum = [count(src.partition_count) + (src.partition_count === 1 ? " partition" : " partitions"),
      count(src.stalled_count) + " stalled", count(src.in_flight_batches) + " batches in flight"];
    if (src.lag !== undefined) sum.push("lag " + count(src.lag));
    if (src.as_of) sum.push("as of " + time(src.as_of));
    wrap.appendChild(el("p", { class: "summary muted" }, sum.join(" · ")));
    if (src.failing) {
      wrap.appendChild(el("p", { class: "summary failing" }, "Cannot read: failing for " + dur(src.failing.failing_for_ms) +
        " (" + count(src.failing.attempts) + " attempts), retrying: " + src.failing.error));
    }
    if (src.partitions_omitted > 0) {
      wrap.appendChild(el("p", { class: "summary" }, "Showing the " + src.partitions.length + " most stalled or lagging of " +
        count(src.partition_count) + " partitions; api/v1/status?partitions=N lists more."));
    }
    if (!src.partitions.length) {
      wrap.appendChild(el("p", { class: "muted" }, src.partition_count ? "" : "no partitions assigned"));
      return wrap;
    }
    const sel = el("select", { "aria-label": "sort partitions by" });
    for (const c of PART_COLS) if (!c.nosort) {
      for (const desc of [false, true]) {
        const o = el("option", { value: c.key + (desc ? ":desc" : "") }, c.label + (desc ? " ▼" : " ▲"));
        if (s.key === c.key && s.desc === desc) o.selected = true;
        sel.appendChild(o);
      }
    }
    sel.addEventListener("change", () => {
      const [key, d] = sel.value.split(":");
      sorts[src.name] = { key, desc: d === "desc" };
      render();
    });
    const lab = el("label", { class: "sortby" }, "sort by ");
    lab.appendChild(sel);
    wrap.appendChild(lab);

    const table = el("table", { class: "cards parts" });
    const hr = el("tr");
    for (const c of PART_COLS) {
      const th = el("th", { class: c.num ? "num" : undefined });
      if (c.nosort) { th.textContent = c.label; hr.appendChild(th); continue; }
      if (s.key === c.key) th.setAttribute("aria-sort", s.desc ? "descending" : "ascending");
      const btn = el("button", { type: "button" }, c.label);
      btn.addEventListener("click", () => {
        const cur = sorts[src.name];
        sorts[src.name] = { key: c.key, desc: cur.key === c.key ? !cur.desc : !!c.num };
        render();
      });
      th.appendChild(btn);
      hr.appendChild(th);
    }
    table.appendChild(el("thead")).appendChild(hr);
    const tb = el("tbody");
    for (const p of sortParts(src.partitions, s)) {
      const tr = el("tr", { "data-partition": p.name, "data-status": p.status, class: p.stalled ? "stalled" : undefined });
      for (const c of PART_COLS) {
        const text = partCell(p, c);
        if (c.key === "why") tr.appendChild(wrapping(el("td", { "data-label": c.label, class: "why" }), text));
        else tr.appendChild(el("td", { "data-label": c.label, class: c.key === "name" ? "name" : c.num ? "num" : undefined,
          title: c.key === "name" ? text : undefined }, text));
      }
      tb.appendChild(tr);
    }
    table.appendChild(tb);
    wrap.appendChild(table);
    return wrap;
  }

  // ---- events ----
  const BAD_EVENTS = new Set(["rewind", "commit_failed", "sink_failing", "gave_up", "lost", "stopping"]);
  function drawEvents(st) {
    const items = st.events.map((e) => {
      const li = el("li", { "data-kind": e.kind });
      li.appendChild(el("time", { datetime: e.time }, time(e.time)));
      li.appendChild(el("span", { class: BAD_EVENTS.has(e.kind) ? "kind bad" : "kind" }, e.kind.replace(/_/g, " ")));
      const where = [e.source, e.sink].filter(Boolean);
      if (e.partitions && e.partitions.length) where.push(e.partitions.join(", ") + (e.count > e.partitions.length ? " …" : ""));
      if (where.length) li.appendChild(el("span", { class: "where" }, where.join(" · ")));
      if (e.count > 1) li.appendChild(el("span", { class: "muted" }, "×" + e.count));
      li.appendChild(wrapping(el("span", { class: "msg" }), e.message));
      return li;
    });
    $("events").replaceChildren(...items);
    $("no-events").hidden = items.length > 0;
  }

  // ---- the header and the connection ----
  function drawHeader() {
    const badge = $("run-state"), banner = $("banner"), ready = $("ready");
    let state = last ? last.state : "loading";
    const msgs = [];
    if (refusal) {
      msgs.push(refusal);
    } else if (downSince) {
      state = last && (last.state === "stopping" || last.state === "stopped") ? "stopped" : "not-answering";
      msgs.push(state === "stopped"
        ? "weir has stopped: no answer since " + new Date(downSince).toLocaleTimeString([], { hour12: false }) + ". The page shows the last state it received."
        : "weir is not answering since " + new Date(downSince).toLocaleTimeString([], { hour12: false }) + ": it has stopped, or the connection is lost. The page shows the last state it received and keeps trying.");
    }
    if (last && last.error) msgs.push("Stopping because: " + last.error);
    if (last && last.state === "stopped" && !downSince) msgs.push("The run has stopped.");
    badge.dataset.state = state;
    badge.textContent = state.replace("-", " ");
    if (last && !downSince) {
      ready.hidden = false;
      ready.dataset.state = last.ready ? "ready" : "not-ready";
      ready.textContent = last.ready ? "ready" : "not ready";
      ready.title = (last.reasons || []).map((r) => r.message).join("\n");
    } else {
      ready.hidden = true;
    }
    banner.hidden = msgs.length === 0;
    banner.textContent = msgs.join(" ");
    banner.className = downSince || (last && last.error) ? "banner" : "banner warn";
    const up = $("updated");
    if (last) {
      const ago = Math.max(0, Math.round((Date.now() - lastAt) / 1000));
      up.textContent = "last update " + time(last.server_time) + (ago >= 2 ? " (" + ago + "s ago)" : "");
      up.dataset.serverTime = last.server_time;
    }
    document.body.dataset.conn = downSince ? "down" : last ? "up" : "loading";
  }

  function render() {
    drawHeader();
    if (!last) return;
    drawGraph(last);
    drawNodes(last);
    $("sources").replaceChildren(...last.sources.map(drawSource));
    drawEvents(last);
  }

  async function poll() {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), TIMEOUT_MS);
    try {
      // Beyond loopback weir serves the status only with its token
      // (metrics.token_env): asked for once, kept for this tab only.
      const token = sessionStorage.getItem("weir-token");
      const headers = token ? { Authorization: "Bearer " + token } : {};
      const resp = await fetch(STATUS_URL, { cache: "no-store", signal: ctl.signal, headers });
      if (resp.status === 401 && !asked) {
        asked = true;
        const t = window.prompt("This weir asks for its metrics token (metrics.token_env) to show the status:");
        if (t) {
          sessionStorage.setItem("weir-token", t.trim());
          asked = false;
        }
      }
      if (resp.status === 401 || resp.status === 403) {
        refusal = (await resp.text()).trim();
        throw new Error("HTTP " + resp.status);
      }
      refusal = "";
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      const st = await resp.json();
      if (st.version !== 1) throw new Error("status version " + st.version + ", this page reads 1");
      last = st;
      lastAt = Date.now();
      downSince = 0;
      render();
    } catch (err) {
      if (!downSince) downSince = Date.now();
      drawHeader();
    } finally {
      clearTimeout(timer);
      setTimeout(poll, PERIOD_MS);
    }
  }

  // Under weir run -d the page is served at /pipelines/NAME/: it lists every
  // pipeline of the process with its state, from ../../api/v1/pipelines.
  const IN_FLEET = /\/pipelines\/[^\/]+\/$/.test(location.pathname);
  async function pollFleet() {
    try {
      const token = sessionStorage.getItem("weir-token");
      const headers = token ? { Authorization: "Bearer " + token } : {};
      const resp = await fetch("../../api/v1/pipelines", { cache: "no-store", headers });
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      const doc = await resp.json();
      const here = decodeURIComponent(location.pathname.split("/").slice(-2, -1)[0]);
      $("pipelines").replaceChildren(...(doc.pipelines || []).map((p) => {
        const li = el("li");
        li.appendChild(p.name === here ? el("strong", {}, p.name) : el("a", { href: "../" + encodeURIComponent(p.name) + "/" }, p.name));
        li.appendChild(el("span", { class: "badge", "data-state": p.state }, p.state));
        return li;
      }));
      $("fleet").hidden = false;
    } catch (err) {
      $("fleet").hidden = true;
    } finally {
      setTimeout(pollFleet, PERIOD_MS * 2);
    }
  }
  if (IN_FLEET) pollFleet();

  let resizeTimer = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { if (last) drawGraph(last); }, 100);
  });
  poll();
})();
