/* pmuprof flame graph: a canvas icicle over preorder arrays (name, depth, values). Hand-written, no libraries. */
"use strict";
function PmuFlame(box, tree, mode) {
  var ROW = 18, n = tree.name.length, diff = mode === "diff";
  var canvas = box.querySelector("canvas"), tip = box.querySelector(".flame-tip");
  var crumb = box.querySelector(".flame-crumb"), search = box.querySelector("input[type=search]");
  var matchedOut = box.querySelector(".matched");
  var w = new Float64Array(n), x = new Float64Array(n), parent = new Int32Array(n), depth = new Int32Array(n);
  var totals = tree.totals, maxDepth = 0, rootW = 0, maxDelta = 0;
  var cursor = [0], path = [];
  for (var i = 0; i < n; i++) {
    var d = tree.depth[i] + 1;  /* row 0 is the synthetic "all" frame */
    depth[i] = d;
    if (diff) {
      var b = totals[0] ? tree.values[0][i] / totals[0] : 0, a = totals[1] ? tree.values[1][i] / totals[1] : 0;
      w[i] = (a + b) / 2;
      if (d > 1) maxDelta = Math.max(maxDelta, Math.abs(a - b));
    } else {
      w[i] = tree.values[0][i];
    }
    if (cursor[d] === undefined) cursor[d] = 0;
    x[i] = cursor[d];
    cursor[d] += w[i];
    cursor[d + 1] = x[i];
    path[d] = i;
    parent[i] = d > 1 ? path[d - 1] : -1;
    if (d === 1) rootW += w[i];
    if (d > maxDepth) maxDepth = d;
  }
  var zoom = -1, matches = null, hover = -1, drawn = [];
  var inPath = new Uint8Array(n);

  function hash(s) {
    var h = 2166136261;
    for (var k = 0; k < s.length && k < 40; k++) { h ^= s.charCodeAt(k); h = Math.imul(h, 16777619); }
    return (h >>> 0) / 4294967296;
  }
  function colour(i) {
    var name = tree.names[tree.name[i]], kind = tree.kinds[tree.name[i]], r = hash(name);
    if (matches && matches[i]) return "#d05ce3";
    if (diff) {
      var b = totals[0] ? tree.values[0][i] / totals[0] : 0, a = totals[1] ? tree.values[1][i] / totals[1] : 0;
      var t = maxDelta ? Math.min(1, Math.abs(a - b) / maxDelta) : 0, l = Math.round(96 - 46 * Math.sqrt(t));
      if (kind === 3) return "hsl(270,25%,80%)";
      return a >= b ? "hsl(0,85%," + l + "%)" : "hsl(215,85%," + l + "%)";
    }
    if (kind === 1) return "hsl(" + Math.round(185 + 25 * r) + ",55%," + Math.round(62 + 10 * r) + "%)";
    if (kind === 2) return "hsl(0,0%," + Math.round(72 + 8 * r) + "%)";
    if (kind === 3) return "hsl(270,30%,78%)";
    return "hsl(" + Math.round(8 + 42 * r) + ",88%," + Math.round(58 + 8 * r) + "%)";
  }
  function pct(v, of) { return of ? (100 * v / of).toFixed(2) + " %" : "0 %"; }
  function range() { return zoom < 0 ? [0, rootW] : [x[zoom], x[zoom] + w[zoom]]; }

  function draw() {
    var css = canvas.parentNode.clientWidth || 1000, dpr = window.devicePixelRatio || 1;
    var height = (maxDepth + 1) * ROW + 2;
    canvas.style.height = height + "px";
    canvas.width = Math.round(css * dpr); canvas.height = Math.round(height * dpr);
    var ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, css, height);
    ctx.font = "12px ui-monospace, DejaVu Sans Mono, monospace";
    ctx.textBaseline = "middle";
    var rg = range(), scale = css / ((rg[1] - rg[0]) || 1), zd = zoom < 0 ? 0 : depth[zoom];
    var shown = 0;
    drawn = [];
    for (var r = 0; r <= maxDepth; r++) drawn.push([]);
    box1(ctx, 0, 0, css, "all (" + label(rootW) + ")", zoom < 0 ? "hsl(270,20%,86%)" : "hsl(0,0%,88%)", -1);
    for (var i = 0; i < n; i++) {
      var d = depth[i], px, pw;
      if (d <= zd) {
        if (!inPath[i]) continue;
        px = 0; pw = css;
      } else {
        if (x[i] + w[i] <= rg[0] || x[i] >= rg[1]) continue;
        px = (x[i] - rg[0]) * scale; pw = w[i] * scale;
        if (pw < 0.4) continue;
      }
      box1(ctx, px, d * ROW, pw, tree.names[tree.name[i]], colour(i), i);
      shown++;
    }
    box.setAttribute("data-drawn", String(shown));  /* frames on screen: tests read it */
  }
  function label(v) { return diff ? (100 * v).toFixed(2) + " % avg" : Math.round(v).toLocaleString("en-US") + " samples"; }
  function box1(ctx, px, py, pw, text, fill, i) {
    ctx.fillStyle = fill;
    ctx.fillRect(px, py, Math.max(pw - 0.5, 0.5), ROW - 1);
    if (i === hover) { ctx.strokeStyle = "#000"; ctx.strokeRect(px + 0.5, py + 0.5, Math.max(pw - 1.5, 0.5), ROW - 2); }
    drawn[py / ROW].push([px, pw, i]);
    if (pw > 28) {
      var chars = Math.floor((pw - 6) / 7.3);
      ctx.fillStyle = "#1b1b1b";
      ctx.fillText(text.length > chars ? text.slice(0, Math.max(chars - 1, 1)) + "\u2026" : text, px + 3, py + ROW / 2);
    }
  }
  function at(ev) {
    var rect = canvas.getBoundingClientRect(), mx = ev.clientX - rect.left, row = Math.floor((ev.clientY - rect.top) / ROW);
    var list = drawn[row] || [];
    for (var k = 0; k < list.length; k++) if (mx >= list[k][0] && mx < list[k][0] + list[k][1]) return { i: list[k][2], mx: mx, my: ev.clientY - rect.top };
    return null;
  }
  function describe(i) {
    if (i < 0) return "all: " + label(rootW);
    var name = tree.names[tree.name[i]], kids = 0;
    for (var k = i + 1; k < n && depth[k] > depth[i]; k++) if (depth[k] === depth[i] + 1) kids += w[k];
    if (diff) {
      var b = tree.values[0][i], a = tree.values[1][i], bs = totals[0] ? b / totals[0] : 0, as = totals[1] ? a / totals[1] : 0;
      var dl = 100 * (as - bs);
      return [name, "before: " + (100 * bs).toFixed(2) + " % (" + b + " samples)",
        "after: " + (100 * as).toFixed(2) + " % (" + a + " samples)",
        "delta: " + (dl >= 0 ? "+" : "") + dl.toFixed(2) + " percentage points"];
    }
    var rg = range();
    return [name, label(w[i]) + ", " + pct(w[i], rootW) + " of all" + (zoom >= 0 ? ", " + pct(w[i], rg[1] - rg[0]) + " of zoom" : ""),
      "self: " + label(w[i] - kids) + " (" + pct(w[i] - kids, rootW) + ")"];
  }
  function showTip(ev) {
    var hit = at(ev);
    var next = hit ? hit.i : -2;
    if (next !== hover) { hover = next; draw(); }
    if (!hit || hit.i < 0) { tip.style.display = "none"; return; }
    var lines = describe(hit.i);
    tip.textContent = "";
    var bold = document.createElement("b"); bold.textContent = lines[0]; tip.appendChild(bold);
    for (var k = 1; k < lines.length; k++) { tip.appendChild(document.createElement("br")); tip.appendChild(document.createTextNode(lines[k])); }
    tip.style.display = "block";
    var left = hit.mx + 14, wrap = canvas.parentNode.clientWidth;
    if (left + 360 > wrap) left = Math.max(0, hit.mx - 374);
    tip.style.left = left + "px"; tip.style.top = (hit.my + 16) + "px";
  }
  function setZoom(i) {
    zoom = i; inPath.fill(0);
    for (var k = i; k >= 0; k = parent[k]) inPath[k] = 1;
    var names = [];
    for (k = i; k >= 0; k = parent[k]) names.unshift(tree.names[tree.name[k]]);
    crumb.textContent = i < 0 ? "Click a frame to zoom; Esc or Reset to zoom out." : "zoom: " + names.join(" \u2192 ");
    doSearch(); draw();
  }
  function doSearch() {
    var q = search.value;
    if (!q) { matches = null; matchedOut.textContent = ""; return; }
    var re;
    try { re = new RegExp(q, "i"); } catch (e) { re = { test: function (s) { return s.toLowerCase().indexOf(q.toLowerCase()) >= 0; } }; }
    var hitName = new Uint8Array(tree.names.length);
    for (var k = 0; k < tree.names.length; k++) hitName[k] = re.test(tree.names[k]) ? 1 : 0;
    matches = new Uint8Array(n);
    var sum = 0, inside = 1e9, rg = range(), zsum = 0;
    for (var i = 0; i < n; i++) {
      if (depth[i] <= inside) inside = 1e9;
      if (!hitName[tree.name[i]]) continue;
      matches[i] = 1;
      if (inside < 1e9) continue;
      inside = depth[i];
      sum += w[i];
      if (zoom < 0 || (x[i] >= rg[0] && x[i] < rg[1] && depth[i] > depth[zoom])) zsum += w[i];
      else if (zoom >= 0 && inPath[i]) zsum += rg[1] - rg[0];
    }
    matchedOut.textContent = "matched " + pct(sum, rootW) + (zoom >= 0 ? " of all, " + pct(Math.min(zsum, rg[1] - rg[0]), rg[1] - rg[0]) + " of zoom" : " of samples");
  }
  canvas.addEventListener("mousemove", showTip);
  canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; if (hover !== -2) { hover = -2; draw(); } });
  canvas.addEventListener("click", function (ev) { var hit = at(ev); if (hit) setZoom(hit.i); });
  box.querySelector("button.reset").addEventListener("click", function () { search.value = ""; setZoom(-1); });
  search.addEventListener("input", function () { doSearch(); draw(); });
  document.addEventListener("keydown", function (ev) { if (ev.key === "Escape") setZoom(-1); });
  window.addEventListener("resize", draw);
  var initial = /^#search=(.+)$/.exec(window.location.hash || "");
  if (initial) search.value = decodeURIComponent(initial[1]);
  setZoom(-1);
  return { zoom: setZoom, search: function (q) { search.value = q; doSearch(); draw(); } };
}

function pmuSortable(table) {
  var heads = table.querySelectorAll("th.sortable");
  Array.prototype.forEach.call(heads, function (th) {
    th.addEventListener("click", function () {
      var col = th.cellIndex, body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var desc = th.getAttribute("data-dir") !== "desc";
      th.setAttribute("data-dir", desc ? "desc" : "asc");
      rows.sort(function (a, b) {
        var va = a.cells[col].getAttribute("data-v"), vb = b.cells[col].getAttribute("data-v");
        var na = parseFloat(va), nb = parseFloat(vb), c;
        c = (!isNaN(na) && !isNaN(nb)) ? na - nb : String(va).localeCompare(String(vb));
        return desc ? -c : c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
}

function pmuStart() {
  var data = JSON.parse(document.getElementById("pmuprof-data").textContent);
  var box = document.getElementById("flame");
  if (box && data.flame) window.pmuFlame = PmuFlame(box, data.flame, data.kind === "diff" ? "diff" : "profile");
  Array.prototype.forEach.call(document.querySelectorAll("table.sort"), pmuSortable);
}
document.addEventListener("DOMContentLoaded", pmuStart);
