/* pmuprof flame graph, part 3: the view state in the URL hash, so a pasted link opens the same view:
   #view=icicle|inverted|sandwich&focus=<function>&search=<regex>&zoom=<frame>;<frame>;...
   Every value is percent-encoded (a ';' inside a frame name too); in the sandwich view the zoom path
   starts with the side it is on, "callers" or "callees". */
"use strict";
var PMU_VIEWS = ["icicle", "inverted", "sandwich"];

function pmuDecode(s) {
  try { return decodeURIComponent(s); } catch (e) { return s; }
}

function pmuDefaultState() {
  return { view: "icicle", focus: "", search: "", zoom: [] };
}

/* The state a hash asks for; null when the hash is not about the flame graph (e.g. "#top"). */
function pmuParseHash(hash) {
  var h = String(hash || "").replace(/^#/, ""), st = pmuDefaultState(), any = false;
  if (!h) return st;
  h.split("&").forEach(function (part) {
    var eq = part.indexOf("=");
    if (eq < 0) return;
    var key = part.slice(0, eq), val = part.slice(eq + 1);
    if (key === "view") st.view = PMU_VIEWS.indexOf(val) >= 0 ? val : "icicle";
    else if (key === "focus") st.focus = pmuDecode(val);
    else if (key === "search") st.search = pmuDecode(val);
    else if (key === "zoom") st.zoom = val ? val.split(";").map(pmuDecode) : [];
    else return;
    any = true;
  });
  return any ? st : null;
}

function pmuHashOf(st) {
  if (st.view === "icicle" && !st.focus && !st.search && !st.zoom.length) return "";
  var out = "#view=" + st.view;
  if (st.focus) out += "&focus=" + encodeURIComponent(st.focus);
  if (st.search) out += "&search=" + encodeURIComponent(st.search);
  if (st.zoom.length) out += "&zoom=" + st.zoom.map(encodeURIComponent).join(";");
  return out;
}

/* The hash's key=value parts that are not the flame graph's (the seconds strip's "t=2-5"), as "&..." or "". */
var PMU_FLAME_KEYS = ["view", "focus", "search", "zoom"];
function pmuOtherParts(hash) {
  return String(hash || "").replace(/^#/, "").split("&").filter(function (part) {
    var eq = part.indexOf("=");
    return eq > 0 && PMU_FLAME_KEYS.indexOf(part.slice(0, eq)) < 0;
  }).map(function (part) { return "&" + part; }).join("");
}

/* ``hash`` with its part ``key`` set to ``value`` (left out when value is ""); the other key=value parts
   stay, a plain anchor ("#seconds") does not. */
function pmuHashWith(hash, key, value) {
  var parts = String(hash || "").replace(/^#/, "").split("&").filter(function (part) {
    var eq = part.indexOf("=");
    return eq > 0 && part.slice(0, eq) !== key;
  });
  if (value) parts.push(key + "=" + value);
  return parts.length ? "#" + parts.join("&") : "";
}

/* The value of ``key`` in the hash, or null. */
function pmuHashValue(hash, key) {
  var parts = String(hash || "").replace(/^#/, "").split("&");
  for (var i = 0; i < parts.length; i++) if (parts[i].slice(0, key.length + 1) === key + "=") return parts[i].slice(key.length + 1);
  return null;
}

function pmuEscapeRegex(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/* Per string-table entry, 1 where the name matches the search (a regex, or plain text if it is not one). */
function pmuSearchNames(names, q) {
  if (!q) return null;
  var re;
  try { re = new RegExp(q, "i"); } catch (e) {
    var low = q.toLowerCase();
    re = { test: function (s) { return s.toLowerCase().indexOf(low) >= 0; } };
  }
  var hit = new Uint8Array(names.length);
  for (var k = 0; k < names.length - 1; k++) hit[k] = re.test(names[k]) ? 1 : 0;  /* the last one is "all" */
  return hit;
}
