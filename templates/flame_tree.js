/* pmuprof flame graph, part 1: the trees. The embedded preorder arrays (name index, depth, value
   columns) laid out for drawing, and the merged views built from them: inverted (stacks merged by
   their leaf) and sandwich (one function's callers and callees). Hand-written, no libraries. */
"use strict";
var PMU_KIND_ROOT = 5;  /* the synthetic "all" frame; kinds 0-4 come from pmuprof/report/flame.py */

/* Node 0 is the root. Adds parent, subtree end, own (self) values, weight w and left edge x. */
function pmuLayout(base, name, depth, cols) {
  var n = name.length, w = new Float64Array(n), x = new Float64Array(n);
  var parent = new Int32Array(n), end = new Int32Array(n), open = [], path = [], cursor = [0];
  var own = cols.map(function (c) { return Float64Array.from(c); });
  var tb = base.totals[0] || 0, ta = base.totals[1] || 0, maxDepth = 0, maxDelta = 0;
  for (var i = 0; i < n; i++) {
    var d = depth[i];
    while (open.length && depth[open[open.length - 1]] >= d) end[open.pop()] = i;
    open.push(i);
    if (base.diff) {
      var b = tb ? cols[0][i] / tb : 0, a = ta ? cols[1][i] / ta : 0;
      w[i] = (a + b) / 2;
      if (d > 0 && base.kinds[name[i]] < 3) maxDelta = Math.max(maxDelta, Math.abs(a - b));
    } else {
      w[i] = cols[0][i];
    }
    parent[i] = d > 0 ? path[d - 1] : -1;
    path[d] = i;
    if (d > 0) for (var c = 0; c < cols.length; c++) own[c][parent[i]] -= cols[c][i];
    x[i] = cursor[d] || 0;
    cursor[d] = x[i] + w[i];
    cursor[d + 1] = x[i];
    if (d > maxDepth) maxDepth = d;
  }
  while (open.length) end[open.pop()] = n;
  return { base: base, names: base.names, kinds: base.kinds, n: n, name: name, depth: depth, cols: cols, own: own,
    w: w, x: x, parent: parent, end: end, maxDepth: maxDepth, maxDelta: maxDelta };
}

/* The report's tree (see flame.py build_tree) under a synthetic "all" root. */
function pmuBaseTree(p, diff) {
  var names = p.names.concat(["all"]), kinds = p.kinds.concat([PMU_KIND_ROOT]), m = p.name.length + 1;
  var order = names.map(function (_, k) { return k; }), rank = new Int32Array(names.length);
  order.sort(function (a, b) { return names[a] < names[b] ? -1 : names[a] > names[b] ? 1 : a - b; });
  order.forEach(function (k, r) { rank[k] = r; });
  var base = { names: names, kinds: kinds, rank: rank, totals: p.totals, diff: diff, elided: kinds.indexOf(4),
    extra: p.elided_self && p.elided_self.name.length ? p.elided_self : null };
  var name = new Int32Array(m), depth = new Int32Array(m);
  var cols = p.values.map(function () { return new Float64Array(m); });
  name[0] = names.length - 1;
  for (var i = 1; i < m; i++) {
    name[i] = p.name[i - 1];
    depth[i] = p.depth[i - 1] + 1;
    for (var c = 0; c < cols.length; c++) {
      cols[c][i] = p.values[c][i - 1];
      if (depth[i] === 1) cols[c][0] += cols[c][i];
    }
  }
  return pmuLayout(base, name, depth, cols);
}

/* A trie of frames grown from stacks, turned into a laid-out preorder tree by finish(). */
function PmuBuilder(t, rootName) {
  this.t = t; this.m = t.names.length; this.map = new Map();
  this.parent = [-1]; this.name = [rootName];
  this.cols = t.cols.map(function () { return [0]; });
}
PmuBuilder.prototype.child = function (p, nm) {
  var key = p * this.m + nm, k = this.map.get(key);
  if (k === undefined) {
    k = this.parent.length;
    this.map.set(key, k); this.parent.push(p); this.name.push(nm);
    for (var c = 0; c < this.cols.length; c++) this.cols[c].push(0);
  }
  return k;
};
PmuBuilder.prototype.add = function (k, src, i) {
  for (var c = 0; c < this.cols.length; c++) this.cols[c][k] += src[c][i];
};
PmuBuilder.prototype.finish = function () {
  var m = this.parent.length, parent = this.parent, nm = this.name, rank = this.t.base.rank;
  var start = new Int32Array(m + 1), fill = new Int32Array(m), kids = new Int32Array(Math.max(m - 1, 0));
  for (var k = 1; k < m; k++) start[parent[k] + 1]++;
  for (k = 0; k < m; k++) start[k + 1] += start[k];
  for (k = 1; k < m; k++) kids[start[parent[k]] + fill[parent[k]]++] = k;
  var byName = function (a, b) { return rank[nm[a]] - rank[nm[b]]; };
  for (k = 0; k < m; k++) if (start[k + 1] - start[k] > 1) kids.subarray(start[k], start[k + 1]).sort(byName);
  var name = new Int32Array(m), depth = new Int32Array(m), d = new Int32Array(m), stack = [0], at = 0;
  var cols = this.cols.map(function () { return new Float64Array(m); }), src = this.cols;
  while (stack.length) {
    var node = stack.pop();
    name[at] = nm[node]; depth[at] = d[node];
    for (var c = 0; c < src.length; c++) cols[c][at] = src[c][node];
    at++;
    for (var j = start[node + 1] - 1; j >= start[node]; j--) { d[kids[j]] = d[node] + 1; stack.push(kids[j]); }
  }
  return pmuLayout(this.t.base, name, depth, cols);
};

function pmuHasOwn(t, i) {
  for (var c = 0; c < t.own.length; c++) if (t.own[c][i] > 0) return true;
  return false;
}

/* Stacks reversed and merged by leaf: the roots are where samples landed, callers below them.
   Samples that pruning left in an elided frame's own count come back under the function they
   landed in (the payload's elided_self), with an elided frame for their unknown callers. */
function pmuInverted(t) {
  var b = new PmuBuilder(t, t.name[0]), extra = t.base.extra;
  for (var i = 1; i < t.n; i++) {
    if (!pmuHasOwn(t, i) || (extra && t.name[i] === t.base.elided)) continue;
    b.add(0, t.own, i);
    for (var k = i, cur = 0; k > 0; k = t.parent[k]) { cur = b.child(cur, t.name[k]); b.add(cur, t.own, i); }
  }
  for (var j = 0; extra && j < extra.name.length; j++) {
    var fn = b.child(0, extra.name[j]);
    b.add(0, extra.values, j); b.add(fn, extra.values, j); b.add(b.child(fn, t.base.elided), extra.values, j);
  }
  return b.finish();
}

/* A sandwich's share of elided_self: its function's pruned leaf samples, less the recursive ones
   a kept call of the same function has counted already. */
function pmuSandwichExtra(t, hit, callers, callees, self) {
  var extra = t.base.extra;
  for (var j = 0; extra && j < extra.name.length; j++) {
    if (!hit[extra.name[j]]) continue;
    var outer = extra.values.map(function (col, c) { return [col[j] - extra.nested[c][j]]; });
    callers.add(0, outer, 0); callees.add(0, outer, 0);
    callers.add(callers.child(0, t.base.elided), outer, 0);
    for (var c = 0; c < self.length; c++) self[c] += extra.values[c][j];
  }
}

/* One function's callers (merged, nearest caller first) and callees (merged), both rooted at it.
   Each stack counts once, at its outermost call of the function; self adds every call's own samples. */
function pmuSandwich(t, fn) {
  var hit = new Uint8Array(t.names.length), first = -1;
  for (var k = 0; k < t.names.length; k++) {
    if (t.names[k] === fn && t.kinds[k] !== PMU_KIND_ROOT) { hit[k] = 1; if (first < 0) first = k; }
  }
  if (first < 0) return null;
  var callers = new PmuBuilder(t, first), callees = new PmuBuilder(t, first), map = new Int32Array(t.n), cur;
  var self = t.cols.map(function () { return 0; });
  for (var i = 1; i < t.n; i++) {
    if (!hit[t.name[i]]) continue;
    callers.add(0, t.cols, i); callees.add(0, t.cols, i);
    for (k = t.parent[i], cur = 0; k > 0; k = t.parent[k]) { cur = callers.child(cur, t.name[k]); callers.add(cur, t.cols, i); }
    map[i] = 0;
    for (var j = i; j < t.end[i]; j++) {
      if (j > i) { map[j] = callees.child(map[t.parent[j]], t.name[j]); callees.add(map[j], t.cols, j); }
      if (hit[t.name[j]]) for (var c = 0; c < self.length; c++) self[c] += t.own[c][j];
    }
    i = t.end[i] - 1;
  }
  pmuSandwichExtra(t, hit, callers, callees, self);
  return { fn: fn, callers: callers.finish(), callees: callees.finish(), self: self };
}

/* Frame names from below the root down to node i. */
function pmuPath(t, i) {
  var out = [];
  for (var k = i; k > 0; k = t.parent[k]) out.push(t.names[t.name[k]]);
  return out.reverse();
}

/* The node reached by following names from the root; stops at the deepest one found. */
function pmuFind(t, names) {
  var cur = 0;
  for (var s = 0; s < names.length; s++) {
    var j = cur + 1, next = -1;
    while (j < t.end[cur]) {
      if (t.names[t.name[j]] === names[s]) { next = j; break; }
      j = t.end[j];
    }
    if (next < 0) break;
    cur = next;
  }
  return cur;
}

function pmuSumMatched(t, hitName, from, to) {
  var sum = 0;
  for (var i = from; i < to; i++) {
    if (!hitName[t.name[i]]) continue;
    sum += t.w[i];
    i = t.end[i] - 1;  /* a match inside a match is the same samples */
  }
  return sum;
}

/* Weight under frames whose name matches, each stack once: in the whole tree and inside node z.
   rootNamed: the root is a function (a sandwich side), so a match on it covers the whole side. */
function pmuMatched(t, hitName, z, rootNamed) {
  if (rootNamed && hitName[t.name[0]]) return [t.w[0], t.w[z]];
  var all = pmuSumMatched(t, hitName, 1, t.n), inZoom = pmuSumMatched(t, hitName, z + 1, t.end[z]);
  for (var k = z; k > 0; k = t.parent[k]) if (hitName[t.name[k]]) inZoom = t.w[z];
  return [all, inZoom];
}
