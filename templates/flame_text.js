/* pmuprof flame graph, part 4: words about frames (tooltips, labels, the copied stack) and the
   clipboard. Everything built here is plain text, set with textContent or a textarea's value. */
"use strict";

function pmuPct(v, of) { return of ? (100 * v / of).toFixed(2) + " %" : "0 %"; }

function pmuLabel(base, v) {
  return base.diff ? (100 * v).toFixed(2) + " % avg" : Math.round(v).toLocaleString("en-US") + " samples";
}

/* A node's own (self) weight, in the units of its width. */
function pmuOwnWeight(t, i) {
  if (!t.base.diff) return t.own[0][i];
  var tb = t.base.totals[0], ta = t.base.totals[1];
  return ((tb ? t.own[0][i] / tb : 0) + (ta ? t.own[1][i] / ta : 0)) / 2;
}

/* Stack text, outermost caller first, one frame per line. side: "icicle", "inverted", "callers", "callees". */
function pmuStackText(t, i, side, fn) {
  var names = pmuPath(t, i);
  if (side === "callers" || side === "callees") names.unshift(fn);
  if (side === "callers" || side === "inverted") names.reverse();
  return names.join("\n");
}

function pmuDiffLines(t, i) {
  var tb = t.base.totals[0], ta = t.base.totals[1], b = t.cols[0][i], a = t.cols[1][i];
  var bs = tb ? b / tb : 0, as = ta ? a / ta : 0, dl = 100 * (as - bs);
  return ["before: " + (100 * bs).toFixed(2) + " % (" + b + " samples)",
    "after: " + (100 * as).toFixed(2) + " % (" + a + " samples)",
    "delta: " + (dl >= 0 ? "+" : "") + dl.toFixed(2) + " percentage points"];
}

/* Tooltip lines for node i of pane (first line: the frame's name). all: the weight of every sample. */
function pmuDescribe(pane, i, all, title, fn) {
  var t = pane.t, base = t.base, lines = [title];
  if (base.diff) return lines.concat(pmuDiffLines(t, i));
  var zoomed = pane.zoom > 0 && i !== pane.zoom;
  lines.push(pmuLabel(base, t.w[i]) + ", " + pmuPct(t.w[i], all) + " of all" +
    (zoomed ? ", " + pmuPct(t.w[i], t.w[pane.zoom]) + " of zoom" : ""));
  if (i === 0) return lines;
  var own = pmuOwnWeight(t, i);
  if (pane.side === "icicle") lines.push("self: " + pmuLabel(base, own) + " (" + pmuPct(own, all) + ")");
  if (pane.side === "inverted") {
    lines.push(t.depth[i] === 1 ? "self time: the samples that ended in this function"
      : "samples whose stack ends " + pmuPath(t, i).reverse().join(" \u2192 "));
  }
  if (pane.side === "callers") lines.push("of " + fn + "'s samples: " + pmuPct(t.w[i], t.w[0]) + " come through here");
  if (pane.side === "callees") lines.push("of " + fn + "'s samples: " + pmuPct(t.w[i], t.w[0]) + " are in here");
  return lines;
}

function pmuShowLines(el, lines) {
  el.textContent = "";
  var bold = document.createElement("b");
  bold.textContent = lines[0];
  el.appendChild(bold);
  for (var k = 1; k < lines.length; k++) {
    el.appendChild(document.createElement("br"));
    el.appendChild(document.createTextNode(lines[k]));
  }
}

/* Put text on the clipboard where the browser allows it; the text also stays selected in a textarea,
   so it can be copied by hand where it does not. done(how): "clipboard" or "textarea". */
function pmuCopy(area, text, done) {
  area.value = text;
  area.focus();
  area.select();
  var fallback = function () {
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    done(ok ? "clipboard" : "textarea");
  };
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(text).then(function () { done("clipboard"); }, fallback);
  } else {
    fallback();
  }
}
