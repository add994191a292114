/* pmuprof flame graph, part 5: the controls. Views (icicle, inverted, sandwich), zoom, search, the
   frame menu, "Copy stack", and the state kept in the URL hash (back/forward restore it). */
"use strict";
function PmuFlame(box, data, diff) {
  var q = function (sel) { return box.querySelector(sel); };
  var canvas = q("canvas"), tip = q(".flame-tip"), crumb = q(".flame-crumb"), search = q("input[type=search]");
  var matchedOut = q(".matched"), menu = q(".flame-menu"), copyBox = q(".flame-copy");
  var painter = new PmuCanvas(canvas), base = pmuBaseTree(data, diff), all = base.w[0];
  var inverted = null, sandwich = null, st = pmuDefaultState(), panes = [], rows = 1;
  var hover = null, menuHit = null, hitName = null, lastDraw = 0;

  function side(p) { return panes[p] ? panes[p].side : ""; }
  function nameOf(pane, i) { return i === 0 && pane.side !== "icicle" && pane.side !== "inverted" ? st.focus : pane.t.names[pane.t.name[i]]; }
  function topSelf() {
    var t = inverted || (inverted = pmuInverted(base)), best = -1;
    for (var i = 1; i < t.n; i = t.end[i]) if (t.kinds[t.name[i]] < 3 && (best < 0 || t.w[i] > t.w[best])) best = i;
    return best < 0 ? "" : t.names[t.name[best]];
  }
  function rootLabel(pane) {
    if (pane.side === "icicle" || pane.side === "inverted") return "all (" + pmuLabel(base, all) + ")";
    var self = diff ? 0 : sandwich.self[0];
    return st.focus + ": total " + pmuLabel(base, pane.t.w[0]) + " (" + pmuPct(pane.t.w[0], all) + ")" +
      (diff ? "" : ", self " + pmuLabel(base, self) + " (" + pmuPct(self, all) + ")");
  }
  function build() {
    panes = [];
    if (st.view === "sandwich") {
      if (!st.focus) st.focus = topSelf();
      if (!sandwich || sandwich.fn !== st.focus) sandwich = pmuSandwich(base, st.focus);
      if (!sandwich) { rows = 1; st.zoom = []; return; }
      var up = sandwich.callers, down = sandwich.callees, at = st.zoom[0];
      panes.push({ t: up, dir: -1, row0: up.maxDepth, zoom: at === "callers" ? pmuFind(up, st.zoom.slice(1)) : 0, side: "callers", skipRoot: true });
      panes.push({ t: down, dir: 1, row0: up.maxDepth, zoom: at === "callees" ? pmuFind(down, st.zoom.slice(1)) : 0, side: "callees" });
      rows = up.maxDepth + down.maxDepth + 1;
      var z = panes[at === "callers" ? 0 : 1];
      st.zoom = z.zoom ? [z.side].concat(pmuPath(z.t, z.zoom)) : [];
      return;
    }
    var t = st.view === "inverted" ? (inverted || (inverted = pmuInverted(base))) : base;
    panes.push({ t: t, dir: 1, row0: 0, zoom: pmuFind(t, st.zoom), side: st.view });
    rows = t.maxDepth + 1;
    st.zoom = pmuPath(t, panes[0].zoom);
  }
  function zoomedPane() { for (var p = 0; p < panes.length; p++) if (panes[p].zoom) return panes[p]; return null; }
  function describeState() {
    var z = zoomedPane(), text = "";
    if (st.view === "sandwich") {
      text = sandwich ? "Sandwich: callers of " + st.focus + " above it, callees below it. "
        : "Sandwich: \u201c" + st.focus + "\u201d is not in this flame graph. ";
    }
    if (z) {
      var back = z.side === "callers" || z.side === "inverted";
      text += "zoom: " + (st.view === "sandwich" ? z.side + ": " : "") + pmuPath(z.t, z.zoom).join(back ? " \u2190 " : " \u2192 ");
    } else {
      text += "Click a frame to zoom; double-click one for its callers and callees; right-click for more; Esc or Reset to zoom out.";
    }
    crumb.textContent = text;
    hitName = pmuSearchNames(base.names, st.search);
    if (!hitName) { matchedOut.textContent = ""; return; }
    var parts = panes.map(function (pane) {
      var m = pmuMatched(pane.t, hitName, pane.zoom), of = pane.t.w[0];
      var head = st.view === "sandwich" ? pane.side + " matched " : "matched ";
      return head + pmuPct(m[0], of) + (pane.zoom ? " of all, " + pmuPct(m[1], pane.t.w[pane.zoom]) + " of zoom" :
        st.view === "sandwich" ? " of " + st.focus : " of samples");
    });
    matchedOut.textContent = parts.join("; ");
  }
  function draw() {
    var t0 = performance.now();
    var shown = panes.length ? painter.draw(panes, { rows: rows, hover: hover, hitName: hitName, rootLabel: rootLabel }) : 0;
    lastDraw = performance.now() - t0;
    box.setAttribute("data-drawn", String(shown));  /* frames on screen: tests read it */
  }
  /* Show a state; how: "push" or "replace" a history entry, or "none" (it came from the URL). */
  function apply(next, how) {
    st = { view: next.view, focus: next.focus, search: next.search, zoom: next.zoom.slice() };
    if (search.value !== st.search) search.value = st.search;
    build(); describeState();
    Array.prototype.forEach.call(box.querySelectorAll("button[data-view]"), function (b) {
      b.setAttribute("aria-pressed", String(b.getAttribute("data-view") === st.view));
    });
    box.setAttribute("data-view", st.view);
    box.setAttribute("data-focus", st.view === "sandwich" ? st.focus : "");
    box.setAttribute("data-zoom", st.zoom.length ? st.zoom[st.zoom.length - 1] : "");
    hover = null; tip.style.display = "none"; draw();
    var h = pmuHashOf(st);
    if (how !== "none" && h !== (location.hash.length > 1 ? location.hash : "")) {
      history[how === "push" ? "pushState" : "replaceState"](null, "", h || location.pathname + location.search);
    }
  }
  function change(fields, how) {
    var next = { view: st.view, focus: st.focus, search: st.search, zoom: st.zoom };
    for (var k in fields) if (Object.prototype.hasOwnProperty.call(fields, k)) next[k] = fields[k];
    apply(next, how || "push");
  }
  function zoomTo(hit) {
    var pane = panes[hit.pane], path = pmuPath(pane.t, hit.i);
    change({ zoom: st.view === "sandwich" && path.length ? [pane.side].concat(path) : path });
  }
  function openSandwich(fn) { change({ view: "sandwich", focus: fn, zoom: [] }); }
  function copyStack(hit) {
    var pane = panes[hit.pane], text = pmuStackText(pane.t, hit.i, pane.side, st.focus);
    copyBox.hidden = false;
    pmuCopy(q(".flame-copy textarea"), text, function (how) {
      q(".flame-copy .note").textContent = how === "clipboard" ? "Copied to the clipboard (" + text.split("\n").length + " frames, outermost caller first)."
        : "The browser did not allow the clipboard here: the stack is selected, press Ctrl+C to copy it.";
      box.setAttribute("data-copied", how);
    });
  }
  function hitAt(ev) {
    var rect = canvas.getBoundingClientRect(), mx = ev.clientX - rect.left, my = ev.clientY - rect.top;
    var hit = painter.at(mx, my);
    if (hit) { hit.mx = mx; hit.my = my; }
    return hit;
  }
  function showTip(ev) {
    var hit = hitAt(ev);
    if ((hit ? hit.pane + ":" + hit.i : "") !== (hover ? hover.pane + ":" + hover.i : "")) { hover = hit; draw(); }
    if (!hit || !menu.hidden) { tip.style.display = "none"; return; }
    var pane = panes[hit.pane], title = hit.i === 0 ? rootLabel(pane) : nameOf(pane, hit.i);
    pmuShowLines(tip, pmuDescribe(pane, hit.i, all, title, st.focus));
    tip.style.display = "block";
    var left = hit.mx + 14, wrap = canvas.parentNode.clientWidth;
    if (left + 360 > wrap) left = Math.max(0, hit.mx - 374);
    tip.style.left = left + "px"; tip.style.top = (hit.my + 16) + "px";
  }
  function openMenu(ev) {
    var hit = hitAt(ev);
    if (!hit || (hit.i === 0 && st.view !== "sandwich")) return;
    ev.preventDefault();
    menuHit = hit; tip.style.display = "none";
    q(".flame-menu .title").textContent = nameOf(panes[hit.pane], hit.i);
    menu.hidden = false;
    menu.style.left = Math.min(hit.mx, Math.max(0, canvas.parentNode.clientWidth - 260)) + "px";
    menu.style.top = (hit.my + 4) + "px";
  }
  function menuAction(act) {
    var hit = menuHit, pane = panes[hit.pane], fn = nameOf(pane, hit.i);
    menu.hidden = true;
    if (act === "sandwich") openSandwich(fn);
    else if (act === "zoom") zoomTo(hit);
    else if (act === "copy") copyStack(hit);
    else if (act === "search") change({ search: "^" + pmuEscapeRegex(fn) + "$" });
  }
  canvas.addEventListener("mousemove", showTip);
  canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; if (hover) { hover = null; draw(); } });
  canvas.addEventListener("click", function (ev) { var hit = hitAt(ev); menu.hidden = true; if (hit) zoomTo(hit); });
  canvas.addEventListener("dblclick", function (ev) {
    var hit = hitAt(ev);
    if (hit && (hit.i > 0 || st.view === "sandwich")) openSandwich(nameOf(panes[hit.pane], hit.i));
  });
  canvas.addEventListener("contextmenu", openMenu);
  Array.prototype.forEach.call(menu.querySelectorAll("button[data-act]"), function (b) {
    b.addEventListener("click", function () { menuAction(b.getAttribute("data-act")); });
  });
  Array.prototype.forEach.call(box.querySelectorAll("button[data-view]"), function (b) {
    b.addEventListener("click", function () {
      var v = b.getAttribute("data-view"), z = zoomedPane();
      var fn = v === "sandwich" && z && st.view !== "sandwich" ? nameOf(z, z.zoom) : st.focus;
      change({ view: v, focus: v === "sandwich" ? fn : st.focus, zoom: [] });
    });
  });
  q("button.reset").addEventListener("click", function () { change({ zoom: [], search: "" }); });
  q("button.copy").addEventListener("click", function () {
    var z = zoomedPane();
    if (z) copyStack({ pane: panes.indexOf(z), i: z.zoom });
    else { copyBox.hidden = false; q(".flame-copy .note").textContent = "Click a frame first: Copy stack copies the stack of the zoomed frame (or right-click any frame)."; }
  });
  q(".flame-copy button").addEventListener("click", function () { copyBox.hidden = true; });
  search.addEventListener("input", function () { change({ search: search.value }, "replace"); });
  document.addEventListener("click", function (ev) { if (!menu.contains(ev.target) && ev.target !== canvas) menu.hidden = true; });
  document.addEventListener("keydown", function (ev) {
    var typing = ev.target && /^(INPUT|TEXTAREA)$/.test(ev.target.tagName);
    if (ev.key === "Escape") {
      if (!menu.hidden || !copyBox.hidden) { menu.hidden = true; copyBox.hidden = true; }
      else if (st.zoom.length) change({ zoom: [] });
    } else if (!typing && hover && (ev.key === "c" || ev.key === "s")) {
      if (ev.key === "c") copyStack(hover); else openSandwich(nameOf(panes[hover.pane], hover.i));
    }
  });
  function fromUrl() {
    var next = pmuParseHash(location.hash);
    if (next && pmuHashOf(next) !== pmuHashOf(st)) apply(next, "none");
  }
  window.addEventListener("hashchange", fromUrl);
  window.addEventListener("popstate", fromUrl);
  window.addEventListener("resize", draw);
  var first = pmuParseHash(location.hash);
  apply(first || pmuDefaultState(), "none");
  if (first && location.hash.length > 1) box.scrollIntoView();
  return {
    focus: function (fn) { openSandwich(fn); box.scrollIntoView(); },
    search: function (text) { change({ search: text }, "replace"); },
    view: function (v) { change({ view: v, zoom: [] }); },
    draw: function () { draw(); return lastDraw; },
    /* For tests and automation: viewport centre of the first drawn frame named fn (on a sandwich side). */
    locate: function (fn, onSide) {
      for (var r = 0; r < painter.hits.length; r++) {
        for (var list = painter.hits[r], k = 0; k < list.length; k += 4) {
          var pane = panes[list[k + 2]];
          if (nameOf(pane, list[k + 3]) !== fn || (onSide && pane.side !== onSide)) continue;
          var y = canvas.getBoundingClientRect().top + (r + 0.5) * PMU_ROW;
          if (y < 80 || y > window.innerHeight - 20) window.scrollBy(0, y - window.innerHeight / 2);
          var rect = canvas.getBoundingClientRect();
          return { x: rect.left + list[k] + list[k + 1] / 2, y: rect.top + (r + 0.5) * PMU_ROW };
        }
      }
      return null;
    },
    state: function () { return { view: st.view, focus: st.focus, search: st.search, zoom: st.zoom.slice() }; }
  };
}
