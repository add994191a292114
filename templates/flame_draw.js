/* pmuprof flame graph, part 2: drawing. Panes (a laid-out tree, a direction, a zoomed node) on one
   canvas. A frame narrower than PMU_MIN_PX is skipped with its whole subtree, so a redraw costs what
   is visible, not the size of the tree. Names are only ever drawn as canvas text. */
"use strict";
var PMU_ROW = 18, PMU_MIN_PX = 0.4, PMU_MATCH = "#d05ce3";

function pmuHash(s) {
  var h = 2166136261;
  for (var k = 0; k < s.length && k < 40; k++) { h ^= s.charCodeAt(k); h = Math.imul(h, 16777619); }
  return (h >>> 0) / 4294967296;
}

function pmuKindColour(kind, name) {
  var r = pmuHash(name);
  if (kind === 1) return "hsl(" + Math.round(185 + 25 * r) + ",55%," + Math.round(62 + 10 * r) + "%)";
  if (kind === 2) return "hsl(0,0%," + Math.round(72 + 8 * r) + "%)";
  if (kind === 3) return "hsl(270,30%,78%)";
  if (kind === 4) return "hsl(45,20%,88%)";
  if (kind === PMU_KIND_ROOT) return "hsl(270,20%,86%)";
  if (name.slice(-4) === "_[i]") return "hsl(" + Math.round(75 + 20 * r) + ",60%," + Math.round(56 + 10 * r) + "%)";  /* inlined call */
  return "hsl(" + Math.round(8 + 42 * r) + ",88%," + Math.round(58 + 8 * r) + "%)";
}

/* Red grew, blue shrank: the deeper the colour, the bigger the change in the frame's share. */
function pmuDiffColour(t, i) {
  var kind = t.kinds[t.name[i]], tb = t.base.totals[0], ta = t.base.totals[1];
  if (kind >= 3) return pmuKindColour(kind, "");
  var b = tb ? t.cols[0][i] / tb : 0, a = ta ? t.cols[1][i] / ta : 0;
  var s = t.maxDelta ? Math.min(1, Math.abs(a - b) / t.maxDelta) : 0, l = Math.round(96 - 46 * Math.sqrt(s));
  return a >= b ? "hsl(0,85%," + l + "%)" : "hsl(215,85%," + l + "%)";
}

function pmuColour(t, i) {
  if (t.base.diff) {
    if (!t.colour) t.colour = new Array(t.n);
    return t.colour[i] || (t.colour[i] = pmuDiffColour(t, i));
  }
  var base = t.base, k = t.name[i];
  if (!base.colour) base.colour = new Array(base.names.length);
  return base.colour[k] || (base.colour[k] = pmuKindColour(base.kinds[k], base.names[k]));
}

function PmuCanvas(canvas) {
  this.canvas = canvas;
  this.hits = [];  /* per row: flat [left, width, pane, node, ...] of what was drawn */
  this.size = "";
}

/* opts: rows, hover {pane, i} or null, hitName (Uint8Array over names) or null, rootLabel(pane). */
PmuCanvas.prototype.draw = function (panes, opts) {
  var canvas = this.canvas, css = canvas.parentNode.clientWidth || 1000, dpr = window.devicePixelRatio || 1;
  var height = opts.rows * PMU_ROW + 2, size = css + "x" + height + "x" + dpr;
  if (size !== this.size) {
    this.size = size;
    canvas.style.height = height + "px";
    canvas.width = Math.round(css * dpr); canvas.height = Math.round(height * dpr);
  }
  var ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, css, height);
  ctx.font = "12px ui-monospace, DejaVu Sans Mono, monospace";
  ctx.textBaseline = "middle";
  this.ctx = ctx; this.charW = ctx.measureText("abcdefghij").width / 10 || 7.3;
  this.hits = [];
  for (var r = 0; r < opts.rows; r++) this.hits.push([]);
  var shown = 0;
  for (var p = 0; p < panes.length; p++) shown += this.pane(panes[p], p, css, opts);
  return shown;
};

PmuCanvas.prototype.pane = function (pane, p, css, opts) {
  var t = pane.t, z = pane.zoom, left = t.x[z], scale = css / (t.w[z] || 1), shown = 0;
  for (var k = z; k >= 0; k = t.parent[k]) {  /* the zoomed frame and its callers span the width */
    if (k === 0 && pane.skipRoot) continue;
    this.box(pane, p, k, 0, css, opts); shown++;
  }
  for (var i = z + 1, end = t.end[z]; i < end;) {
    var pw = t.w[i] * scale;
    if (pw < PMU_MIN_PX) { i = t.end[i]; continue; }
    this.box(pane, p, i, (t.x[i] - left) * scale, pw, opts); shown++;
    i++;
  }
  return shown;
};

PmuCanvas.prototype.box = function (pane, p, i, px, pw, opts) {
  var t = pane.t, ctx = this.ctx, row = pane.row0 + pane.dir * t.depth[i], py = row * PMU_ROW;
  var hov = opts.hover && opts.hover.pane === p && opts.hover.i === i;
  var named = i > 0 || pane.side === "callees";  /* a sandwich's root is its function; the icicle's is "all" */
  ctx.fillStyle = opts.hitName && named && opts.hitName[t.name[i]] ? PMU_MATCH : pmuColour(t, i);
  ctx.fillRect(px, py, Math.max(pw - 0.5, 0.5), PMU_ROW - 1);
  if (hov) { ctx.strokeStyle = "#000"; ctx.strokeRect(px + 0.5, py + 0.5, Math.max(pw - 1.5, 0.5), PMU_ROW - 2); }
  this.hits[row].push(px, pw, p, i);
  if (pw > 28) {
    var text = i === 0 ? opts.rootLabel(pane) : t.names[t.name[i]], chars = Math.floor((pw - 6) / this.charW);
    ctx.fillStyle = "#1b1b1b";
    ctx.fillText(text.length > chars ? text.slice(0, Math.max(chars - 1, 1)) + "\u2026" : text, px + 3, py + PMU_ROW / 2);
  }
};

/* The frame drawn at canvas coordinates (mx, my): {pane, i} or null. */
PmuCanvas.prototype.at = function (mx, my) {
  var list = this.hits[Math.floor(my / PMU_ROW)] || [];
  for (var k = 0; k < list.length; k += 4) if (mx >= list[k] && mx < list[k] + list[k + 1]) return { pane: list[k + 2], i: list[k + 3] };
  return null;
};
