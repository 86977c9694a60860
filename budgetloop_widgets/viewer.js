// budgetloop's viewer: one component for TraceView, CompareView, RunPanel's step list and the
// static page (to_html, Result._repr_html_). A plain ES module, no build step.
//
// The run arrives once, as compact columns (budgetloop_widgets/_data.py). Rows, filters, search,
// jumps, keyboard moves and the chosen step's detail all happen here, with no kernel round trip.
// Only the rows in view are in the page. Every text from the data reaches the page through
// textContent (or a text node, or an attribute value): never as markup. The one markup parsed
// is the charts' SVG, which the package draws; it is parsed as XML and copied through an
// allow-list of elements and attributes.

const ROW = 26; // px, one row of the list
const MAX_HEIGHT = 8000000; // px: past this the list's scroll height is scaled
const OVERSCAN = 6;
const CONTEXT_SHOWN = 40;
const KEY_WAIT = 150; // ms the keys rest before the step they chose is drawn in detail
// -- the core's rules, as _data.py's viewer_rules writes them --
const STATUS = ["ok", "error", "skipped", "model error", "answer", "under-projected", "denied", "edited", "approved"];
const BITS = {"ok": 1, "error": 2, "skipped": 4, "model error": 8, "answer": 16, "under-projected": 32, "denied": 128, "edited": 256, "approved": 512};
const FINAL = 64;
const JUMPS = ["first error", "first skipped", "first denied", "first under-projected", "most expensive", "the stop"];
const ROLES = ["system", "user", "assistant", "tool"];
const CALL_STATUS = ["ok", "error", "skipped", "denied"];
const APPROVAL = ["", "approved", "edited", "denied"];
const DETAIL_IDS = {"step": ["usd", "ptier", "text", "err", "tb", "head", "under", "proj", "worst", "mr"], "calls": ["name", "srv", "raw", "args", "co", "out", "tb"]};
const AHEAD = 64;
// -- end of the core's rules --
const MARK = { ok: "✓", error: "✗", skipped: "↷", denied: "⊘", "model error": "⚠", answer: "■" };

// -- counts, as the core's budgetloop.display.count writes them (money comes as strings) ------

// The digits of |x| rounded half to even at `places` decimals (Python's format rounding).
function fixed(abs, places) {
  const exact = abs.toFixed(100); // a double's exact expansion, for the values shown here
  const dot = exact.indexOf(".");
  const whole = exact.slice(0, dot);
  const frac = exact.slice(dot + 1);
  let keep = whole + frac.slice(0, places);
  const rest = frac.slice(places);
  const first = rest.charCodeAt(0) - 48;
  const beyond = /[1-9]/.test(rest.slice(1));
  const last = keep.charCodeAt(keep.length - 1) - 48;
  if (first > 5 || (first === 5 && (beyond || last % 2 === 1))) {
    const digits = keep.split("");
    let i = digits.length - 1;
    while (i >= 0 && digits[i] === "9") { digits[i] = "0"; i -= 1; }
    if (i < 0) { digits.unshift("1"); } else { digits[i] = String(Number(digits[i]) + 1); }
    keep = digits.join("");
  }
  const cut = keep.length - places;
  return places ? [keep.slice(0, cut), keep.slice(cut)] : [keep, ""];
}

function grouped(whole) {
  return whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

function pyFloat(v) {
  return Number.isNaN(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

export function count(v) {
  if (v === null || v === undefined) { return "—"; }
  if (!Number.isFinite(v)) { return pyFloat(v); }
  if (Number.isInteger(v)) {
    const digits = Math.abs(v) >= 1e21 ? BigInt(Math.abs(v)).toString() : String(Math.abs(v));
    return (v < 0 ? "-" : "") + grouped(digits);
  }
  const [w, f] = fixed(Math.abs(v), 1);
  return `${v < 0 ? "-" : ""}${grouped(w)}.${f}`;
}

export function plural(n, word, words) {
  return `${count(n)} ${n === 1 ? word : words || word + "s"}`;
}

function seconds(v, places) {
  const [w, f] = fixed(Math.abs(v), places);
  return `${v < 0 ? "-" : ""}${w}.${f}`;
}

// -- the page, built with text only ----------------------------------------------------------

function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) { continue; }
    if (key === "class") { el.className = value; }
    else if (key === "text") { el.textContent = value; }
    else if (key.startsWith("on")) { el.addEventListener(key.slice(2), value); }
    else { el.setAttribute(key, value === true ? "" : String(value)); }
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) { continue; }
    el.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return el;
}

// A name that may wrap after each "_" or "." and nowhere else: its parts as text, a <wbr>
// between them (read_notes_of_the_meeting breaks as read_notes_of_ / the_meeting, never read_n).
function breakable(name) {
  const parts = name.split(/(?<=[_.])/);
  return parts.flatMap((part, i) => (i ? [h("wbr", {}), part] : [part]));
}

// Append items to an array in place (a spread of 100,000 arguments would overflow the stack).
function extend(array, items) {
  for (let i = 0; i < items.length; i += 1) { array.push(items[i]); }
  return array;
}

// Append the children that are there (a view leaves out what a run does not have).
function put(el, ...children) {
  for (const child of children.flat()) { if (child) { el.append(child); } }
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";
const SVG_TAGS = new Set(["svg", "g", "title", "text", "line", "path", "polyline", "circle", "rect"]);
const SVG_ATTRS = new Set([
  "class", "viewBox", "width", "height", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r",
  "d", "points", "fill", "stroke-width", "stroke-dasharray", "text-anchor", "font-size",
  "font-weight", "font-family", "role", "xmlns",
]);

// The package's chart SVG, parsed as XML and rebuilt from allowed elements and attributes
// only (no style attribute: the stylesheet colours the charts by class).
export function chart(markup) {
  const parsed = new DOMParser().parseFromString(markup, "image/svg+xml");
  const root = parsed.documentElement;
  if (!root || root.namespaceURI !== SVG_NS || root.localName !== "svg") { return null; }
  const copy = (node) => {
    if (node.nodeType === 3) { return document.createTextNode(node.nodeValue); }
    if (node.nodeType !== 1 || node.namespaceURI !== SVG_NS || !SVG_TAGS.has(node.localName)) {
      return null;
    }
    const out = document.createElementNS(SVG_NS, node.localName);
    for (const attr of Array.from(node.attributes)) {
      if (SVG_ATTRS.has(attr.name) && attr.name !== "xmlns") { out.setAttribute(attr.name, attr.value); }
    }
    for (const child of Array.from(node.childNodes)) {
      const c = copy(child);
      if (c) { out.append(c); }
    }
    return out;
  };
  return copy(root);
}

// -- the data --------------------------------------------------------------------------------

// The data as the widget sends it (bytes: JSON, or "BLV1" and JSON and arrays of numbers; see
// budgetloop_widgets/_data.py encode_binary) or as a page embeds it (parsed already).
export function decode(raw) {
  if (raw instanceof ArrayBuffer) { raw = new Uint8Array(raw); }
  if (!ArrayBuffer.isView(raw)) { return typeof raw === "string" ? JSON.parse(raw) : raw; }
  const bytes = new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
  const binary = bytes.length > 8 && bytes[0] === 66 && bytes[1] === 76 && bytes[2] === 86 && bytes[3] === 49;
  if (!binary) { return JSON.parse(new TextDecoder().decode(bytes)); }
  const length = bytes[4] | (bytes[5] << 8) | (bytes[6] << 16) | (bytes[7] << 24);
  const data = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length)));
  const start = 8 + length;
  const arrays = bytes.slice(start).buffer; // a copy: 8-aligned, as typed arrays need
  for (const run of data.runs) {
    for (const part of ["steps", "calls"]) {
      for (const [name, column] of Object.entries(run[part] || {})) {
        if (column && column.$bin) {
          const [offset, count, kind] = column.$bin;
          run[part][name] = kind === "i" ? new Int32Array(arrays, offset, count) : new Float64Array(arrays, offset, count);
        }
      }
    }
  }
  return data;
}

// A step's detail asked for (a run sent with its rows only, `rows`): its texts appended to the
// page's string table, its ids shifted by where they start there (`doc.details` keeps each
// detail's range, so a text it cut is asked for whole by its id in the detail), and its values
// in a run of its own, for step i only: the list's columns and the search's index stay as
// they are.
function withDetail(run, i, answer) {
  const doc = run.doc;
  const offset = doc.strings.length;
  extend(doc.strings, answer.strings);
  for (const [id, n] of Object.entries(answer.cut || {})) { doc.cut[String(Number(id) + offset)] = n; }
  (doc.details || (doc.details = [])).push([offset, doc.strings.length, i]);
  const shift = (v) => (Array.isArray(v) ? v.map(shift) : v === null || v < 0 ? v : v + offset);
  const steps = { ...run.d.steps, c0: [] };
  steps.c0[i] = 0;
  for (const [name, value] of Object.entries(answer.step)) {
    steps[name] = [];
    steps[name][i] = DETAIL_IDS.step.includes(name) ? shift(value) : value;
  }
  const calls = {};
  for (const [name, values] of Object.entries(answer.calls)) {
    calls[name] = DETAIL_IDS.calls.includes(name) ? values.map(shift) : values;
  }
  const one = Object.create(run);
  one.d = { ...run.d, steps, calls };
  return one;
}

// One run's columns, with what the views read of them.
class Run {
  constructor(doc, data) {
    this.doc = doc;
    this.d = data;
    this.details = new Map(); // a step's detail asked for (`rows`): the run to draw it from
    this.grow();
  }

  // The run's size, after its columns grew (an appended delta).
  grow() {
    this.n = this.d.steps.cost.length;
    this.nCalls = this.d.calls.name.length;
  }

  s(id) { return id < 0 || id === null || id === undefined ? "" : this.doc.strings[id]; }

  cutBy(id) { return this.doc.cut[String(id)] || 0; }

  callRange(i) {
    const c0 = this.d.steps.c0;
    return [c0[i], i + 1 < c0.length ? c0[i + 1] : this.d.calls.name.length];
  }

  status(i) {
    const fl = this.d.steps.fl[i];
    if (fl & BITS["model error"]) { return "model error"; }
    if (fl & BITS.error) { return "error"; }
    if (fl & BITS.skipped) { return "skipped"; }
    if (fl & BITS.denied) { return "denied"; }
    if (fl & BITS.ok) { return "ok"; }
    return "answer";
  }

  // The status cell of step i's row: its status, and a person's edits when there were any
  // (a denied call is a status of its own).
  statusCell(i) {
    const s = this.status(i);
    const edited = this.d.steps.fl[i] & BITS.edited ? " · edited" : "";
    return [`${MARK[s]} ${s}${edited}`, `blv-st-${s.replace(" ", "-")}`];
  }

  firstLine(i) {
    const st = this.d.steps;
    const text = this.s(st.text[i]) || this.s(st.err[i]);
    const nl = text.indexOf("\n");
    return nl < 0 ? text : text.slice(0, nl) + " …";
  }

  toolsOf(i) {
    const [a, b] = this.callRange(i);
    const out = [];
    for (let c = a; c < b; c += 1) { out.push(this.d.calls.name[c]); }
    return out;
  }
}

// The steps with a text containing `q` (lowercased): the model's text and error, each call's
// tool name, raw arguments and result or error. `ix` is the search's index: the string table
// lowercased once (`lower`) and each step's string ids; `state` keeps the last query's string
// hits, so a longer query narrows them. It runs in the search's worker (its source is this
// function's text) or, where the page cannot start one, here.
function stepsFinding(ix, q, state) {
  const lower = ix.lower;
  const before = state.hits && state.query && q.includes(state.query) ? state.hits : null;
  const hits = new Uint8Array(lower.length);
  for (let i = 0; i < lower.length; i += 1) {
    if (before && !before[i]) { continue; }
    const s = lower[i];
    if (s.length >= q.length && s.includes(q)) { hits[i] = 1; }
  }
  state.query = q;
  state.hits = hits;
  const n = ix.text.length;
  const nCalls = ix.name.length;
  const out = new Int32Array(n);
  let k = 0;
  for (let i = 0; i < n; i += 1) {
    const t = ix.text[i];
    const e = ix.err[i];
    let found = (t >= 0 && hits[t] === 1) || (e >= 0 && hits[e] === 1);
    const end = i + 1 < n ? ix.c0[i + 1] : nCalls;
    for (let c = ix.c0[i]; !found && c < end; c += 1) {
      found = hits[ix.name[c]] === 1 || (ix.raw !== null && (hits[ix.raw[c]] === 1 || (ix.out[c] >= 0 && hits[ix.out[c]] === 1)));
    }
    if (found) { out[k] = i; k += 1; }
  }
  return out.slice(0, k);
}

const WORKER_SOURCE = `${stepsFinding.toString()}
let ix = null;
let state = {};
onmessage = (event) => {
  const m = event.data;
  if (m.type === "index") {
    ix = m.ix;
    ix.lower = ix.strings.map((s) => s.toLowerCase());
    ix.strings = null;
    state = {};
    return;
  }
  const steps = ix ? stepsFinding(ix, m.query, state) : new Int32Array(0);
  postMessage({ seq: m.seq, steps }, [steps.buffer]);
};
`;

// The search: an index of the run's texts built once (again when the run grows), in a Web
// Worker made from this module's text where the page allows one, else here. A query's answer
// is the steps that match; only the latest query asked is answered.
const AHEAD_WAIT = 150; // ms the list rests before the details of its rows are asked for ahead

class Search {
  constructor(doc, run) {
    this.doc = doc;
    this.run = run;
    this.seq = 0;
    this.indexed = false; // the worker (or `ix`) holds the run as it is now
    this.ix = null; // the index, when the search runs here
    this.state = {};
    this.pending = null; // [seq, query, done] while the worker answers
    this.worker = run.d.partial ? null : this.start(); // a long run's first steps: here
  }

  start() {
    if (typeof Worker === "undefined" || typeof Blob === "undefined" || typeof URL === "undefined") { return null; }
    try {
      this.url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
      const worker = new Worker(this.url);
      worker.onmessage = (event) => this.answered(event.data);
      worker.onerror = () => this.here(); // refused (a page's policy) or failed: search here
      return worker;
    } catch (_err) {
      this.forget();
      return null;
    }
  }

  forget() {
    if (this.url) { URL.revokeObjectURL(this.url); this.url = null; }
  }

  // The worker cannot run: the search is done here from now on, the query it held too.
  here() {
    if (this.worker) { this.worker.terminate(); this.worker = null; }
    this.forget();
    this.indexed = false;
    const pending = this.pending;
    this.pending = null;
    if (pending) { this.find(pending[1], pending[2]); }
  }

  fields() {
    const st = this.run.d.steps;
    const calls = this.run.d.calls;
    return {
      text: st.text, err: st.err, c0: st.c0, name: calls.name,
      raw: calls.raw || null, out: calls.raw ? calls.out : null,
    };
  }

  // Build the index of the run as it is now, ahead of the first search.
  warm() {
    if (this.indexed || this.stopped) { return; }
    this.indexed = true;
    this.state = {};
    if (this.worker) {
      this.worker.postMessage({ type: "index", ix: { ...this.fields(), strings: this.doc.strings } });
    } else {
      this.ix = { ...this.fields(), lower: this.doc.strings.map((t) => t.toLowerCase()) };
    }
  }

  // A query asked is answered no more (the search box was cleared).
  cancel() { this.seq += 1; this.pending = null; }

  // The run's texts changed (they came from the kernel, the run grew): indexed again.
  reset() { this.indexed = false; this.ix = null; this.state = {}; }

  // The view is gone: the worker ends, and nothing of the table is kept.
  stop() {
    this.stopped = true;
    this.pending = null;
    if (this.worker) { this.worker.terminate(); this.worker = null; }
    this.forget();
    this.ix = null;
    this.state = {};
  }

  // `done` gets the steps matching `query` (an Int32Array, ascending), or null for no query:
  // at once when there is no query or the search runs here, else when the worker answers.
  find(query, done) {
    const q = query.toLowerCase();
    this.seq += 1;
    this.pending = null;
    if (!q || this.stopped) { done(null); return; }
    this.warm();
    if (this.worker) {
      this.pending = [this.seq, query, done];
      this.worker.postMessage({ type: "find", seq: this.seq, query: q });
      return;
    }
    done(stepsFinding(this.ix, q, this.state));
  }

  answered(reply) {
    const pending = this.pending;
    if (!pending || pending[0] !== reply.seq) { return; } // a query typed over since
    this.pending = null;
    pending[2](reply.steps);
  }
}

// -- the list: a table with a sticky header, only the rows in view in the page -------------------

let uid = 0;

class List {
  // columns: [{head, cls, cell(entry) -> [text, extraClass]}]
  constructor(opts) {
    uid += 1;
    this.id = `blv${uid}`;
    this.columns = opts.columns;
    this.onSelect = opts.onSelect;
    this.onOpen = opts.onOpen;
    this.entries = new Int32Array(0);
    this.selected = -1; // an entry value
    this.pool = [];
    this.top = 0; // the scroll position, as last set or scrolled to
    this.el = h("div", { class: `blv-list ${opts.cls || ""}` });
    this.head = h("div", { class: "blv-head blv-grid", role: "row" },
      this.columns.map((c) => h("span", { class: `blv-c ${c.cls || ""}`, role: "columnheader", text: c.head })));
    this.spacer = h("div", { class: "blv-spacer" });
    // data-lm-suppress-shortcuts: while the list has the focus its keys are its own, not the
    // notebook's (Notebook 7 takes j, k and Enter before the page sees them)
    this.scroll = h("div", {
      class: "blv-scroll", tabindex: "0", role: "listbox", "aria-label": opts.label,
      "data-lm-suppress-shortcuts": "true",
      onscroll: () => { this.top = this.scroll.scrollTop; this.schedule(); },
    }, this.head, this.spacer);
    this.empty = h("div", { class: "blv-empty", hidden: true });
    this.el.append(this.scroll, this.empty);
    this.scroll.addEventListener("click", (event) => {
      const row = event.target.closest(".blv-row");
      if (row && row.dataset.e !== undefined) {
        this.select(Number(row.dataset.e), false);
        this.scroll.focus({ preventScroll: true });
      }
    });
    this.scroll.addEventListener("dblclick", (event) => {
      if (event.target.closest(".blv-row") && this.onOpen) { this.onOpen(); }
    });
    this.frame = 0;
    if (typeof ResizeObserver !== "undefined") {
      this.resize = new ResizeObserver(() => this.schedule());
      this.resize.observe(this.scroll);
    }
  }

  // The view is gone: let go of what the page still points at (the observer, a frame).
  destroy() {
    if (this.resize) { this.resize.disconnect(); this.resize = null; }
    if (this.frame) { cancelAnimationFrame(this.frame); this.frame = 0; }
    this.entries = new Int32Array(0);
    this.pool = [];
  }

  setEntries(entries, emptyText) {
    this.entries = entries;
    this.empty.hidden = entries.length > 0;
    this.empty.textContent = entries.length ? "" : emptyText;
    this.height = Math.min(entries.length * ROW, MAX_HEIGHT);
    this.spacer.style.height = `${this.height}px`;
    // a definite height (up to 22 rows): the list's layout is then its own (CSS contain)
    this.viewH = Math.max(Math.min(this.height, 22 * ROW), ROW);
    this.scroll.style.height = `${this.viewH + ROW + 2}px`;
    this.draw();
  }

  indexOf(entry) {
    const e = this.entries;
    // entries are ascending, except where a view says otherwise: binary search, then a scan
    let lo = 0;
    let hi = e.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (e[mid] === entry) { return mid; }
      if (e[mid] < entry) { lo = mid + 1; } else { hi = mid - 1; }
    }
    return e.indexOf(entry);
  }

  // The rows' viewport: the list's height is set here (setEntries), so it is known without
  // asking the page for its layout (a forced layout of a whole notebook costs more than a move)
  view() {
    const viewH = this.viewH || ROW;
    const total = this.entries.length * ROW;
    const room = Math.max(this.height - viewH, 1);
    const ratio = total > this.height ? (total - viewH) / room : 1;
    return { viewH: Math.max(viewH, ROW), ratio };
  }

  firstExact() {
    const { ratio } = this.view();
    return (this.top * ratio) / ROW;
  }

  schedule() {
    if (this.frame) { return; }
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.draw(); });
  }

  draw() {
    const n = this.entries.length;
    const { viewH, ratio } = this.view();
    const exact = (this.top * ratio) / ROW;
    const first = Math.max(Math.floor(exact) - OVERSCAN, 0);
    const size = Math.ceil(viewH / ROW) + 2 * OVERSCAN + 1;
    const shown = Math.min(size, n - first);
    if (this.size !== size) { // the viewport changed: every row is placed again
      for (const row of this.pool) { if (row) { row.remove(); } }
      this.pool = new Array(size);
      this.size = size;
    }
    // position p is drawn by row p % size: when the window moves by one row, one row is
    // written and the others keep their text (nothing else in the list is laid out again)
    const used = new Set();
    let active = null;
    for (let position = first; position < first + shown; position += 1) {
      const slot = position % size;
      used.add(slot);
      let row = this.pool[slot];
      if (!row) { // made when first needed: a short list has only its rows
        row = h("div", { class: "blv-row blv-grid", role: "option" },
          this.columns.map((c) => h("span", { class: `blv-c ${c.cls || ""}` })));
        this.pool[slot] = row;
        this.spacer.append(row);
      }
      if (row.hidden) { row.hidden = false; }
      const entry = this.entries[position];
      const top = ratio === 1 ? position * ROW : this.top + (position - exact) * ROW;
      if (row.top !== top) { row.top = top; row.style.transform = `translateY(${top}px)`; }
      if (row.entry !== entry || row.version !== this.version) {
        row.entry = entry;
        row.version = this.version;
        row.dataset.e = String(entry);
        row.id = `${this.id}-${entry}`;
        const cells = row.children;
        this.columns.forEach((c, j) => {
          const [text, extra, title] = c.cell(entry);
          const cell = cells[j];
          // only what changed is written, a text in place: a jump rewrites every row, and each
          // new node or class is styled and laid out again
          const node = cell.firstChild;
          if (node && node.nodeType === 3 && !node.nextSibling) { if (node.data !== text) { node.data = text; } }
          else { cell.textContent = text; }
          const cls = extra || "";
          if (cell.extra !== cls) { cell.extra = cls; cell.className = `blv-c ${c.cls || ""} ${cls}`; }
          if (cell.tip !== (title || null)) {
            cell.tip = title || null;
            if (title) { cell.title = title; } else { cell.removeAttribute("title"); }
          }
        });
        const rowCls = this.rowClass ? this.rowClass(entry) : "";
        if (row.cls !== rowCls) {
          row.cls = rowCls;
          row.className = `blv-row blv-grid ${rowCls}${row.chosen ? " blv-selected" : ""}`;
        }
      }
      const chosen = entry === this.selected;
      if (row.chosen !== chosen) { // only what changed is written: no restyle of every row
        row.chosen = chosen;
        row.classList.toggle("blv-selected", chosen);
        row.setAttribute("aria-selected", chosen ? "true" : "false");
      }
      if (chosen) { active = row.id; }
    }
    for (let slot = 0; slot < this.pool.length; slot += 1) {
      const row = this.pool[slot];
      if (row && !used.has(slot) && !row.hidden) {
        row.hidden = true;
        row.entry = undefined;
        row.chosen = false;
        row.classList.remove("blv-selected");
        row.setAttribute("aria-selected", "false");
        row.removeAttribute("data-e");
        for (const cell of row.children) { cell.textContent = ""; }
      }
    }
    if (active !== this.active) {
      this.active = active;
      if (active) { this.scroll.setAttribute("aria-activedescendant", active); }
      else { this.scroll.removeAttribute("aria-activedescendant"); }
    }
    if (this.onDraw) { this.onDraw(this.entries.subarray(first, first + shown)); }
  }


  // Redraw every row's cells (the data under them changed).
  refresh() { this.version = (this.version || 0) + 1; this.draw(); }

  reveal(position) {
    const { viewH, ratio } = this.view();
    const top = (position * ROW) / ratio;
    const scrollTop = this.top;
    if (ratio === 1) {
      if (top < scrollTop) { this.scrollTo(top); }
      else if (top + ROW > scrollTop + viewH) { this.scrollTo(top + ROW - viewH); }
    } else {
      const exact = this.firstExact();
      if (position < exact || position + 1 > exact + viewH / ROW) {
        this.scrollTo(Math.max(top - viewH / 2, 0));
      }
    }
  }

  // The list keeps its own scroll position (set here, and read in the scroll event), so moving
  // never asks the page for a layout in the middle of a key press
  scrollTo(top) {
    this.top = Math.min(Math.max(top, 0), Math.max(this.height - this.viewH, 0));
    this.scroll.scrollTop = this.top;
  }

  select(entry, reveal = true) {
    this.selected = entry;
    const position = this.indexOf(entry);
    if (reveal && position >= 0) { this.reveal(position); }
    this.draw();
    if (this.onSelect) { this.onSelect(entry); }
  }

  move(delta) {
    const n = this.entries.length;
    if (!n) { return; }
    const at = this.indexOf(this.selected);
    let next;
    if (at < 0) { next = delta > 0 ? 0 : n - 1; }
    else { next = Math.min(Math.max(at + delta, 0), n - 1); }
    this.select(this.entries[next]);
  }

  page() { return Math.max(Math.floor(this.view().viewH / ROW) - 1, 1); }
}

// -- the chosen step, in words -----------------------------------------------------------------

// Every word and figure here is the core's (budgetloop.display, sent as strings by _data.py):
// the step's head line, and the meter before it (the cost bar, the projection, each ceiling).

export function stepHead(run, i) { return run.s(run.d.steps.head[i]); }

function meter(run, i) {
  const st = run.d.steps;
  const box = h("div", { class: "blv-meter" }, h("div", { class: "blv-meter-label", text: `Before step ${i}` }));
  const figures = st.bar[i];
  if (figures) {
    const [spentAt, nextAt, limitAt, fits] = figures;
    const bar = h("div", { class: "blv-bar", title: run.s(run.d.bar_title) });
    const spent = h("div", { class: "blv-spent" });
    const next = h("div", { class: `blv-next${fits ? "" : " blv-over"}` });
    const limit = h("div", { class: "blv-limit" });
    spent.style.width = `${spentAt}%`;
    next.style.width = `${nextAt}%`;
    limit.style.left = `${limitAt}%`;
    bar.append(spent, next, limit);
    box.append(bar);
  }
  box.append(h("div", { class: "blv-projection", text: run.s(st.proj[i]) }));
  if (st.worst[i] >= 0) {
    box.append(h("div", { class: "blv-muted", text: run.s(st.worst[i]) }));
  }
  if (st.ptier && st.ptier[i] >= 0) { box.append(h("div", { class: "blv-tier", text: run.s(st.ptier[i]) })); }
  // the carried spend is said where the meter's spend holds it: from the step after the fork
  if (run.d.carried_text >= 0 && st.carry && st.carry[i]) { box.append(h("div", { class: "blv-carried", text: run.s(run.d.carried_text) })); }
  const rows = h("div", { class: "blv-ceilings" });
  run.d.meter_labels.forEach((label, k) => {
    rows.append(h("span", {}, h("b", { text: run.s(label) }), ` ${run.s(st.mr[i][k])}`));
  });
  box.append(rows);
  return box;
}

function folded(title, text) {
  return h("details", { class: "blv-fold" }, h("summary", { text: title }), h("pre", { text }));
}

function tracebackOf(run, id) {
  if (id < 0) { return null; }
  const text = run.s(id);
  const lines = text.replace(/\n+$/, "").split("\n").length;
  return folded(`traceback (${plural(lines, "line")})`, text);
}

// A long text in a box that wraps; a text cut for the page says so, and a host that can
// fetch it whole (the widget) offers to.
function longText(view, run, id, cls) {
  const pre = h("pre", { class: cls, text: run.s(id) });
  const more = run.cutBy(id);
  if (!more) { return pre; }
  const box = h("div", {}, pre);
  const note = h("div", { class: "blv-muted", text: `cut for this page at ${count(run.s(id).length)} of ${plural(more, "character")}` });
  box.append(note);
  if (view.host.fetch) {
    box.append(h("button", {
      type: "button", class: "blv-button", text: "show it all",
      onclick: async (event) => {
        event.target.disabled = true;
        pre.textContent = await view.host.fetch(id);
        note.textContent = `all ${plural(more, "character")}`;
        event.target.remove();
      },
    }));
  }
  return box;
}

function callsTable(view, run, i) {
  const [a, b] = run.callRange(i);
  if (a === b) { return h("div", { class: "blv-muted", text: "no tool calls" }); }
  const c = run.d.calls;
  if (!c.raw) {
    return h("div", { class: "blv-muted blv-later", text: `${plural(b - a, "tool call")}: their arguments and results are on their way from the kernel` });
  }
  const rows = [];
  for (let k = a; k < b; k += 1) {
    const status = CALL_STATUS[c.st[k]];
    const decision = c.ap ? APPROVAL[c.ap[k]] : "";
    let checked;
    if (c.args[k] < 0) { checked = h("span", { class: "blv-muted", text: "not checked" }); }
    else {
      checked = h("div", {}, h("code", { text: run.s(c.args[k]) }));
      if (decision === "edited") {
        checked.append(h("div", {}, h("mark", { class: "blv-decision", text: "edited by a person" }), " ", h("i", { text: "(the call ran with these)" })));
      }
      for (const path of c.co[k] || []) {
        checked.append(h("div", {}, h("mark", { class: "blv-coerced", text: run.s(path) }), " ", h("i", { text: "(coerced)" })));
      }
    }
    const outcome = h("td", { class: "blv-outcome" }, longText(view, run, c.out[k], ""));
    if (c.tr[k] !== null) {
      outcome.append(h("div", { class: "blv-muted", text: `(cut for the model: ${plural(c.tr[k], "character")} in all)` }));
    }
    const tb = tracebackOf(run, c.tb[k]);
    if (tb) { outcome.append(tb); }
    const tool = h("td", {}, h("code", { class: "blv-name" }, breakable(run.s(c.name[k]))));
    if (c.srv && c.srv[k] >= 0) {
      tool.append(h("div", { class: "blv-muted blv-server", text: `on MCP server ${run.s(c.srv[k])}` }));
    }
    rows.push(h("tr", { class: `blv-call blv-call-${status}` },
      tool,
      h("td", { class: "blv-raw" }, h("code", { text: run.s(c.raw[k]) })),
      h("td", { class: "blv-checked" }, checked),
      h("td", { class: `blv-status blv-st-${status}`, "data-decision": decision || null, text: `${MARK[status]} ${status}${decision && decision !== status ? ` · ${decision}` : ""}` }),
      outcome,
      h("td", { class: "blv-num", text: seconds(c.s[k], 3) })));
  }
  return h("table", { class: "blv-table blv-calls" },
    h("thead", {}, h("tr", {}, ["tool", "raw arguments", "checked arguments", "status", "result / error", "s"].map((t) => h("th", { text: t })))),
    h("tbody", {}, rows));
}

export function stepCard(view, run, i) {
  const st = run.d.steps;
  const card = h("div", { class: "blv-card", "data-step": String(i) },
    h("div", { class: "blv-card-head", text: stepHead(run, i) }),
    h("div", { class: "blv-muted", text: `before it, ${run.s(st.proj[i])}` }));
  if (st.fl[i] & FINAL) {
    card.append(h("div", { class: "blv-note", text: "the final answer: the model was called without tools" }));
  }
  if (st.under[i] >= 0) { card.append(h("div", { class: "blv-warn", text: run.s(st.under[i]) })); }
  if (st.err[i] >= 0) {
    card.append(h("div", { class: "blv-error" }, `⚠ model error: `, run.s(st.err[i])));
    const tb = tracebackOf(run, st.tb[i]);
    if (tb) { card.append(tb); }
  }
  if (st.text[i] >= 0 && run.s(st.text[i])) { card.append(longText(view, run, st.text[i], "blv-text")); }
  else if (st.err[i] < 0) { card.append(h("div", { class: "blv-muted", text: "(no text)" })); }
  card.append(callsTable(view, run, i));
  return card;
}

function messageText(run, m) {
  const ms = run.d.messages;
  const parts = [];
  const role = roleOf(run, m);
  if (role === "tool" && ms.nm[m] >= 0 && run.s(ms.nm[m])) { parts.push(`[${run.s(ms.nm[m])}]`); }
  if (run.s(ms.c[m])) { parts.push(run.s(ms.c[m])); }
  for (const [name, args] of ms.tc[m] || []) { parts.push(`→ ${run.s(name)}(${run.s(args)})`); }
  return parts.join(" ");
}

function roleOf(run, m) {
  const r = run.d.messages.role[m];
  return r < 10 ? ROLES[r] : run.s(r - 10);
}

// The context: the latest `shown` of messages [0, upto) as rows [index, role, text, tokens].
export function contextRows(run, upto, shown = CONTEXT_SHOWN) {
  const first = Math.max(upto - shown, 0);
  const tokens = run.d.tokens;
  const withTokens = Array.isArray(tokens) && tokens.length >= upto;
  const rows = [];
  for (let m = first; m < upto; m += 1) {
    rows.push([m, roleOf(run, m), messageText(run, m), withTokens ? tokens[m] : null]);
  }
  return { upto, first, rows, tokens: withTokens };
}

// ``edited``: the indexes of the messages a fork changed (Result.edited), marked where shown.
// ``marks``: what a context policy made of the request (_data.marks_data, texts as string ids of
// ``run``): its line, each message it did not send as it was (struck, with why) and each message
// it wrote (a summary, a cut result), shown after the message it stands after. All as text.
export function contextTable(ctx, head, edited = [], marks = null, run = null) {
  let line = head || plural(ctx.upto, "message");
  if (ctx.first) { line += `; showing the latest ${count(ctx.upto - ctx.first)}`; }
  const changed = new Set(edited);
  const said = new Map(marks && run ? marks.d.map(([m, label]) => [m, run.s(label)]) : []);
  const written = new Map();
  for (const [after, label, role, text] of marks && run ? marks.w : []) {
    if (!written.has(after)) { written.set(after, []); }
    written.get(after).push([run.s(label), run.s(role), run.s(text)]);
  }
  const wrote = (after) => (written.get(after) || []).map(([label, role, text]) => h("tr", { class: "blv-written" },
    h("td", { class: "blv-num", text: "+" }),
    h("td", {}, h("span", { class: "blv-policy-mark", text: `${role} · ${label}` })),
    ctx.tokens ? h("td", { class: "blv-num" }) : null,
    h("td", {}, h("pre", { text }))));
  const rows = [];
  if (ctx.first === 0) { rows.push(...wrote(-1)); }
  for (const [m, role, text, tokens] of ctx.rows) {
    const dropped = said.get(m);
    const cls = `blv-role-${ROLES.includes(role) ? role : "other"}${changed.has(m) ? " blv-edited" : ""}${dropped ? " blv-dropped" : ""}`;
    rows.push(h("tr", { class: cls },
      h("td", { class: "blv-num", text: String(m) }),
      h("td", { text: changed.has(m) ? `${role} · edited by the fork` : role },
        dropped ? h("span", { class: "blv-policy-mark", text: ` · ${dropped}` }) : null),
      ctx.tokens ? h("td", { class: "blv-num", text: count(tokens) }) : null,
      h("td", {}, h(dropped ? "del" : "pre", { class: dropped ? "blv-struck" : null, text }))));
    rows.push(...wrote(m));
  }
  const heads = ["#", "role", ...(ctx.tokens ? ["tokens, estimated"] : []), "content"];
  return h("div", { class: "blv-context" },
    h("div", { class: "blv-context-head", text: line }),
    marks && run ? h("div", { class: "blv-policy-note", text: run.s(marks.h) }) : null,
    h("div", { class: "blv-context-box" },
      h("table", { class: "blv-table" },
        h("thead", {}, h("tr", {}, heads.map((t) => h("th", { text: t })))),
        h("tbody", {}, rows))));
}

// The request step i sent: its messages and the tool schemas (none for a final answer).
export function requestText(run, i) {
  const ms = run.d.messages;
  const sent = run.d.sent[i];
  const messages = [];
  for (let m = 0; m < sent; m += 1) {
    const out = { role: roleOf(run, m), content: ms.c[m] < 0 ? null : run.s(ms.c[m]) };
    if (ms.tc[m]) {
      out.tool_calls = ms.tc[m].map(([name, args, id]) => ({ id: run.s(id), name: run.s(name), arguments: run.s(args) }));
    }
    if (ms.id[m] >= 0) { out.tool_call_id = run.s(ms.id[m]); }
    if (ms.nm[m] >= 0) { out.name = run.s(ms.nm[m]); }
    messages.push(out);
  }
  const final = (run.d.steps.fl[i] & FINAL) !== 0;
  const tools = final ? "[]" : run.s(run.d.schemas);
  const body = JSON.stringify({ messages }, null, 1);
  return body.slice(0, -2) + `,\n "tools": ${tools.replace(/\n/g, "\n ")}\n}`;
}

export function requestHead(run, i) {
  const final = (run.d.steps.fl[i] & FINAL) !== 0;
  const tools = final ? "no tool schemas (the final answer is asked for without tools)" : plural(run.d.ntools, "tool schema");
  return `Request of step ${i}: ${plural(run.d.sent[i], "message")} and ${tools}, as the trace holds them`;
}

// What may come from the kernel: from the columns when the page has the messages, else asked.
function later(box, make) {
  const slot = h("div", { class: "blv-muted", text: "loading…" });
  box.append(slot);
  Promise.resolve(make()).then((el) => slot.replaceWith(el), (err) => { slot.textContent = `could not be loaded: ${err}`; });
}

function detailOf(view, run, i, withMeter) {
  const st = run.d.steps;
  const box = h("div", { class: "blv-step" });
  if (withMeter) { box.append(meter(run, i)); }
  box.append(stepCard(view, run, i));
  if (view.host.fork) {
    box.append(h("button", {
      type: "button", class: "blv-button blv-fork-here", text: "Fork here",
      title: `edit the context as it stood before step ${i} and go on from it`,
      disabled: view.host.busy(),
      onclick: () => view.host.fork(i),
    }));
  }
  let head = `${plural(run.d.sent[i], "message")}; ${count(st.pin[i])} input tokens projected`;
  if (st.in[i] !== null) { head += `, ${count(st.in[i])} reported`; }
  box.append(h("div", { class: "blv-section", text: "Context sent to this step" }));
  if (run.d.edited_text >= 0) { box.append(h("div", { class: "blv-edited-note", text: run.s(run.d.edited_text) })); }
  const local = Boolean(run.d.messages);
  const edited = run.d.edited || [];
  const marks = st.cx ? st.cx[i] : null;
  later(box, () => (local ? contextTable(contextRows(run, run.d.sent[i]), head, edited, marks, run)
    : view.host.ask({ type: "context", step: i }).then((ctx) => contextTable(ctx, head, edited, marks, run))));
  const request = h("pre", { class: "blv-request", hidden: true });
  const toggle = h("button", {
    type: "button", class: "blv-button", "aria-expanded": "false", text: "request as sent",
    onclick: async () => {
      const open = request.hidden;
      request.hidden = !open;
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
      if (open && !request.textContent) {
        request.textContent = "loading…";
        request.textContent = local ? `${requestHead(run, i)}\n\n${requestText(run, i)}`
          : (await view.host.ask({ type: "request", step: i })).text;
      }
    },
  });
  box.append(toggle, request);
  return box;
}

// -- the views -----------------------------------------------------------------------------------

function banner(run) {
  const lines = run.d.banner;
  const kind = !run.d.ended ? "blv-running" : run.d.answered ? "blv-answered" : "blv-unanswered";
  return h("div", { class: `blv-banner ${kind}` }, lines.map(([cls, id]) => {
    const tag = cls === "answer" ? "pre" : "div";
    return h(tag, { class: `blv-line-${cls}`, text: run.s(id) });
  }));
}

function charts(svgs) {
  if (!svgs || !svgs.length) { return null; }
  const box = h("div", { class: "blv-charts" });
  for (const markup of svgs) {
    const svg = chart(markup);
    if (svg) { box.append(svg); }
  }
  return box;
}

function label(text, control) {
  return h("label", { class: "blv-label" }, h("span", { text }), control);
}

// The filters, search and jumps over one list of steps; the list and the detail beside it.
class StepsView {
  constructor(host, doc, run, opts) {
    this.host = host;
    this.doc = doc;
    this.run = run;
    this.opts = opts;
    this.search = new Search(doc, run);
    this.el = h("div", { class: "blv-steps" });
    this.selected = -1;
    this.follow = opts.follow || false;
    this.asking = new Set(); // the steps whose detail is on its way
    const rows = Boolean(run.d.rows);
    this.query = h("input", {
      type: "search", class: "blv-search",
      placeholder: rows ? "search texts' first lines and tool names (press /)" : "search text, arguments, results (press /)",
      "aria-label": rows ? "search the steps: the first line of the model's text or error, and tool names"
        : "search the steps: the model's text, tool names, arguments, results and errors",
      oninput: () => this.apply(),
      onkeydown: (event) => {
        if (event.key === "Escape") { event.target.value = ""; this.apply(); this.list.scroll.focus(); }
        if (event.key === "Enter" || event.key === "ArrowDown") { event.preventDefault(); this.list.scroll.focus(); }
        event.stopPropagation();
      },
    });
    this.tool = h("select", { class: "blv-select", onchange: () => this.apply() });
    this.status = h("select", { class: "blv-select", onchange: () => this.apply() },
      h("option", { value: "", text: "any" }), STATUS.map((s) => h("option", { value: s, text: s })));
    this.goto = h("input", {
      type: "number", min: "0", class: "blv-goto", "aria-label": "go to step number",
      onkeydown: (event) => {
        event.stopPropagation();
        if (event.key === "Enter") { this.jumpTo(Number(event.target.value)); }
      },
    });
    this.count = h("span", { class: "blv-count", role: "status", "aria-live": "polite" });
    this.jumpBar = h("div", { class: "blv-jumps", role: "group", "aria-label": "jump to" });
    this.fillTools();
    this.fillJumps();
    this.list = new List({
      label: opts.label || "steps",
      columns: this.columns(),
      onSelect: (i) => this.show(i),
      onOpen: () => this.open(),
    });
    this.list.rowClass = (i) => `blv-row-${this.run.status(i).replace(" ", "-")}`;
    if (run.d.rows && !run.d.partial) { this.list.onDraw = (shown) => this.ahead(shown); }
    if (run.d.partial) { this.list.el.setAttribute("aria-busy", "true"); } // the rest on its way
    this.detail = h("div", { class: "blv-detail", tabindex: "-1", "aria-label": "the chosen step", "data-lm-suppress-shortcuts": "true" });
    this.el.append(
      h("div", { class: "blv-bar" },
        label("search", this.query), label("tool", this.tool), label("status", this.status),
        label("step", this.goto), this.count),
      this.jumpBar,
      h("div", { class: "blv-main" }, this.list.el, this.detail));
    this.el.addEventListener("keydown", (event) => this.key(event));
  }

  columns() {
    const run = () => this.run;
    return [
      { head: "step", cls: "blv-num", cell: (i) => [String(i)] },
      { head: "status", cls: "blv-stat", cell: (i) => run().statusCell(i) },
      { head: "cost", cls: "blv-num", cell: (i) => [run().s(run().d.steps.usd[i])] },
      { head: "tokens in", cls: "blv-num", cell: (i) => {
        const st = run().d.steps;
        if (st.in[i] === null) { return ["—", "", "no usage reported"]; }
        return st.fl[i] & BITS["under-projected"]
          ? [`${count(st.in[i])} ▲`, "blv-under", "under-projected: more than projected"]
          : [count(st.in[i])];
      } },
      { head: "projected", cls: "blv-num", cell: (i) => [count(run().d.steps.pin[i])] },
      { head: "calls", cls: "blv-num", cell: (i) => { const [a, b] = run().callRange(i); return [String(b - a)]; } },
      { head: "s", cls: "blv-num", cell: (i) => [seconds(run().d.steps.s[i], 2)] },
      { head: "text", cls: "blv-txt", cell: (i) => { const t = run().firstLine(i); return [t, "", t.length > 60 ? t : null]; } },
    ];
  }

  fillTools() {
    const names = new Map();
    const calls = this.run.d.calls.name;
    for (const id of calls) { if (!names.has(id)) { names.set(id, this.run.s(id)); } }
    const keep = this.tool.value;
    this.tool.replaceChildren(h("option", { value: "", text: "any" }),
      ...Array.from(names.entries()).sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
        .map(([id, name]) => h("option", { value: String(id), text: name })));
    this.tool.value = keep && names.has(Number(keep)) ? keep : "";
  }

  fillJumps() {
    const jumps = this.run.d.jumps;
    this.jumpBar.replaceChildren(h("span", { class: "blv-muted", text: "jump to" }), ...JUMPS.map((name) => {
      const at = jumps[name];
      return h("button", {
        type: "button", class: "blv-button", disabled: at === null || at === undefined,
        text: at === null || at === undefined ? name : `${name} (step ${at})`,
        "data-jump": name,
        onclick: () => { if (at !== null && at !== undefined) { this.jumpTo(at); } },
      });
    }));
  }

  // The steps the filters pass, of `found` (the steps the search found; null: no search): a
  // search's answer is all that is walked, not every step.
  matches(found = null) {
    const run = this.run;
    const st = run.d.steps;
    const n = run.n;
    const tool = this.tool.value === "" ? null : Number(this.tool.value);
    const bit = this.status.value === "" ? 0 : BITS[this.status.value];
    if (tool === null && !bit) {
      if (found) { return found; }
      const all = new Int32Array(n);
      for (let i = 0; i < n; i += 1) { all[i] = i; }
      return all;
    }
    const names = run.d.calls.name;
    const total = found ? found.length : n;
    const out = new Int32Array(total);
    let k = 0;
    for (let j = 0; j < total; j += 1) {
      const i = found ? found[j] : j;
      if (bit && !(st.fl[i] & bit)) { continue; }
      if (tool !== null) {
        const [a, b] = run.callRange(i);
        let has = false;
        for (let c = a; c < b; c += 1) { if (names[c] === tool) { has = true; break; } }
        if (!has) { continue; }
      }
      out[k] = i;
      k += 1;
    }
    return out.slice(0, k);
  }

  // Filters and search changed: list what passes (once the search has answered: at once with
  // no query); the chosen step stays if it passes, else the first that does is chosen, so the
  // detail never shows a step the list hides.
  apply(prefer = this.selected) {
    this.search.find(this.query.value.trim(), (found) => this.listed(this.matches(found), prefer));
  }

  listed(entries, prefer) {
    const n = this.run.n;
    this.list.setEntries(entries, n ? "no step matches the filters and the search" : this.noSteps());
    this.count.textContent = (entries.length === n
      ? plural(n, "step")
      : `${count(entries.length)} of ${plural(n, "step")} match`) + this.heldNote();
    this.byKey = true; // typed: the detail waits for the keys to rest, as for a move
    if (!entries.length) { this.show(-1); }
    else if (this.list.indexOf(prefer) >= 0) { this.list.select(prefer); }
    else if (this.list.indexOf(this.selected) < 0) { this.list.select(entries[0]); }
    else { this.list.select(this.selected); }
    this.byKey = false;
  }

  // A panel's session holding a batch for a person: its turn was taken, its step is recorded
  // here once the batch runs (the panel's words: ``doc.held``).
  heldNote() { return this.doc.held ? ` · ${this.doc.held}` : ""; }

  noSteps() { return this.doc.held || "this trace has no steps"; }

  jumpTo(i) {
    if (!Number.isInteger(i) || i < 0 || i >= this.run.n) { return; }
    if (this.list.indexOf(i) < 0) { // hidden by the filters: clear them, so it is listed
      this.query.value = "";
      this.tool.value = "";
      this.status.value = "";
      this.search.cancel();
      const entries = this.matches();
      this.list.setEntries(entries, "");
      this.count.textContent = plural(this.run.n, "step") + this.heldNote();
    }
    this.list.select(i);
  }

  // The chosen step: the row is marked at once, its detail drawn right after the list's frame is
  // painted (a click, a jump, a search); a step chosen by a key is drawn in detail once the keys
  // have rested for KEY_WAIT ms, so keys held down move the rows at the frame rate and only the
  // step they stop on is drawn.
  show(i) {
    if (i === this.selected && this.detail.firstChild && i >= 0 && !this.stale) { return; }
    this.stale = false;
    this.selected = i;
    this.list.selected = i;
    if (this.opts.onSelect && i >= 0) { this.opts.onSelect(i); }
    clearTimeout(this.waiting);
    cancelAnimationFrame(this.waitingFrame);
    if (this.byKey && this.detail.firstChild) {
      this.waiting = setTimeout(() => this.drawDetail(), KEY_WAIT);
    } else { // the list's new frame is painted first, then the detail
      this.waitingFrame = requestAnimationFrame(() => { this.waiting = setTimeout(() => this.drawDetail(), 0); });
    }
  }

  destroy() {
    clearTimeout(this.waiting);
    cancelAnimationFrame(this.waitingFrame);
    clearTimeout(this.aheadWait);
    this.stopped = true;
    this.list.destroy();
    this.search.stop();
  }

  drawDetail() {
    const i = this.selected;
    if (i < 0) {
      this.detail.replaceChildren(h("div", { class: "blv-muted", text: this.run.n ? "no step matches: the detail shows nothing" : this.noSteps() }));
    } else if (this.run.d.partial) {
      this.detail.replaceChildren(h("div", { class: "blv-muted blv-asking", text: `step ${i}: its detail comes once the rest of the run is read` }));
    } else if (this.run.d.rows && !this.run.details.has(i)) {
      this.detail.replaceChildren(h("div", { class: "blv-muted blv-asking", text: `step ${i}: its detail is on its way from the kernel` }));
      this.askDetail(i);
    } else {
      const run = this.run.d.rows ? this.run.details.get(i) : this.run;
      this.detail.replaceChildren(run.error !== undefined
        ? h("div", { class: "blv-error blv-detail-error", text: `step ${i}'s detail could not be read: ${run.error}` })
        : detailOf(this, run, i, this.opts.meter !== false));
    }
    if (this.opts.context) { this.detail.append(this.opts.context()); }
  }

  // The details of the rows in view and of the jumps' steps, asked for ahead in one question
  // once the list has come to rest (a run sent with its rows only): a click on a row there, or
  // a jump, draws its step at once.
  ahead(shown) {
    clearTimeout(this.aheadWait);
    this.aheadWait = setTimeout(() => {
      const run = this.run;
      const jumps = JUMPS.map((name) => run.d.jumps[name]).filter(Number.isInteger);
      const wanted = [...new Set([...shown, ...jumps])]
        .filter((i) => !run.details.has(i) && !this.asking.has(i)).slice(0, AHEAD);
      if (!wanted.length || this.stopped) { return; }
      for (const i of wanted) { this.asking.add(i); }
      const done = (answers) => {
        wanted.forEach((i, k) => {
          this.asking.delete(i);
          const answer = answers[k];
          if (!answer || answer.error !== undefined) { return; } // asked again when opened
          run.details.set(i, withDetail(run, i, answer));
          if (this.run === run && this.selected === i) { this.drawDetail(); }
        });
      };
      this.host.ask({ type: "steps", steps: wanted }).then(
        (reply) => done(Array.isArray(reply.details) ? reply.details : []), () => done([]));
    }, AHEAD_WAIT);
  }

  // Ask the kernel for step i's whole detail (a run sent with its rows only); drawn when it
  // comes if step i is still the one chosen. An answer saying why not is shown as text.
  askDetail(i) {
    if (this.asking.has(i)) { return; }
    this.asking.add(i);
    const run = this.run;
    const done = (made) => {
      this.asking.delete(i);
      run.details.set(i, made);
      if (this.run === run && this.selected === i) { this.drawDetail(); }
    };
    this.host.ask({ type: "step", step: i }).then(
      (answer) => done(answer.error !== undefined ? { error: String(answer.error) } : withDetail(run, i, answer)),
      (err) => done({ error: String(err) }));
  }

  open() {
    this.detail.scrollIntoView({ block: "nearest" });
    this.detail.focus({ preventScroll: true });
  }

  key(event) {
    const target = event.target;
    if (target.closest("input, select, textarea")) { return; }
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    const list = this.list;
    const moves = {
      j: 1, ArrowDown: 1, k: -1, ArrowUp: -1, PageDown: list.page(), PageUp: -list.page(),
    };
    let handled = true;
    if (event.key in moves) {
      this.byKey = true;
      list.move(moves[event.key]);
      this.byKey = false;
      // the focus stays on the list; moved there only when it is elsewhere (a notebook's
      // focus tracking runs on every focus change)
      if (!list.scroll.matches(":focus")) { list.scroll.focus({ preventScroll: true }); }
    }
    else if (event.key === "Home") { if (list.entries.length) { list.select(list.entries[0]); } }
    else if (event.key === "End") { if (list.entries.length) { list.select(list.entries[list.entries.length - 1]); } }
    else if (event.key === "/") { this.query.focus(); this.query.select(); }
    else if (event.key === "Enter" && target === list.scroll) { this.open(); }
    else { handled = false; }
    if (handled) { event.preventDefault(); event.stopPropagation(); }
  }
}

// -- the hosts: how each view is fed -------------------------------------------------------------

function traceView(host, doc, el) {
  const run = new Run(doc, doc.runs[0]);
  const view = new StepsView(host, doc, run, { label: "steps of the run" });
  put(el,
    h("div", { class: "blv-title", text: doc.title }),
    doc.origin ? h("div", { class: "blv-origin", text: doc.origin }) : null,
    banner(run),
    charts(run.d.charts),
    view.el);
  view.apply();
  if (!run.d.partial) { view.search.warm(); }
  return view;
}

function panelView(host, doc, el) {
  const run = new Run(doc, doc.runs[0]);
  const now = () => contextTable(contextRows(run, run.d.messages.c.length, doc.context_shown || CONTEXT_SHOWN), doc.context_head || "", run.d.edited || [], doc.next_context || null, run);
  const view = new StepsView(host, doc, run, {
    label: "steps of the run", follow: true, meter: true,
    context: () => h("div", {}, h("div", { class: "blv-section", text: "Context now" }), now()),
  });
  el.append(view.el);
  view.apply();
  if (run.n) { view.jumpTo(run.n - 1); }
  view.append = (delta) => {
    const latest = view.selected === run.n - 1 || view.selected < 0;
    for (const [k, v] of Object.entries(delta.cut || {})) { doc.cut[k] = v; }
    extend(doc.strings, delta.strings);
    const d = run.d;
    for (const part of ["steps", "calls", "messages"]) {
      for (const [k, values] of Object.entries(delta[part])) { extend(d[part][k], values); }
    }
    extend(d.sent, delta.sent);
    if (delta.tokens) { d.tokens = d.tokens || []; extend(d.tokens, delta.tokens); }
    d.jumps = delta.jumps;
    doc.context_head = delta.context_head;
    doc.held = delta.held || "";
    doc.next_context = delta.next_context || null;
    run.grow();
    view.search.reset();
    view.fillTools();
    view.fillJumps();
    view.stale = true; // the context now has grown: the detail is drawn again
    view.apply(latest ? run.n - 1 : view.selected);
  };
  return view;
}

function compareView(host, doc, el) {
  const a = new Run(doc, doc.runs[0]);
  const b = new Run(doc, doc.runs[1]);
  const at = doc.divergence;
  const longest = Math.max(a.n, b.n);
  const agreed = at === null ? longest : at;
  const FOLD = -1;
  let unfolded = false;
  const entries = () => {
    const out = [];
    if (agreed && !unfolded) { out.push(FOLD); } else { for (let i = 0; i < agreed; i += 1) { out.push(i); } }
    for (let i = agreed; i < longest; i += 1) { out.push(i); }
    return Int32Array.from(out);
  };
  const side = (run, i) => {
    if (i >= run.n) { return ["—", "", `${run.s(run.d.name)} has no step ${i}: it ended before`]; }
    return null;
  };
  const cell = (run, i, f) => (i === FOLD ? [""] : side(run, i) || f(i));
  const statusCell = (run) => (i) => cell(run, i, (j) => run.statusCell(j));
  const columns = [
    { head: "step", cls: "blv-num", cell: (i) => [i === FOLD ? `0–${agreed - 1}` : String(i)] },
    { head: a.s(a.d.name), cls: "blv-stat", cell: (i) => (i === FOLD ? [agreed === 1 ? "step 0: the same in both runs (click to unfold)" : `steps 0 to ${agreed - 1}: the same in both runs (${plural(agreed, "step")}, folded; click to unfold)`, "blv-fold-row"] : statusCell(a)(i)) },
    { head: "cost", cls: "blv-num", cell: (i) => cell(a, i, (j) => [a.s(a.d.steps.usd[j])]) },
    { head: "text", cls: "blv-txt", cell: (i) => cell(a, i, (j) => [a.firstLine(j)]) },
    { head: b.s(b.d.name), cls: "blv-stat", cell: statusCell(b) },
    { head: "cost", cls: "blv-num", cell: (i) => cell(b, i, (j) => [b.s(b.d.steps.usd[j])]) },
    { head: "text", cls: "blv-txt", cell: (i) => cell(b, i, (j) => [b.firstLine(j)]) },
  ];
  const detail = h("div", { class: "blv-detail blv-pair", tabindex: "-1", "aria-label": "the chosen step in both runs" });
  const view = { host, detail };
  const list = new List({
    label: "steps of both runs", cls: "blv-compare-list", columns,
    onSelect: (i) => {
      if (i === FOLD) {
        detail.replaceChildren(h("div", { class: "blv-muted", text: `the runs agree on ${agreed === 1 ? "step 0" : `steps 0 to ${agreed - 1}`}; Enter or a click unfolds them` }));
        return;
      }
      const cardOf = (run) => (i < run.n ? stepCard(view, run, i) : h("div", { class: "blv-muted", text: `${run.s(run.d.name)} has no step ${i}: it ended before` }));
      detail.replaceChildren();
      put(detail,
        i === at ? h("div", { class: "blv-diverge-head", text: `step ${i}: the runs part here` }) : null,
        h("div", { class: "blv-cols" },
          h("div", {}, h("div", { class: "blv-section", text: a.s(a.d.name) }), cardOf(a)),
          h("div", {}, h("div", { class: "blv-section", text: b.s(b.d.name) }), cardOf(b))));
      host.select(i);
    },
    onOpen: () => unfold(),
  });
  list.rowClass = (i) => (i === FOLD ? "blv-fold-row" : i === at ? "blv-diverged" : i < agreed ? "blv-agreed" : "");
  const unfold = () => {
    if (list.selected !== FOLD) { detail.focus({ preventScroll: true }); return; }
    unfolded = true;
    list.setEntries(entries(), "");
    list.select(0);
  };
  list.scroll.addEventListener("click", (event) => {
    const row = event.target.closest(".blv-row");
    if (row && Number(row.dataset.e) === FOLD) { unfold(); }
  });
  list.scroll.addEventListener("keydown", (event) => {
    const moves = { j: 1, ArrowDown: 1, k: -1, ArrowUp: -1, PageDown: list.page(), PageUp: -list.page() };
    let handled = true;
    if (event.key in moves) { list.move(moves[event.key]); }
    else if (event.key === "Home" && list.entries.length) { list.select(list.entries[0]); }
    else if (event.key === "End" && list.entries.length) { list.select(list.entries[list.entries.length - 1]); }
    else if (event.key === "Enter") { unfold(); }
    else { handled = false; }
    if (handled) { event.preventDefault(); event.stopPropagation(); }
  });
  put(el,
    h("div", { class: "blv-title", text: doc.title }),
    h("div", { class: "blv-cols" },
      [a, b].map((run) => h("div", {}, h("div", { class: "blv-section", text: run.s(run.d.name) }), banner(run)))),
    h("div", { class: "blv-diverge-line", text: doc.divergence_text }),
    charts(doc.charts),
    h("div", { class: "blv-main blv-stacked" }, list.el, detail));
  list.setEntries(entries(), "neither run has a step");
  const first = at === null ? (agreed ? FOLD : -2) : at;
  if (first !== -2) { list.select(first); }
  return { list, detail, select: (i) => list.select(i), destroy: () => list.destroy() };
}

// -- render: anywidget's entry point, and the static page's --------------------------------------

// Not exported by name: anywidget takes the default export (a named ``render`` is deprecated).
function render({ model, el }) {
  el.classList.add("blv", "tex2jax_ignore", "mathjax_ignore");
  let doc = decode(model.get("data"));
  let view = null;
  const waiting = new Map();
  let asked = 0;
  const ask = (content) => new Promise((resolve, reject) => {
    if (model.page) { reject(new Error("no kernel to ask")); return; }
    asked += 1;
    waiting.set(asked, resolve);
    model.send({ ...content, ask: asked });
  });
  // The chosen step is the model's at once (another view of it follows); the kernel is told once
  // the choice has rested for KEY_WAIT ms, so a jump's frame is not also a message to the kernel
  // and the kernel's busy and idle after it, and keys held down send one message, not one a row.
  let telling = 0;
  const tell = () => {
    telling = 0;
    try { model.save_changes(); } catch (err) { /* the model closed with its view: no kernel to tell */ }
  };
  const host = {
    select: (i) => {
      if (model.get("selected") === i) { return; }
      model.set("selected", i);
      clearTimeout(telling);
      telling = setTimeout(tell, KEY_WAIT);
    },
    ask,
    fetch: model.page ? null : (id) => {
      const from = (doc.details || []).find(([a, b]) => id >= a && id < b); // a step's detail's
      const asked = from ? { type: "full", step: from[2], id: id - from[0] } : { type: "full", id };
      return ask(asked).then((reply) => (reply.error !== undefined ? String(reply.error) : reply.text));
    },
    fork: doc.kind === "panel" ? (at) => model.send({ type: "fork", at }) : null,
    busy: () => Boolean(model.get("busy")),
  };
  const release = () => {
    if (view && view.destroy) { view.destroy(); }
    view = null;
  };
  const draw = () => {
    const kept = view && view.query ? [view.query.value, view.tool.value, view.status.value] : null;
    release();
    el.replaceChildren();
    if (doc.kind === "compare") { view = compareView(host, doc, el); }
    else if (doc.kind === "panel") { view = panelView(host, doc, el); }
    else { view = traceView(host, doc, el); }
    if (doc.kind !== "compare") { view.opts.onSelect = (i) => host.select(i); }
    const wanted = model.get("selected");
    if (kept && view.query && kept.some(Boolean)) { // what was typed or chosen before the data grew
      [view.query.value, view.tool.value, view.status.value] = kept;
      view.apply();
    }
    if (doc.kind !== "panel" && Number.isInteger(wanted) && wanted >= 0) { view.jumpTo ? view.jumpTo(wanted) : view.select(wanted); }
  };
  draw();
  const onSelected = () => {
    const i = model.get("selected");
    if (!view || !Number.isInteger(i) || i < 0) { return; }
    if (view.jumpTo) { if (view.selected !== i) { view.jumpTo(i); } } else if (view.list.selected !== i) { view.select(i); }
  };
  const askLater = () => {
    if (doc.kind !== "trace" || model.page) { return; }
    if (doc.runs[0].later) { model.send({ type: "later" }); }
    if (doc.runs[0].partial) { model.send({ type: "rest" }); } // the first steps drawn: the rest
  };
  const onData = () => { doc = decode(model.get("data")); draw(); askLater(); };
  const onMessage = (msg, buffers) => {
    if (!msg || typeof msg !== "object") { return; }
    if (msg.type === "later" && view && view.run && view.run.d.later && buffers && buffers.length) {
      const later = decode(buffers[0]);
      if (later.strings_from !== doc.strings.length) { return; } // drawn from other data
      extend(doc.strings, later.strings);
      Object.assign(doc.cut, later.cut);
      Object.assign(view.run.d.calls, later.calls);
      view.run.d.later = false;
      view.search.reset();
      view.search.warm(); // the new texts indexed, before a search
      view.stale = true;
      view.apply(view.selected);
      return;
    }
    if (msg.type === "answer" && waiting.has(msg.ask)) { waiting.get(msg.ask)(msg); waiting.delete(msg.ask); }
    else if (msg.type === "append" && view.append) {
      if (msg.base === view.run.n && msg.strings_from === doc.strings.length) { view.append(msg); }
      else { model.send({ type: "hello" }); }
    }
  };
  const onBusy = () => {
    for (const button of el.querySelectorAll(".blv-fork-here")) { button.disabled = host.busy(); }
  };
  model.on("change:selected", onSelected);
  model.on("change:data", onData);
  model.on("change:busy", onBusy);
  model.on("msg:custom", onMessage);
  if (doc.kind === "panel" && !model.page) { model.send({ type: "hello" }); }
  askLater();
  // anywidget calls this when the view is removed (a re-run cell, Clear Outputs): the view lets
  // go of the run's data, its observers and its listeners, so the page can free them
  return () => {
    if (telling) { clearTimeout(telling); tell(); } // the last choice told before the view goes
    model.off("change:selected", onSelected);
    model.off("change:data", onData);
    model.off("change:busy", onBusy);
    model.off("msg:custom", onMessage);
    release();
    el.replaceChildren();
    waiting.clear();
    doc = null;
  };
}

// A stand-in for anywidget's model in a page with no kernel: the data, and a selection; a new
// value tells the view, as a widget's model does (the page's whole run after its first steps).
export function pageModel(data) {
  const state = { data, selected: -1 };
  const listeners = new Map();
  return {
    page: true,
    get: (key) => state[key],
    set: (key, value) => {
      if (state[key] === value) { return; }
      state[key] = value;
      for (const fn of listeners.get(`change:${key}`) || []) { fn(); }
    },
    save_changes: () => {},
    on: (name, fn) => { listeners.set(name, [...(listeners.get(name) || []), fn]); },
    off: (name, fn) => { listeners.set(name, (listeners.get(name) || []).filter((f) => f !== fn)); },
    send: () => {},
  };
}

// The data beside a viewer in a page: JSON (a notebook's output), or JSON gzipped and written in
// base64 (data-encoding="gzip-base64": to_html's file), inflated by the browser's own
// DecompressionStream, which every current browser has.
export async function pageData(script) {
  if (script.dataset.encoding !== "gzip-base64") { return JSON.parse(script.textContent); }
  if (typeof DecompressionStream === "undefined") {
    throw new Error("this browser has no DecompressionStream to inflate the run's data with: open the file in a current browser");
  }
  const text = script.textContent.trim();
  let bytes;
  if (typeof Uint8Array.fromBase64 === "function") { bytes = Uint8Array.fromBase64(text); }
  else {
    const binary = atob(text);
    bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i += 1) { bytes[i] = binary.charCodeAt(i); }
  }
  const inflated = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(inflated).text());
}

// Render every viewer in the page that is not drawn yet, from the data beside it (a promise
// that settles once each is drawn whole, or has said in its summary why it could not be). A
// long run's page holds its first steps apart (data-first): drawn at once, while the whole run
// is inflated and read.
export function boot(root = document) {
  const drawn = [];
  for (const el of root.querySelectorAll("[data-blv]:not([data-blv-drawn])")) {
    const data = el.querySelector("script[type='application/json']:not([data-first])");
    const first = el.querySelector("script[type='application/json'][data-first]");
    const fallback = el.querySelector(".blv-fallback");
    if (!data) { continue; }
    el.setAttribute("data-blv-drawn", "");
    let model = null;
    const show = (doc) => {
      if (model) { model.set("data", doc); return; }
      model = pageModel(doc);
      const host = h("div", { class: "blv-host" });
      el.append(host);
      render({ model, el: host });
      if (fallback) { fallback.hidden = true; }
    };
    // the first steps painted before the whole run is inflated and parsed (a long task)
    const painted = first ? new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))) : null;
    if (first) {
      try { show(JSON.parse(first.textContent)); } catch (_err) { /* the whole run still comes */ }
    }
    drawn.push(Promise.resolve(painted).then(() => pageData(data)).then(show, (err) => {
      const said = `The viewer could not read its data: ${err.message}`;
      if (fallback) { fallback.hidden = false; fallback.append(h("div", { class: "blv-warn", text: said })); }
    }));
  }
  return Promise.all(drawn);
}

export default { render };
