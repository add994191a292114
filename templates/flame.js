/* pmuprof flame graph, part 5: the controls. Views (icicle, inverted, sandwich), zoom, search, the
   frame menu, "Copy stack", and the state kept in the URL hash (back/forward restore it). */
"use strict";
var PMU_HELP = "Click a frame to zoom; double-click one for its callers and callees; right-click for more; Esc or Reset to zoom out.";

function PmuFlame(box, data, diff) {
  this.box = box; this.diff = diff;
  this.canvas = this.q("canvas"); this.tip = this.q(".flame-tip"); this.menu = this.q(".flame-menu");
  this.search = this.q("input[type=search]"); this.copyBox = this.q(".flame-copy");
  this.painter = new PmuCanvas(this.canvas);
  this.data = data; this.base = pmuBaseTree(data, diff); this.all = this.base.w[0];
  this.inverted = null; this.sandwich = null; this.st = pmuDefaultState();
  this.panes = []; this.rows = 1; this.hover = null; this.menuHit = null; this.hitName = null; this.lastDraw = 0;
  this.bind();
  var first = pmuParseHash(location.hash);
  this.apply(first || pmuDefaultState(), "none");
  if (first && location.hash.length > 1) box.scrollIntoView();
}

PmuFlame.prototype.q = function (sel) { return this.box.querySelector(sel); };

/* Draw other values on the same tree (the per-second strip's seconds); the view, zoom and search stay. */
PmuFlame.prototype.setData = function (data) {
  this.base = pmuBaseTree(data, this.diff); this.all = this.base.w[0];
  this.inverted = null; this.sandwich = null;
  this.box.setAttribute("data-total", String(this.all));
  this.apply(this.st, "none");
};

/* The function a frame stands for: a sandwich's root is its function, the icicle's is "all". */
PmuFlame.prototype.nameOf = function (pane, i) {
  return i === 0 && (pane.side === "callers" || pane.side === "callees") ? this.st.focus : pane.t.names[pane.t.name[i]];
};

PmuFlame.prototype.invertedTree = function () {
  return this.inverted || (this.inverted = pmuInverted(this.base));
};

/* The function with the most self samples: where a sandwich opens when none was chosen. */
PmuFlame.prototype.topSelf = function () {
  var t = this.invertedTree(), best = -1;
  for (var i = 1; i < t.n; i = t.end[i]) if (t.kinds[t.name[i]] < 3 && (best < 0 || t.w[i] > t.w[best])) best = i;
  return best < 0 ? "" : t.names[t.name[best]];
};

PmuFlame.prototype.rootLabel = function (pane) {
  var base = this.base, w = pane.t.w[0];
  if (pane.side === "icicle" || pane.side === "inverted") return "all (" + pmuLabel(base, this.all) + ")";
  var self = this.diff ? "" : ", self " + pmuLabel(base, this.sandwich.self[0]) + " (" + pmuPct(this.sandwich.self[0], this.all) + ")";
  return this.st.focus + ": total " + pmuLabel(base, w) + " (" + pmuPct(w, this.all) + ")" + self;
};

/* Panes for the state; the zoom path is resolved as far as it goes and written back. */
PmuFlame.prototype.build = function () {
  var st = this.st;
  this.panes = [];
  if (st.view !== "sandwich") {
    var t = st.view === "inverted" ? this.invertedTree() : this.base;
    this.panes.push({ t: t, dir: 1, row0: 0, zoom: pmuFind(t, st.zoom), side: st.view });
    this.rows = t.maxDepth + 1;
    st.zoom = pmuPath(t, this.panes[0].zoom);
    return;
  }
  if (!st.focus) st.focus = this.topSelf();
  if (!this.sandwich || this.sandwich.fn !== st.focus) this.sandwich = pmuSandwich(this.base, st.focus);
  if (!this.sandwich) { this.rows = 1; st.zoom = []; return; }
  var up = this.sandwich.callers, down = this.sandwich.callees, at = st.zoom[0], rest = st.zoom.slice(1);
  this.panes.push({ t: up, dir: -1, row0: up.maxDepth, zoom: at === "callers" ? pmuFind(up, rest) : 0, side: "callers", skipRoot: true });
  this.panes.push({ t: down, dir: 1, row0: up.maxDepth, zoom: at === "callees" ? pmuFind(down, rest) : 0, side: "callees" });
  this.rows = up.maxDepth + down.maxDepth + 1;
  var z = this.zoomedPane();
  st.zoom = z ? [z.side].concat(pmuPath(z.t, z.zoom)) : [];
};

PmuFlame.prototype.zoomedPane = function () {
  for (var p = 0; p < this.panes.length; p++) if (this.panes[p].zoom) return this.panes[p];
  return null;
};

/* The line under the toolbar (view, zoom path or help) and the matched share of the search. */
PmuFlame.prototype.describeState = function () {
  var st = this.st, z = this.zoomedPane(), text = "";
  if (st.view === "sandwich") {
    text = this.sandwich ? "Sandwich: callers of " + st.focus + " above it, callees below it. "
      : "Sandwich: \u201c" + st.focus + "\u201d is not in this flame graph. ";
  }
  if (z) {
    var back = z.side === "callers" || z.side === "inverted";
    text += "zoom: " + (st.view === "sandwich" ? z.side + ": " : "") + pmuPath(z.t, z.zoom).join(back ? " \u2190 " : " \u2192 ");
  } else {
    text += PMU_HELP;
  }
  this.q(".flame-crumb").textContent = text;
  this.hitName = pmuSearchNames(this.base.names, st.search);
  var hitName = this.hitName, sandwich = st.view === "sandwich";
  this.q(".matched").textContent = !hitName ? "" : this.panes.map(function (pane) {
    var m = pmuMatched(pane.t, hitName, pane.zoom, sandwich);
    return (sandwich ? pane.side + " matched " : "matched ") + pmuPct(m[0], pane.t.w[0]) +
      (pane.zoom ? " of all, " + pmuPct(m[1], pane.t.w[pane.zoom]) + " of zoom" : sandwich ? " of " + st.focus : " of samples");
  }).join("; ");
};

PmuFlame.prototype.draw = function () {
  var t0 = performance.now(), self = this;
  var shown = this.panes.length ? this.painter.draw(this.panes, {
    rows: this.rows, hover: this.hover, hitName: this.hitName, rootLabel: function (pane) { return self.rootLabel(pane); }
  }) : 0;
  this.lastDraw = performance.now() - t0;
  this.box.setAttribute("data-drawn", String(shown));  /* frames on screen: tests read it */
  return this.lastDraw;
};

/* Show a state; how: "push" or "replace" a history entry, or "none" (it came from the URL). */
PmuFlame.prototype.apply = function (next, how) {
  var st = this.st = { view: next.view, focus: next.focus, search: next.search, zoom: next.zoom.slice() }, box = this.box;
  if (this.search.value !== st.search) this.search.value = st.search;
  this.build();
  this.describeState();
  Array.prototype.forEach.call(box.querySelectorAll("button[data-view]"), function (b) {
    b.setAttribute("aria-pressed", String(b.getAttribute("data-view") === st.view));
  });
  box.setAttribute("data-view", st.view);
  box.setAttribute("data-focus", st.view === "sandwich" ? st.focus : "");
  box.setAttribute("data-zoom", st.zoom.length ? st.zoom[st.zoom.length - 1] : "");
  this.hover = null; this.tip.style.display = "none";
  this.draw();
  var h = pmuHashOf(st), other = pmuOtherParts(location.hash);  /* the seconds strip's part stays */
  if (other) h = h ? h + other : "#" + other.slice(1);
  if (how !== "none" && h !== (location.hash.length > 1 ? location.hash : "")) {
    history[how === "push" ? "pushState" : "replaceState"](null, "", h || location.pathname + location.search);
  }
};

PmuFlame.prototype.change = function (fields, how) {
  var st = this.st, next = { view: st.view, focus: st.focus, search: st.search, zoom: st.zoom };
  for (var k in fields) if (Object.prototype.hasOwnProperty.call(fields, k)) next[k] = fields[k];
  this.apply(next, how || "push");
};

PmuFlame.prototype.zoomTo = function (hit) {
  var pane = this.panes[hit.pane], path = pmuPath(pane.t, hit.i);
  this.change({ zoom: this.st.view === "sandwich" && path.length ? [pane.side].concat(path) : path });
};

PmuFlame.prototype.openSandwich = function (fn) { this.change({ view: "sandwich", focus: fn, zoom: [] }); };

PmuFlame.prototype.copyStack = function (hit) {
  var pane = this.panes[hit.pane], text = pmuStackText(pane.t, hit.i, pane.side, this.st.focus), self = this;
  this.copyBox.hidden = false;
  pmuCopy(this.q(".flame-copy textarea"), text, function (how) {
    self.q(".flame-copy .note").textContent = how === "clipboard"
      ? "Copied to the clipboard (" + text.split("\n").length + " frames, outermost caller first)."
      : "The browser did not allow the clipboard here: the stack is selected, press Ctrl+C to copy it.";
    self.box.setAttribute("data-copied", how);
  });
};

/* The toolbar's Copy stack: the zoomed frame's stack (click = zoom = select). */
PmuFlame.prototype.copySelected = function () {
  var z = this.zoomedPane();
  if (z) return this.copyStack({ pane: this.panes.indexOf(z), i: z.zoom });
  this.copyBox.hidden = false;
  this.q(".flame-copy .note").textContent = "Click a frame first: Copy stack copies the zoomed frame's stack (or right-click any frame).";
};

PmuFlame.prototype.hitAt = function (ev) {
  var rect = this.canvas.getBoundingClientRect(), mx = ev.clientX - rect.left, my = ev.clientY - rect.top;
  var hit = this.painter.at(mx, my);
  if (hit) { hit.mx = mx; hit.my = my; }
  return hit;
};

PmuFlame.prototype.showTip = function (ev) {
  var hit = this.hitAt(ev), tip = this.tip, key = function (h) { return h ? h.pane + ":" + h.i : ""; };
  if (key(hit) !== key(this.hover)) { this.hover = hit; this.draw(); }
  if (!hit || !this.menu.hidden) { tip.style.display = "none"; return; }
  var pane = this.panes[hit.pane], title = hit.i === 0 ? this.rootLabel(pane) : this.nameOf(pane, hit.i);
  pmuShowLines(tip, pmuDescribe(pane, hit.i, this.all, title, this.st.focus));
  tip.style.display = "block";
  var left = hit.mx + 14, wrap = this.canvas.parentNode.clientWidth;
  if (left + 360 > wrap) left = Math.max(0, hit.mx - 374);
  tip.style.left = left + "px"; tip.style.top = (hit.my + 16) + "px";
};

PmuFlame.prototype.openMenu = function (ev) {
  var hit = this.hitAt(ev), menu = this.menu;
  if (!hit || (hit.i === 0 && this.st.view !== "sandwich")) return;
  ev.preventDefault();
  this.menuHit = hit; this.tip.style.display = "none";
  this.q(".flame-menu .title").textContent = this.nameOf(this.panes[hit.pane], hit.i);
  menu.hidden = false;
  menu.style.left = Math.min(hit.mx, Math.max(0, this.canvas.parentNode.clientWidth - 260)) + "px";
  menu.style.top = (hit.my + 4) + "px";
};

PmuFlame.prototype.menuAction = function (act) {
  var hit = this.menuHit, fn = this.nameOf(this.panes[hit.pane], hit.i);
  this.menu.hidden = true;
  if (act === "sandwich") this.openSandwich(fn);
  else if (act === "zoom") this.zoomTo(hit);
  else if (act === "copy") this.copyStack(hit);
  else if (act === "search") this.change({ search: "^" + pmuEscapeRegex(fn) + "$" });
};

PmuFlame.prototype.viewButton = function (v) {
  var z = this.zoomedPane(), st = this.st;
  var fn = v === "sandwich" && z && st.view !== "sandwich" ? this.nameOf(z, z.zoom) : st.focus;
  this.change({ view: v, focus: fn, zoom: [] });
};

PmuFlame.prototype.onKey = function (ev) {
  var typing = ev.target && /^(INPUT|TEXTAREA)$/.test(ev.target.tagName);
  if (ev.key === "Escape") {
    if (!this.menu.hidden || !this.copyBox.hidden) { this.menu.hidden = true; this.copyBox.hidden = true; }
    else if (this.st.zoom.length) this.change({ zoom: [] });
  } else if (!typing && this.hover && ev.key === "c") {
    this.copyStack(this.hover);
  } else if (!typing && this.hover && ev.key === "s") {
    this.openSandwich(this.nameOf(this.panes[this.hover.pane], this.hover.i));
  }
};

PmuFlame.prototype.fromUrl = function () {
  var next = pmuParseHash(location.hash);
  if (next && pmuHashOf(next) !== pmuHashOf(this.st)) this.apply(next, "none");
};
