/* pmuprof report: sortable tables, table rows and verdict links that open the flame graph, start-up. */
"use strict";
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

/* A row with data-fn opens that function's sandwich (callers and callees) in the flame graph. */
function pmuFocusRows(flame) {
  Array.prototype.forEach.call(document.querySelectorAll("tr[data-fn]"), function (tr) {
    tr.addEventListener("click", function (ev) {
      if (window.getSelection && String(window.getSelection()).length) return;  /* selecting text, not clicking */
      ev.preventDefault();
      flame.focus(tr.getAttribute("data-fn"));
    });
  });
}

/* The verdict's "open in the flame graph" links: apply the view their hash names and bring the graph into view. */
function pmuFlameLinks(flame) {
  Array.prototype.forEach.call(document.querySelectorAll("a.open-flame"), function (a) {
    a.addEventListener("click", function (ev) {
      var st = pmuParseHash(a.getAttribute("href"));
      if (!st) return;
      ev.preventDefault();
      flame.apply(st, "push");
      flame.box.scrollIntoView();
    });
  });
}

function pmuStart() {
  var data = JSON.parse(document.getElementById("pmuprof-data").textContent);
  var box = document.getElementById("flame");
  if (box && data.flame) {
    window.pmuFlame = new PmuFlame(box, data.flame, data.kind === "diff");
    pmuFocusRows(window.pmuFlame);
    pmuFlameLinks(window.pmuFlame);
  }
  var strip = document.getElementById("sec-strip");
  if (strip && data.seconds) window.pmuSeconds = new PmuSeconds(strip, data.seconds, data.threads, window.pmuFlame || null);
  Array.prototype.forEach.call(document.querySelectorAll("table.sort"), pmuSortable);
}
document.addEventListener("DOMContentLoaded", pmuStart);
