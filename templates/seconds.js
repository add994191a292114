/* pmuprof report: the per-second strip. Samples per second (the top finding's part in orange); dragging
   across it (or clicking one second) redraws the flame graph and the thread/state/statement tables for
   those seconds alone, from the (tree row, second) cells embedded in the report (FlameScope's idea).
   Under it, the capture host's wall clock (to line the strip up with Grafana / PMM); the chosen seconds
   are kept in the URL hash as "t=FIRST-LAST" (1-based, as the note says), so a link opens them again. */
"use strict";
var PMU_TICK_STEPS = [1, 5, 10, 30, 60, 300, 600, 1800, 3600];
var PMU_TICK_PX = 72;  /* the least room between two labels ("HH:MM:SS" is ~55 px) */

function pmuTwo(v) { return (v < 10 ? "0" : "") + v; }

/* HH:MM:SS of epoch seconds at a UTC offset (seconds): the capture host's clock, whatever the viewer's zone. */
function pmuClockText(epoch, offset) {
  var d = new Date(Math.floor(epoch + offset) * 1000);
  return pmuTwo(d.getUTCHours()) + ":" + pmuTwo(d.getUTCMinutes()) + ":" + pmuTwo(d.getUTCSeconds());
}

function pmuDateText(epoch, offset) {
  var d = new Date(Math.floor(epoch + offset) * 1000);
  return d.getUTCFullYear() + "-" + pmuTwo(d.getUTCMonth() + 1) + "-" + pmuTwo(d.getUTCDate());
}

function pmuOffsetText(offset) {
  var a = Math.abs(offset);
  return "UTC" + (offset < 0 ? "\u2212" : "+") + pmuTwo(Math.floor(a / 3600)) + ":" + pmuTwo(Math.floor(a % 3600 / 60));
}

/* Ticks on whole local seconds, every 1/5/10/30/60 s (or minutes on a long capture), as far apart as labels
   need: [{x: pixels from the strip's left edge, text: "HH:MM:SS"}]. */
function pmuTicks(clock, n, width) {
  var bw = width / n, step = PMU_TICK_STEPS[PMU_TICK_STEPS.length - 1];
  for (var k = 0; k < PMU_TICK_STEPS.length; k++) if (PMU_TICK_STEPS[k] * bw >= PMU_TICK_PX) { step = PMU_TICK_STEPS[k]; break; }
  var local0 = clock.t0 + clock.offset, out = [];
  for (var t = Math.ceil(local0 / step) * step; t <= local0 + n; t += step) {
    out.push({ x: (t - local0) * bw, text: pmuClockText(t - clock.offset, clock.offset) });
  }
  return out;
}

/* Seconds [a, b] (0-based offsets) a hash asks for with "t=A-B" or "t=A" (1-based), clamped; or null. */
function pmuHashRange(hash, n) {
  var m = /^(\d{1,7})(?:-(\d{1,7}))?$/.exec(pmuHashValue(hash, "t") || "");
  if (!m) return null;
  var a = +m[1], b = m[2] ? +m[2] : a;
  if (a > b) { var c = a; a = b; b = c; }
  if (b < 1 || a > n) return null;
  return [Math.max(a, 1) - 1, Math.min(b, n) - 1];
}

/* The report's flame tree with only the cells of seconds [a, b] (offsets from data.first) as values. */
function pmuRangeFlame(p, cells, a, b) {
  var m = p.name.length, val = new Float64Array(m), parent = new Int32Array(m), path = [], total = 0;
  for (var k = 0; k < cells.n.length; k++) {
    var s = cells.sec[k];
    if (s >= a && s <= b) { val[cells.node[k]] += cells.n[k]; total += cells.n[k]; }
  }
  for (var i = 0; i < m; i++) { var d = p.depth[i]; parent[i] = d > 0 ? path[d - 1] : -1; path[d] = i; }
  for (var j = m - 1; j >= 0; j--) if (parent[j] >= 0) val[parent[j]] += val[j];
  return { names: p.names, kinds: p.kinds, name: p.name, depth: p.depth, values: [Array.from(val)], totals: [total],
    pruned: p.pruned, min_share: p.min_share, elided: [0], elided_leafless: [0],
    elided_self: { name: [], values: [[]], nested: [[]] } };
}

/* Self samples per function of a laid-out base tree (the synthetic root and process labels left out). */
function pmuSelfByName(t) {
  var by = new Map();
  for (var i = 1; i < t.n; i++) {
    var k = t.kinds[t.name[i]], v = t.own[0][i];
    if (k === 3 || k === 5 || !v) continue;
    var nm = t.names[t.name[i]];
    by.set(nm, (by.get(nm) || 0) + v);
  }
  return Array.from(by.entries()).sort(function (x, y) { return y[1] - x[1] || (x[0] < y[0] ? -1 : 1); });
}

/* A series value in words: shares as %, others with their unit ("4 tasks", "1,234 /s"). */
function pmuAmount(v, unit) {
  if (v === null || v === undefined) return "not measured";
  if (unit === "share") return (100 * v).toFixed(1) + " %";
  var text = Math.abs(v) >= 100 ? Math.round(v).toLocaleString("en-US") : String(Math.round(v * 100) / 100);
  return unit ? text + " " + unit : text;
}

function PmuSeconds(box, data, threads, flame) {
  this.box = box; this.d = data; this.threads = threads; this.flame = flame;
  this.canvas = box.querySelector(".sec-canvas"); this.tip = box.querySelector(".sec-tip");
  this.rows = Array.prototype.slice.call(box.querySelectorAll(".sec-row-canvas"));
  this.full = flame ? flame.data : null; this.range = null; this.drag = null;
  var self = this;
  [this.canvas].concat(this.rows).forEach(function (c) {
    c.addEventListener("mousedown", function (e) { self.drag = [self.secAt(e), self.secAt(e)]; self.draw(); e.preventDefault(); });
    c.addEventListener("mousemove", function (e) {
      var s = self.secAt(e);
      if (self.drag) { self.drag[1] = s; self.draw(); }
      self.showTip(e, s);
    });
    c.addEventListener("mouseleave", function () { self.tip.style.display = "none"; });
  });
  window.addEventListener("mouseup", function () {
    if (!self.drag) return;
    var a = Math.min(self.drag[0], self.drag[1]), b = Math.max(self.drag[0], self.drag[1]);
    self.drag = null;
    self.select(a, b);
  });
  box.querySelector(".sec-all").addEventListener("click", function () { self.select(null); });
  window.addEventListener("resize", function () { self.draw(); });
  window.addEventListener("hashchange", function () { self.fromUrl(); });
  window.addEventListener("popstate", function () { self.fromUrl(); });
  this.clockNote();
  var first = pmuHashRange(location.hash, data.n.length);
  if (first) { this.select(first[0], first[1], true); box.scrollIntoView(); } else this.select(null, null, true);
}

/* A hash typed or pasted into the address bar, or back/forward: choose the seconds it names. */
PmuSeconds.prototype.fromUrl = function () {
  var r = pmuHashRange(location.hash, this.d.n.length), cur = this.range;
  if (r && (!cur || r[0] !== cur[0] || r[1] !== cur[1])) this.select(r[0], r[1], true);
  else if (!r && cur) this.select(null, null, true);
};

/* The chosen seconds into the URL hash (replacing this history entry: a drag is no page to go back to). */
PmuSeconds.prototype.toUrl = function () {
  var r = this.range, h = pmuHashWith(location.hash, "t", r ? (r[0] + 1) + "-" + (r[1] + 1) : "");
  if (h !== (location.hash.length > 1 ? location.hash : "")) history.replaceState(null, "", h || location.pathname + location.search);
};

/* The wall-clock caption: the host's time of the strip's first second, its UTC offset and zone. */
PmuSeconds.prototype.clockNote = function () {
  var c = this.d.clock, el = this.box.querySelector(".sec-clock");
  if (!el) return;
  if (!c) { el.textContent = "No wall-clock time in this input: seconds are counted from the first sample."; return; }
  el.textContent = (c.exact ? "Host time" : "About the host time") + " (" + pmuOffsetText(c.offset) + (c.zone ? ", " + c.zone : "") +
    "): second 1 starts at " + pmuClockText(c.t0, c.offset) + " on " + pmuDateText(c.t0, c.offset) +
    (c.exact ? "." : " (from the run's start time: no clock reference was recorded, so perf's first second may come a few seconds later).");
};

/* Tick labels under the canvas at the host's whole seconds. */
PmuSeconds.prototype.drawAxis = function (w) {
  var axis = this.box.querySelector(".sec-axis"), c = this.d.clock;
  if (!axis || !c || this.axisWidth === w) return;  /* drawn for this width already (draw runs on every drag move) */
  this.axisWidth = w;
  axis.textContent = "";
  pmuTicks(c, this.d.n.length, w).forEach(function (t) {
    if (t.x > w - 56) return;  /* a label that would be cut at the right edge */
    var span = document.createElement("span");
    span.className = "sec-tick";
    span.style.left = t.x.toFixed(1) + "px";
    span.textContent = t.text;
    axis.appendChild(span);
  });
};

PmuSeconds.prototype.secAt = function (e) {
  var r = (e.currentTarget || this.canvas).getBoundingClientRect(), n = this.d.n.length;
  return Math.max(0, Math.min(n - 1, Math.floor((e.clientX - r.left) / Math.max(r.width, 1) * n)));
};

PmuSeconds.prototype.showTip = function (e, s) {
  var n = this.d.n[s], top = this.d.top ? this.d.top[s] : null, c = this.d.clock;
  this.tip.textContent = "second " + (s + 1) + " of " + this.d.n.length +
    (c ? " (" + pmuClockText(c.t0 + s, c.offset) + ")" : "") + ": " + n + " samples" +
    (top !== null ? ", top finding " + pmuPct(top, n) : "") +
    (this.d.series || []).map(function (r) { return "; " + r.name + " " + pmuAmount(r.values[s], r.unit); }).join("");
  this.tip.style.display = "block";
  this.tip.style.left = (e.offsetX + 12) + "px";
};

/* One series under the strip: a bar per measured second, scaled to its highest value (a share to 100 %). */
PmuSeconds.prototype.drawSeries = function (c, r, sel) {
  var w = c.clientWidth || 800, h = c.height, ctx = c.getContext("2d"), n = r.values.length, bw = w / n;
  c.width = w;
  ctx.clearRect(0, 0, w, h);
  var max = r.unit === "share" ? 1 : Math.max.apply(null, r.values.map(function (v) { return v || 0; }).concat([1e-9]));
  if (sel) {
    var a = Math.min(sel[0], sel[1]), b = Math.max(sel[0], sel[1]);
    ctx.fillStyle = "rgba(80,140,220,0.18)";
    ctx.fillRect(a * bw, 0, (b - a + 1) * bw, h);
  }
  ctx.fillStyle = "hsl(150,35%,45%)";
  for (var s = 0; s < n; s++) {
    var v = r.values[s];
    if (v === null || v === undefined) continue;
    var bh = Math.max(1, Math.min(1, v / max) * (h - 14));
    ctx.fillRect(s * bw + 0.5, h - bh, Math.max(bw - 1, 1), bh);
  }
};

PmuSeconds.prototype.draw = function () {
  var c = this.canvas, w = c.clientWidth || 800, h = c.height, ctx = c.getContext("2d"), d = this.d, n = d.n.length;
  c.width = w;
  var max = Math.max.apply(null, d.n.concat([1])), bw = w / n, sel = this.drag || this.range;
  ctx.clearRect(0, 0, w, h);
  this.drawAxis(w);
  if (sel) {
    ctx.fillStyle = "rgba(80,140,220,0.18)";
    var a = Math.min(sel[0], sel[1]), b = Math.max(sel[0], sel[1]);
    ctx.fillRect(a * bw, 0, (b - a + 1) * bw, h);
  }
  for (var s = 0; s < n; s++) {
    var x = s * bw, bh = d.n[s] / max * (h - 4), th = d.top ? d.top[s] / max * (h - 4) : 0;
    ctx.fillStyle = "hsl(210,12%,62%)";
    ctx.fillRect(x + 0.5, h - bh, Math.max(bw - 1, 1), bh);
    ctx.fillStyle = "hsl(28,88%,55%)";
    ctx.fillRect(x + 0.5, h - th, Math.max(bw - 1, 1), th);
  }
  var self = this;
  this.rows.forEach(function (row, i) { if (d.series && d.series[i]) self.drawSeries(row, d.series[i], sel); });
};

/* Show seconds [a, b] (offsets), or all of them (a === null); fromUrl: the hash named them, leave it be. */
PmuSeconds.prototype.select = function (a, b, fromUrl) {
  var d = this.d, n = d.n.length, all = a === null;
  if (all) { a = 0; b = n - 1; }
  this.range = all ? null : [a, b];
  var total = 0, top = 0;
  for (var s = a; s <= b; s++) { total += d.n[s]; top += d.top ? d.top[s] : 0; }
  if (this.flame && d.cells) this.flame.setData(all ? this.full : pmuRangeFlame(this.full, d.cells, a, b));
  this.box.setAttribute("data-range", all ? "" : (a + 1) + "-" + (b + 1));
  this.box.setAttribute("data-samples", String(total));
  this.box.querySelector(".sec-note").textContent = (all ? "all " + n + " seconds" : "seconds " + (a + 1) + "\u2013" + (b + 1) + " of " + n) +
    ": " + total + " samples" + (d.top ? "; top finding " + pmuPct(top, total) + " of them" : "");
  this.tables(all ? null : [a + d.first, b + d.first]);
  this.topTable();
  this.draw();
  if (!fromUrl) this.toUrl();
};

/* The tables' samples and shares for the chosen seconds (absolute), or as written (null). */
PmuSeconds.prototype.tables = function (r) {
  var self = this;
  (this.threads ? this.threads.tables : []).forEach(function (t) {
    var table = document.querySelector("table.sec-table[data-table='" + t.name + "']");
    if (!table) return;
    var sums = t.rows.map(function () { return 0; }), total = 0;
    if (r) t.cells.forEach(function (c) { if (c[1] >= r[0] && c[1] <= r[1]) { sums[c[0]] += c[2]; total += c[2]; } });
    Array.prototype.forEach.call(table.querySelectorAll("tbody tr"), function (tr) {
      var i = +tr.getAttribute("data-row"), row = t.rows[i];
      var v = r ? sums[i] : row.samples, share = r ? (total ? v / total : 0) : row.share;
      var cn = tr.querySelector(".sec-n"), cs = tr.querySelector(".sec-share");
      cn.textContent = v.toLocaleString("en-US"); cn.setAttribute("data-v", String(v));
      cs.textContent = (100 * share).toFixed(1) + " %"; cs.setAttribute("data-v", String(share));
    });
    table.setAttribute("data-range", r ? (r[0] - self.d.first + 1) + "-" + (r[1] - self.d.first + 1) : "");
  });
};

PmuSeconds.prototype.topTable = function () {
  var body = this.box.querySelector("table.sec-top tbody");
  if (!this.flame) return;
  var rows = pmuSelfByName(this.flame.base).slice(0, 15), all = this.flame.all;
  body.textContent = "";
  rows.forEach(function (r) {
    var tr = document.createElement("tr");
    [r[0], String(r[1]), pmuPct(r[1], all)].forEach(function (text, k) {
      var td = document.createElement("td");
      td.textContent = text;
      if (k) td.className = "num";
      tr.appendChild(td);
    });
    body.appendChild(tr);
  });
};
