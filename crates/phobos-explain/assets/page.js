// The explain page's drawing. It reads the trace embedded in the page
// (script#trace) and redraws every panel for the current CTA and step.
// No network, no libraries: plain DOM and SVG.
"use strict";
(function () {
  const T = JSON.parse(document.getElementById("trace").textContent);
  const NS = "http://www.w3.org/2000/svg";
  const WARP_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#8cd17d"];
  const EXTRA = "#d62728";
  const MASKED = "#8a8f96";
  const MAX_W = 560;
  const MAX_H = 240;
  let cta = T.picked;
  let step = 0;

  const $ = (id) => document.getElementById(id);
  function svg(tag, attrs, parent, text) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function html(tag, cls, parent, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  const warpColor = (w) => WARP_COLORS[w % WARP_COLORS.length];
  const steps = () => T.ctas[cta].steps;
  const cur = () => steps()[step];

  // ----- global memory: one SVG per tensor ------------------------------

  // How far masked tiles reach past each tensor, over every step, so the
  // drawing leaves room for them.
  const reach = T.tensors.map((t) => ({ rows: t.rows, cols: t.cols }));
  for (const c of T.ctas) {
    for (const s of c.steps) {
      for (const m of s.masked) {
        const r = reach[m.tensor];
        r.rows = Math.max(r.rows, m.rows[1]);
        r.cols = Math.max(r.cols, m.cols[1]);
      }
    }
  }

  const tensorViews = T.tensors.map((t, i) => {
    const box = html("div", "tensor", $("tensors"));
    const shape = t.shape.join(", ");
    html("div", "name mono", box, `${t.name}: ${t.elem}[${shape}]${t.written ? "" : " (read-only)"}`);
    const r = reach[i];
    const sx = Math.min(16, MAX_W / r.cols);
    const sy = Math.min(16, MAX_H / r.rows);
    const w = Math.max(40, r.cols * sx);
    const h = Math.max(8, r.rows * sy);
    const root = svg("svg", { width: w + 2, height: h + 2, viewBox: `-1 -1 ${w + 2} ${h + 2}`, role: "img", "aria-label": `tensor ${t.name}` }, box);
    const defs = svg("defs", {}, root);
    const hatch = svg("pattern", { id: `masked-${i}`, width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, defs);
    svg("rect", { width: 6, height: 6, fill: "#eceef1" }, hatch);
    svg("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: MASKED, "stroke-width": 2.5 }, hatch);
    svg("rect", { x: 0, y: 0, width: t.cols * sx, height: t.rows * sy, fill: "#fff", stroke: "#aab2bc", "stroke-width": 1 }, root);
    // Row separators where rows are tall enough to tell apart.
    if (sy >= 5 && t.rows > 1) {
      let d = "";
      for (let row = 1; row < t.rows; row++) d += `M0 ${row * sy}H${t.cols * sx}`;
      svg("path", { d, stroke: "#e3e7ec", "stroke-width": 1, fill: "none" }, root);
    }
    const layer = svg("g", {}, root);
    return { t, sx, sy, layer, index: i };
  });

  // Element range [s, e) of a row-major tensor as up to three rectangles
  // [row0, col0, row1, col1).
  function rangeRects(s, e, cols) {
    const r0 = Math.floor(s / cols), c0 = s % cols;
    const r1 = Math.floor((e - 1) / cols), c1 = ((e - 1) % cols) + 1;
    if (r0 === r1) return [[r0, c0, r0 + 1, c1]];
    const out = [[r0, c0, r0 + 1, cols]];
    if (r1 > r0 + 1) out.push([r0 + 1, 0, r1, cols]);
    out.push([r1, 0, r1 + 1, c1]);
    return out;
  }
  function drawRect(v, rc, attrs) {
    const x = rc[1] * v.sx, y = rc[0] * v.sy;
    const w = Math.max(1.5, (rc[3] - rc[1]) * v.sx);
    const h = Math.max(1.5, (rc[2] - rc[0]) * v.sy);
    const a = Object.assign({ x, y, width: w, height: h }, attrs);
    return svg("rect", a, v.layer);
  }

  function drawGlobal(s) {
    for (const v of tensorViews) v.layer.textContent = "";
    for (const b of s.boxes) {
      const v = tensorViews[b.tensor];
      const color = warpColor(b.warp);
      // Atomics are outlined with a dashed purple line, writes with a
      // solid dark one.
      const attrs = b.kind === "atomic"
        ? { fill: color, "fill-opacity": 0.85, stroke: "var(--atomic)", "stroke-width": 1.4, "stroke-dasharray": "2 1.5" }
        : b.kind === "write"
        ? { fill: color, "fill-opacity": 0.85, stroke: "#1d232b", "stroke-width": 0.8 }
        : { fill: color, "fill-opacity": 0.55 };
      for (const r of b.ranges) {
        for (const rc of rangeRects(r[0], r[1], v.t.cols)) {
          const e = drawRect(v, rc, attrs);
          e.setAttribute("class", `box warp-${b.warp} ${b.kind}`);
        }
      }
    }
    for (const x of s.extra_lines) {
      const v = tensorViews[x.tensor];
      for (const r of x.ranges) {
        for (const rc of rangeRects(r[0], r[1], v.t.cols)) {
          drawRect(v, rc, { fill: "none", stroke: EXTRA, "stroke-width": 1.5, class: "extra" });
        }
      }
    }
    for (const m of s.masked) {
      const v = tensorViews[m.tensor];
      drawRect(v, [m.rows[0], m.cols[0], m.rows[1], m.cols[1]], { fill: `url(#masked-${m.tensor})`, stroke: MASKED, "stroke-width": 1, class: "masked" });
    }
  }

  // ----- shared memory: the byte ruler -----------------------------------

  const RULER_W = 560;
  const ruler = $("ruler");
  const rulerLayer = (function () {
    const bytes = T.shared.bytes;
    ruler.setAttribute("viewBox", `0 0 ${RULER_W + 40} 74`);
    ruler.setAttribute("width", RULER_W + 40);
    ruler.setAttribute("height", 74);
    svg("rect", { x: 10, y: 14, width: RULER_W, height: 26, fill: "#fff", stroke: "#aab2bc" }, ruler);
    if (bytes === 0) {
      svg("text", { x: 20, y: 31 }, ruler, "0 bytes: this kernel plans no shared memory");
      return svg("g", {}, ruler);
    }
    const px = RULER_W / bytes;
    // Padding (bytes no access of the kernel reaches): grey hatching.
    const defs = svg("defs", {}, ruler);
    const hatch = svg("pattern", { id: "pad-hatch", width: 4, height: 4, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, defs);
    svg("rect", { width: 4, height: 4, fill: "#d5d9de" }, hatch);
    svg("line", { x1: 0, y1: 0, x2: 0, y2: 4, stroke: "#7d848c", "stroke-width": 2 }, hatch);
    T.shared.buffers.forEach((b, i) => {
      svg("rect", { x: 10 + b.offset * px, y: 14, width: Math.max(1, b.bytes * px), height: 26, fill: "#e8edf3", stroke: "#6b7785" }, ruler);
      const pad = b.padding ? `, ${b.padding.bytes} B padding` : "";
      svg("text", { x: 14 + b.offset * px, y: 10 }, ruler, `${b.name} @ ${b.offset} (${b.bytes} B${pad})`).setAttribute("data-buffer", i);
      if (!b.padding) return;
      const p = b.padding;
      for (let r = 1; r <= p.rows; r++) {
        const end = b.offset + r * p.row_bytes;
        const title = `${b.name}: bytes ${end - p.pad_bytes} to ${end - 1} are padding (row ${r - 1} of ${p.rows}: the last ${p.pad_bytes} of its ${p.row_bytes} bytes, which no access reaches)`;
        const rect = svg("rect", { x: 10 + (end - p.pad_bytes) * px, y: 14, width: Math.max(1, p.pad_bytes * px), height: 26, fill: "url(#pad-hatch)", class: "pad", "data-buffer": i }, ruler);
        svg("title", {}, rect, title);
      }
    });
    if (T.shared.buffers.some((b) => b.padding)) {
      const total = T.shared.buffers.reduce((n, b) => n + (b.padding ? b.padding.bytes : 0), 0);
      html("span", "pad", $("shared-legend"), `padding: ${total} bytes no access reaches (hatched)`);
    }
    // Ticks: 0, the end, and each buffer's edges.
    const ticks = new Set([0, bytes]);
    for (const b of T.shared.buffers) { ticks.add(b.offset); ticks.add(b.offset + b.bytes); }
    for (const t of ticks) {
      const x = 10 + t * px;
      svg("line", { x1: x, y1: 40, x2: x, y2: 46, stroke: "#6b7785" }, ruler);
      svg("text", { x, y: 58, "text-anchor": "middle" }, ruler, String(t));
    }
    return svg("g", {}, ruler);
  })();

  function drawShared(s) {
    rulerLayer.textContent = "";
    const bytes = T.shared.bytes;
    if (bytes === 0) return;
    const px = RULER_W / bytes;
    for (const touch of s.shared) {
      const color = touch.kind === "atomic" ? "var(--atomic)" : touch.kind === "write" ? "var(--write)" : "var(--read)";
      const y = touch.kind === "read" ? 27 : 15;
      for (const r of touch.ranges) {
        svg("rect", { x: 10 + r[0] * px, y, width: Math.max(1.5, (r[1] - r[0]) * px), height: 12, fill: color, "fill-opacity": 0.8, class: `touch ${touch.kind}` }, rulerLayer);
      }
    }
  }

  // ----- accumulators: which warp owns which part -------------------------

  // Each accumulator tile (zeros<T>[M, N]) as a grid of its warps' parts,
  // with the 16 × 8 fragments of mma.sync inside them; on a step that
  // zeroes, multiplies into or stores it, the parts of the warps taking
  // part are lit.
  const accs = T.accumulators || [];
  $("accumulators").hidden = accs.length === 0;
  const accViews = accs.map((a) => {
    const box = html("div", "acc", $("acc-views"));
    html("div", "name mono", box,
      `${a.name}: ${a.elem}[${a.rows}, ${a.cols}], ${a.warp_grid[0]} × ${a.warp_grid[1]} warps, ${a.registers_per_lane} registers per lane`);
    const sx = Math.min(8, MAX_W / a.cols), sy = Math.min(8, MAX_H / a.rows);
    const w = a.cols * sx, h = a.rows * sy;
    const root = svg("svg", { width: w + 2, height: h + 2, viewBox: `-1 -1 ${w + 2} ${h + 2}`, role: "img", "aria-label": `accumulator ${a.name}` }, box);
    const parts = a.warp_tiles.map((t) => {
      const g = svg("g", { class: `warp-tile warp-${t.warp}` }, root);
      const rect = svg("rect", { x: t.col * sx, y: t.row * sy, width: t.cols * sx, height: t.rows * sy, fill: warpColor(t.warp), "fill-opacity": 0.2, stroke: "#1d232b", "stroke-width": 0.8 }, g);
      let d = "";
      for (let r = a.fragment[0]; r < t.rows; r += a.fragment[0]) d += `M${t.col * sx} ${(t.row + r) * sy}h${t.cols * sx}`;
      for (let c = a.fragment[1]; c < t.cols; c += a.fragment[1]) d += `M${(t.col + c) * sx} ${t.row * sy}v${t.rows * sy}`;
      if (d) svg("path", { d, stroke: "#fff", "stroke-width": 0.6, fill: "none" }, g);
      if (t.cols * sx >= 22 && t.rows * sy >= 14) {
        svg("text", { x: (t.col + t.cols / 2) * sx, y: (t.row + t.rows / 2) * sy + 4, "text-anchor": "middle" }, g, `w${t.warp}`);
      }
      return { t, rect };
    });
    return { a, parts };
  });
  function drawAccumulators(s) {
    const on = new Set();
    for (const r of s.threads) for (let t = r[0]; t < r[1]; t++) on.add(Math.floor(t / 32));
    for (const v of accViews) {
      const active = s.kind === "statement" && v.a.lines.includes(s.line);
      for (const p of v.parts) {
        const lit = active && on.has(p.t.warp);
        p.rect.setAttribute("fill-opacity", lit ? 0.85 : 0.2);
        p.rect.classList.toggle("lit", lit);
      }
    }
  }

  // ----- cp.async rings: which stage a trip reads, which its copies fill ---

  // Each `stages S` loop's tiles as S boxes each (their stages, in
  // byte-ruler order). Trip i reads stage i % S and its copies fill stage
  // (i + S - 1) % S, the one trip i - 1 read; before the loop (on its
  // line), the prologue's copies fill stages 0 .. S-2.
  const rings = T.rings || [];
  $("rings").hidden = rings.length === 0;
  const ringViews = rings.map((r) => {
    const box = html("div", "ring", $("ring-views"));
    html("div", "name mono", box,
      `line ${r.line}: stages ${r.stages} · wait_group ${r.stages - 2} + one barrier per trip`);
    const rows = r.buffers.map((b) => {
      const row = html("div", "ring-row", box);
      html("span", "mono", row, `${b.name} `);
      const cells = [];
      for (let st = 0; st < r.stages; st++) {
        const a = b.offset + st * b.stage_bytes;
        cells.push(html("span", "stage", row, `stage ${st} [${a}, ${a + b.stage_bytes})`));
      }
      return cells;
    });
    const state = html("div", "ring-state", box, "");
    return { r, rows, state };
  });
  function drawRings(s) {
    for (const v of ringViews) {
      const S = v.r.stages;
      const it = (s.iterations || []).find((x) => x.loop === v.r.loop);
      const prologue = !it && s.line === v.r.line && s.shared.some((t) => t.kind === "write");
      let read = -1, fill = [];
      if (it) {
        read = it.iteration % S;
        fill = [(it.iteration + S - 1) % S];
        v.state.textContent = `trip ${it.iteration}: reads stage ${read}; its copies (for trip ${it.iteration + S - 1}) fill stage ${fill[0]}`;
      } else if (prologue) {
        fill = [...Array(S - 1).keys()];
        v.state.textContent = `prologue: trips 0 to ${S - 2} fill stages 0 to ${S - 2}`;
      } else {
        v.state.textContent = "";
      }
      for (const cells of v.rows) {
        cells.forEach((c, st) => {
          c.classList.toggle("read", st === read);
          c.classList.toggle("fill", fill.includes(st));
        });
      }
    }
  }

  // ----- barriers ----------------------------------------------------------

  const barrierItems = T.barriers.map((b) => {
    const li = html("li", b.kept ? "kept" : "elided", $("barrier-list"));
    html("span", "what", li, `line ${b.line} · ${b.kept ? "kept" : "elided"}`);
    if (b.reason) html("span", "", li, ` — ${b.reason}`);
    return li;
  });
  if (T.barriers.length === 0) {
    html("p", "empty", $("barriers"), "No barriers: no thread reads shared memory that another thread wrote.");
  }
  function drawBarriers(s) {
    barrierItems.forEach((li, i) => li.classList.toggle("current", s.barrier === i));
  }

  // ----- threads and lanes -------------------------------------------------

  const CELL = 14;
  const threadsSvg = $("threads-svg");
  const warps = T.warps;
  threadsSvg.setAttribute("width", 32 * CELL + 60);
  threadsSvg.setAttribute("height", warps * CELL + 4);
  threadsSvg.setAttribute("viewBox", `0 0 ${32 * CELL + 60} ${warps * CELL + 4}`);
  const threadCells = [];
  for (let w = 0; w < warps; w++) {
    svg("text", { x: 0, y: w * CELL + 12 }, threadsSvg, `warp ${w}`);
    for (let l = 0; l < 32; l++) {
      const t = w * 32 + l;
      if (t >= T.threads) break;
      threadCells.push(svg("rect", { x: 56 + l * CELL, y: w * CELL + 2, width: CELL - 2, height: CELL - 2, rx: 2, fill: "#e3e7ec" }, threadsSvg));
    }
  }
  const lanesSvg = $("lanes-svg");
  const LANE_DX = 17, LANE_Y = 104;
  lanesSvg.setAttribute("width", 32 * LANE_DX + 30);
  lanesSvg.setAttribute("height", LANE_Y + 24);
  lanesSvg.setAttribute("viewBox", `0 0 ${32 * LANE_DX + 30} ${LANE_Y + 24}`);
  const arrow = svg("marker", { id: "arrow", viewBox: "0 0 8 8", refX: 7, refY: 4, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" }, svg("defs", {}, lanesSvg));
  svg("path", { d: "M0 0L8 4L0 8z", fill: "#1d232b" }, arrow);
  svg("text", { x: 0, y: 12 }, lanesSvg, "warp 0's lanes, shuffles as arcs from the source lane");
  svg("line", { x1: 10, y1: LANE_Y, x2: 32 * LANE_DX + 10, y2: LANE_Y, stroke: "#aab2bc" }, lanesSvg);
  const arcLayer = svg("g", {}, lanesSvg);
  const laneX = (l) => 20 + l * LANE_DX;
  const laneDots = [];
  for (let l = 0; l < 32; l++) {
    laneDots.push(svg("circle", { cx: laneX(l), cy: LANE_Y, r: 5.5, fill: "#fff", stroke: "#6b7785" }, lanesSvg));
    if (l % 4 === 0) svg("text", { x: laneX(l), y: LANE_Y + 20, "text-anchor": "middle" }, lanesSvg, String(l));
  }

  function drawThreads(s) {
    const on = new Uint8Array(T.threads);
    for (const r of s.threads) for (let t = r[0]; t < r[1] && t < T.threads; t++) on[t] = 1;
    threadCells.forEach((c, t) => c.setAttribute("fill", on[t] ? warpColor(Math.floor(t / 32)) : "#e3e7ec"));
    laneDots.forEach((d, l) => d.setAttribute("fill", (s.lanes0 >>> l) & 1 ? warpColor(0) : "#fff"));
    arcLayer.textContent = "";
    const pairs = new Set(s.shuffles0.map((p) => `${p[0]},${p[1]}`));
    for (const [lane, src] of s.shuffles0) {
      if (lane === src) continue;
      const both = pairs.has(`${src},${lane}`);
      if (both && lane > src) continue; // drawn once, with two heads
      const x1 = laneX(src), x2 = laneX(lane);
      const h = Math.min(LANE_Y - 14, 10 + Math.abs(x2 - x1) * 0.4);
      const attrs = { d: `M${x1} ${LANE_Y - 6} C${x1} ${LANE_Y - h} ${x2} ${LANE_Y - h} ${x2} ${LANE_Y - 6}`, fill: "none", stroke: "#1d232b", "stroke-width": 1.1, "marker-end": "url(#arrow)", class: "arc" };
      if (both) attrs["marker-start"] = "url(#arrow)";
      svg("path", attrs, arcLayer);
    }
  }

  // ----- source, readout and controls ----------------------------------------

  // The heat column: each line's profile counters over every CTA (the
  // same numbers as `phobos profile`), shaded by the line's share of the
  // kernel's global sectors and shared wavefronts.
  const heat = new Map((T.heat || []).map((h) => [h.line, h]));
  const memoryCost = (h) => h.global_sectors + h.shared_wavefronts;
  const maxCost = Math.max(1, ...(T.heat || []).map(memoryCost));
  const count = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e4 ? `${(n / 1e3).toFixed(1)}k` : String(n));
  const fixed1 = (x) => (x === null || x === undefined ? "" : x.toFixed(1));
  const HEAT_COLUMNS = [
    ["req", "global requests (warp-level loads, stores and atomics)", (h) => (h.global_requests ? count(h.global_requests) : "")],
    ["sec/req", "32-byte sectors per global request", (h) => (h.global_requests ? fixed1(h.sectors_per_request) : "")],
    ["wf (cf)", "shared-memory wavefronts (bank conflicts: wavefronts beyond the ideal)", (h) => (h.shared_requests ? `${count(h.shared_wavefronts)} (${count(h.bank_conflicts)})` : "")],
    ["lanes", "active lanes per executed warp instruction", (h) => fixed1(h.active_lanes_avg)],
  ];
  function heatCells(parent, h, head) {
    const cell = html("span", head ? "heat head" : "heat", parent);
    for (const [name, what, value] of HEAT_COLUMNS) {
      const c = html("span", "hc", cell, head ? name : h ? value(h) : "");
      c.dataset.col = name;
      if (head) c.title = what;
    }
    if (!h) return cell;
    cell.style.setProperty("--heat", (memoryCost(h) / maxCost).toFixed(3));
    if (h.bank_conflicts > 0) cell.classList.add("conflicts");
    cell.title =
      `line ${h.line}: ${h.global_requests} global requests, ${h.global_sectors} sectors` +
      (h.global_requests ? ` (${fixed1(h.sectors_per_request)} per request)` : "") +
      `; ${h.shared_requests} shared requests, ${h.shared_wavefronts} wavefronts, ${h.bank_conflicts} bank conflicts` +
      `; ${fixed1(h.active_lanes_avg)} active lanes over ${h.warp_instructions} warp instructions` +
      (h.divergent_branches ? `; ${h.divergent_branches} divergent branches` : "");
    return cell;
  }
  if (heat.size) {
    const head = html("span", "ln heads", $("source-pre"));
    heatCells(head, null, true);
    html("span", "code", head, `counters over ${T.grid[0] * T.grid[1] * T.grid[2]} CTAs`);
  }
  const sourceLines = T.source_lines.map((text, i) => {
    const span = html("span", "ln", $("source-pre"));
    span.dataset.n = String(i + 1);
    if (heat.size) heatCells(span, heat.get(i + 1), false);
    html("span", "code", span, text.length ? text : " ");
    return span;
  });

  function where(s) {
    let text = `Line ${s.line}`;
    for (const it of s.iterations) {
      text += `, iteration ${it.iteration + 1} of the loop on line ${T.loops[it.loop].line}`;
    }
    if (s.kind.shuffle) text += `, shuffle step ${s.kind.shuffle.n} of ${s.kind.shuffle.of}`;
    if (s.kind === "barrier") text += ", barrier";
    const code = (T.source_lines[s.line - 1] || "").trim();
    return code ? `${text}: ${code}` : text;
  }

  function drawReadout(s) {
    $("where").textContent = where(s);
    const ul = $("readout-list");
    ul.textContent = "";
    for (const sentence of s.readout) html("li", "", ul, sentence);
    const c = T.ctas[cta];
    if (c.truncated && step === c.steps.length - 1) {
      html("li", "empty", ul, "The trace stops here: the step limit was reached (phobos explain --max-steps).");
    }
  }

  function innermostLoop(s) {
    return s.iterations.length ? s.iterations[s.iterations.length - 1] : null;
  }
  function findIteration(delta) {
    const s = cur();
    const it = innermostLoop(s);
    if (!it) return -1;
    const want = it.iteration + delta;
    const list = steps();
    const match = (x) => x.iterations.some((i) => i.loop === it.loop && i.iteration === want);
    if (delta > 0) {
      for (let i = step + 1; i < list.length; i++) if (match(list[i])) return i;
    } else {
      for (let i = 0; i < step; i++) if (match(list[i])) return i;
    }
    return -1;
  }
  function findLoopExit() {
    const it = innermostLoop(cur());
    if (!it) return -1;
    const list = steps();
    for (let i = step + 1; i < list.length; i++) {
      if (!list[i].iterations.some((x) => x.loop === it.loop) && list[i].line !== T.loops[it.loop].line) return i;
    }
    return -1;
  }

  function draw() {
    const list = steps();
    if (list.length === 0) {
      $("step-label").textContent = "no steps";
      $("where").textContent = "This CTA executed no instructions.";
      return;
    }
    step = Math.max(0, Math.min(step, list.length - 1));
    const s = list[step];
    $("step-label").textContent = `step ${step + 1} of ${list.length}`;
    $("slider").max = String(list.length - 1);
    $("slider").value = String(step);
    $("prev").disabled = step === 0;
    $("next").disabled = step === list.length - 1;
    $("iter-prev").disabled = findIteration(-1) < 0;
    $("iter-next").disabled = findIteration(1) < 0;
    $("loop-exit").disabled = findLoopExit() < 0;
    sourceLines.forEach((l, i) => l.classList.toggle("current", i + 1 === s.line));
    drawGlobal(s);
    drawShared(s);
    drawBarriers(s);
    drawAccumulators(s);
    drawRings(s);
    drawThreads(s);
    drawReadout(s);
    $("cta-label").textContent = `CTA ${T.ctas[cta].cta}`;
    document.body.dataset.step = String(step);
    document.body.dataset.cta = String(T.ctas[cta].cta);
    try {
      history.replaceState(null, "", `#cta=${T.ctas[cta].cta}&step=${step + 1}`);
    } catch (e) {
      // Some browsers refuse history changes on file:// pages; links then
      // just do not follow the step.
    }
  }

  function go(i) {
    if (i < 0) return;
    step = i;
    draw();
  }

  $("prev").addEventListener("click", () => go(step - 1));
  $("next").addEventListener("click", () => go(step + 1));
  $("iter-prev").addEventListener("click", () => go(findIteration(-1)));
  $("iter-next").addEventListener("click", () => go(findIteration(1)));
  $("loop-exit").addEventListener("click", () => go(findLoopExit()));
  $("slider").addEventListener("input", (e) => go(Number(e.target.value)));
  const picker = $("cta");
  if (T.ctas.length > 1) {
    T.ctas.forEach((c, i) => {
      const o = html("option", "", picker, `CTA ${c.cta} (${c.cta_id.join(", ")})`);
      o.value = String(i);
    });
    picker.value = String(cta);
    picker.addEventListener("change", () => {
      cta = Number(picker.value);
      step = 0;
      draw();
    });
    $("cta-label").hidden = true;
  } else {
    picker.hidden = true;
  }
  document.addEventListener("keydown", (e) => {
    if (e.target === $("slider") || e.target === picker || e.altKey || e.ctrlKey || e.metaKey) return;
    const keys = {
      ArrowLeft: () => step - 1,
      ArrowRight: () => step + 1,
      Home: () => 0,
      End: () => steps().length - 1,
      PageUp: () => findIteration(-1),
      PageDown: () => findIteration(1),
    };
    const f = keys[e.key];
    if (!f) return;
    const i = f();
    if (i >= 0 && i < steps().length) go(i);
    e.preventDefault();
  });

  // A link may name the CTA and step: #cta=1&step=8 (steps count from 1).
  const wanted = new URLSearchParams(location.hash.slice(1));
  if (wanted.has("cta")) {
    const i = T.ctas.findIndex((c) => String(c.cta) === wanted.get("cta"));
    if (i >= 0) {
      cta = i;
      picker.value = String(i);
    }
  }
  if (wanted.has("step")) step = Math.max(0, (Number(wanted.get("step")) || 1) - 1);

  draw();
  document.body.dataset.ready = "true";
})();
