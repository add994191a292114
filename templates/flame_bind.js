/* pmuprof flame graph, part 6: wiring the controls to the page's events, and the small API that
   report.js (table rows) and the browser tests use. */
"use strict";
PmuFlame.prototype.bind = function () {
  var self = this, canvas = this.canvas, each = function (sel, fn) { Array.prototype.forEach.call(self.box.querySelectorAll(sel), fn); };
  canvas.addEventListener("mousemove", function (ev) { self.showTip(ev); });
  canvas.addEventListener("mouseleave", function () {
    self.tip.style.display = "none";
    if (self.hover) { self.hover = null; self.draw(); }
  });
  canvas.addEventListener("click", function (ev) {
    var hit = self.hitAt(ev);
    self.menu.hidden = true;
    if (hit) self.zoomTo(hit);
  });
  canvas.addEventListener("dblclick", function (ev) {
    var hit = self.hitAt(ev);
    if (hit && (hit.i > 0 || self.st.view === "sandwich")) self.openSandwich(self.nameOf(self.panes[hit.pane], hit.i));
  });
  canvas.addEventListener("contextmenu", function (ev) { self.openMenu(ev); });
  each(".flame-menu button[data-act]", function (b) {
    b.addEventListener("click", function () { self.menuAction(b.getAttribute("data-act")); });
  });
  each("button[data-view]", function (b) {
    b.addEventListener("click", function () { self.viewButton(b.getAttribute("data-view")); });
  });
  this.q("button.reset").addEventListener("click", function () { self.change({ zoom: [], search: "" }); });
  this.q("button.copy").addEventListener("click", function () { self.copySelected(); });
  this.q(".flame-copy button").addEventListener("click", function () { self.copyBox.hidden = true; });
  this.search.addEventListener("input", function () { self.change({ search: self.search.value }, "replace"); });
  document.addEventListener("click", function (ev) {
    if (!self.menu.contains(ev.target) && ev.target !== canvas) self.menu.hidden = true;
  });
  document.addEventListener("keydown", function (ev) { self.onKey(ev); });
  window.addEventListener("hashchange", function () { self.fromUrl(); });
  window.addEventListener("popstate", function () { self.fromUrl(); });
  window.addEventListener("resize", function () { self.draw(); });
};

/* Open a function's sandwich and bring the graph into view (top-functions rows). */
PmuFlame.prototype.focus = function (fn) {
  this.openSandwich(fn);
  this.box.scrollIntoView();
};

PmuFlame.prototype.state = function () {
  var st = this.st;
  return { view: st.view, focus: st.focus, search: st.search, zoom: st.zoom.slice() };
};

/* For tests and automation: viewport centre of the first drawn frame named fn (on a sandwich side). */
PmuFlame.prototype.locate = function (fn, onSide) {
  var hits = this.painter.hits, canvas = this.canvas;
  for (var r = 0; r < hits.length; r++) {
    for (var list = hits[r], k = 0; k < list.length; k += 4) {
      var pane = this.panes[list[k + 2]];
      if (this.nameOf(pane, list[k + 3]) !== fn || (onSide && pane.side !== onSide)) continue;
      var y = canvas.getBoundingClientRect().top + (r + 0.5) * PMU_ROW;
      if (y < 80 || y > window.innerHeight - 20) window.scrollBy(0, y - window.innerHeight / 2);
      var rect = canvas.getBoundingClientRect();
      return { x: rect.left + list[k] + list[k + 1] / 2, y: rect.top + (r + 0.5) * PMU_ROW };
    }
  }
  return null;
};
