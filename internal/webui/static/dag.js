// The DAG: laid out left to right by elkjs in a web worker (the page stays
// responsive while it lays a graph out), drawn as SVG, its nodes coloured
// by status as the run goes on without laying it out again. Nested
// pipelines are boxes holding their steps, collapsible to a node. A large
// run (the server sends its layers, graph.LayersOf) opens with its nested
// pipelines collapsed and is placed from its layers, which takes
// milliseconds where elkjs takes seconds; elkjs lays it out once a nested
// pipeline is opened.
import { el, svg, textWidth } from "./util.js";

const NODE_H = 54;
const LABEL_H = 14;
// Placing layers: the least gap between layers, between slots of a layer,
// and the height of a slot an edge passes.
const LAYER_GAP = 36;
const SLOT_GAP = 16;
const PASS_H = 12;

const STATUS_LABEL = { waiting: "waiting for a worker" };

export class DAG {
  constructor(box, onSelect) {
    this.box = box;
    this.onSelect = onSelect;
    this.elk = null; // started on the first layout that needs it
    this.nodes = new Map(); // path -> graph node
    this.shapes = new Map(); // path -> its <g>
    this.steps = new Map(); // path -> step state
    this.collapsed = new Set();
    this.selected = "";
    this.view = null;
  }

  // draw lays the graph out and draws it with the steps' states; layers,
  // if the server sent them, place a large graph.
  async draw(graph, steps, layers) {
    this.graph = graph;
    this.layers = layers;
    const walk = (g) => g.nodes.forEach((n) => { this.nodes.set(n.path, n); if (n.pipeline) walk(n.pipeline); });
    walk(graph);
    if (layers) {
      for (const [path, n] of this.nodes) if (n.pipeline) this.collapsed.add(path);
    }
    for (const s of steps) this.steps.set(s.path, s);
    await this.layout();
  }

  node(path) { return this.nodes.get(path); }

  async layout() {
    const t0 = performance.now();
    const nested = [...this.nodes.values()].some((n) => n.pipeline && !this.collapsed.has(n.path));
    if (this.layers && !nested) {
      this.render(this.place());
      this.box.dataset.layout = "layers";
      this.box.dataset.layoutMs = String(Math.round(performance.now() - t0));
      return;
    }
    const root = {
      id: "__root",
      layoutOptions: {
        "elk.algorithm": "layered",
        "elk.direction": "RIGHT",
        // Laying out across nested pipelines' boxes costs: only when one is open.
        "elk.hierarchyHandling": nested ? "INCLUDE_CHILDREN" : "SEPARATE_CHILDREN",
        // Fewer crossing-minimisation passes on large graphs.
        "elk.layered.thoroughness": this.layers ? "2" : "7",
        "elk.json.shapeCoords": "ROOT",
        "elk.json.edgeCoords": "ROOT",
        "elk.layered.spacing.nodeNodeBetweenLayers": "36",
        "elk.spacing.nodeNode": "16",
        "elk.spacing.edgeLabel": "2",
        "elk.edgeLabels.placement": "CENTER",
      },
      children: this.graph.nodes.map((n) => this.elkNode(n)),
      edges: (this.graph.edges || []).map(elkEdge),
    };
    this.elk ||= new ELK({ workerUrl: "static/vendor/elk-worker.min.js" });
    const laid = await this.elk.layout(root);
    this.render(laid);
    this.box.dataset.layout = "elk";
    this.box.dataset.layoutMs = String(Math.round(performance.now() - t0));
  }

  elkNode(n) {
    if (n.pipeline && !this.collapsed.has(n.path)) {
      return {
        id: n.path,
        layoutOptions: { "elk.padding": "[top=40,left=12,bottom=12,right=12]" },
        children: n.pipeline.nodes.map((c) => this.elkNode(c)),
        edges: (n.pipeline.edges || []).map(elkEdge),
      };
    }
    return { id: n.path, width: nodeWidth(n), height: NODE_H };
  }

  // place turns the server's layers into what elkjs answers: each layer as
  // wide as its widest step, its slots stacked and centred on the tallest
  // layer's, an edge straight from its step to the layer's right side,
  // across each layer it passes, to its reader, labelled in the gap after
  // its step's layer.
  place() {
    const { layers, routes } = this.layers;
    const widths = new Map(this.graph.nodes.map((n) => [n.path, nodeWidth(n)]));
    const at = new Map();
    layers.forEach((slots, k) => slots.forEach((p, i) => { if (p) at.set(p, [k, i]); }));
    const layerW = layers.map((slots) => Math.max(0, ...slots.map((p) => (p ? widths.get(p) : 0))));
    const labelW = layers.map(() => 0);
    const edges = (this.graph.edges || []).map((e) => {
      const text = label(e);
      const w = Math.ceil(textWidth(text, "10px system-ui, sans-serif")) + 6;
      const k = at.get(e.from)[0];
      labelW[k] = Math.max(labelW[k], w);
      return { e, text, w };
    });
    const xs = [];
    let x = 0;
    layers.forEach((_, k) => {
      xs.push(x);
      x += layerW[k] + Math.max(LAYER_GAP, labelW[k] + 24);
    });
    const slotH = (p) => (p ? NODE_H : PASS_H);
    const heights = [];
    const ys = layers.map((slots) => {
      let y = 0;
      const col = slots.map((p) => { const top = y; y += slotH(p) + SLOT_GAP; return top; });
      heights.push(Math.max(0, y - SLOT_GAP));
      return col;
    });
    const height = Math.max(0, ...heights);
    ys.forEach((col, k) => col.forEach((y, i) => { col[i] = y + (height - heights[k]) / 2; }));

    const children = [...at].map(([p, [k, i]]) => ({ id: p, x: xs[k], y: ys[k][i], width: widths.get(p), height: NODE_H }));
    const laidEdges = edges.map(({ e, text, w }, j) => {
      const [k0, i0] = at.get(e.from), [k1, i1] = at.get(e.to);
      const y0 = ys[k0][i0] + NODE_H / 2;
      const pts = [{ x: xs[k0] + widths.get(e.from), y: y0 }, { x: xs[k0] + layerW[k0], y: y0 }];
      (routes[j] || []).forEach((s, m) => {
        const k = k0 + 1 + m, y = ys[k][s] + PASS_H / 2;
        pts.push({ x: xs[k], y }, { x: xs[k] + layerW[k], y });
      });
      pts.push({ x: xs[k1], y: ys[k1][i1] + NODE_H / 2 });
      const [a, b] = [pts[1], pts[2]];
      const lab = { text, width: w, height: LABEL_H, x: (a.x + b.x - w) / 2, y: (a.y + b.y - LABEL_H) / 2 };
      return { sources: [e.from], targets: [e.to],
        sections: [{ startPoint: pts[0], bendPoints: pts.slice(1, -1), endPoint: pts.at(-1) }], labels: [lab] };
    });
    return { children, edges: laidEdges, width: x - Math.max(LAYER_GAP, labelW.at(-1) + 24), height };
  }

  render(laid) {
    // Nested pipelines' boxes first, edges over them, steps on top.
    const clusters = svg("g", { class: "clusters" });
    const edges = svg("g", { class: "edges" });
    const nodes = svg("g", { class: "nodes" });
    const drawNode = (ln) => {
      const n = this.nodes.get(ln.id);
      if (ln.children) {
        clusters.append(this.cluster(n, ln));
        ln.children.forEach(drawNode);
        (ln.edges || []).forEach((e) => edges.append(drawEdge(e)));
      } else {
        nodes.append(this.leaf(n, ln));
      }
    };
    this.shapes.clear();
    laid.children.forEach(drawNode);
    (laid.edges || []).forEach((e) => edges.append(drawEdge(e)));
    const defs = svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5",
      markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" }, svg("path", { d: "M0,0L10,5L0,10z", fill: "#9ca3af" })));
    const content = svg("g", {}, clusters, edges, nodes);
    const root = svg("svg", { id: "graph", "data-nodes": String(this.shapes.size) }, defs, content);
    this.size = { w: laid.width || 100, h: laid.height || 100 };
    const zoom = el("div", { class: "zoom" },
      el("button", { onclick: () => this.zoomBy(0.8), title: "zoom in" }, "+"),
      el("button", { onclick: () => this.zoomBy(1.25), title: "zoom out" }, "−"),
      el("button", { onclick: () => this.fit(), title: "fit the graph" }, "fit"));
    this.svgEl = root;
    this.box.replaceChildren(root, zoom);
    this.panZoom(root);
    if (!this.view) this.fit(); else this.apply();
    for (const [path] of this.shapes) this.paint(path);
    if (this.selected) this.select(this.selected);
    // Drawn once the browser has shown the frame with it.
    requestAnimationFrame(() => setTimeout(() => performance.mark("porch:graph-drawn")));
  }

  leaf(n, ln) {
    const collapsedPipeline = n.pipeline && this.collapsed.has(n.path);
    const g = svg("g", { class: "node", "data-path": n.path, "data-type": n.type, transform: `translate(${ln.x},${ln.y})` },
      svg("title", {}, n.display_name ? `${n.display_name} (${n.path})` : n.path),
      svg("rect", { width: ln.width, height: ln.height, rx: 6 }),
      svg("text", { x: 10, y: 17, "font-weight": 600, class: "name" }, n.name),
      svg("text", { x: 10, y: 32, class: "caption" }, caption(n)),
      svg("text", { x: 10, y: 46, class: "status" }, ""));
    if (collapsedPipeline) {
      const t = svg("text", { x: ln.width - 16, y: 17, class: "toggle", "data-toggle": n.path }, "+");
      t.append(svg("title", {}, "expand"));
      g.append(t);
    }
    g.addEventListener("click", (ev) => this.click(ev, n.path));
    this.shapes.set(n.path, g);
    return g;
  }

  cluster(n, ln) {
    const g = svg("g", { class: "cluster", "data-path": n.path, "data-type": "pipeline" },
      svg("rect", { x: ln.x, y: ln.y, width: ln.width, height: ln.height, rx: 8 }),
      svg("text", { x: ln.x + 10, y: ln.y + 16, "font-weight": 600, class: "name" }, n.name + " · pipeline"),
      svg("text", { x: ln.x + 10, y: ln.y + 31, class: "status" }, ""));
    const t = svg("text", { x: ln.x + ln.width - 18, y: ln.y + 17, class: "toggle", "data-toggle": n.path }, "−");
    t.append(svg("title", {}, "collapse"));
    g.append(t);
    g.addEventListener("click", (ev) => this.click(ev, n.path));
    this.shapes.set(n.path, g);
    return g;
  }

  click(ev, path) {
    ev.stopPropagation();
    const toggle = ev.target.closest("[data-toggle]");
    if (toggle) {
      const p = toggle.getAttribute("data-toggle");
      if (this.collapsed.has(p)) this.collapsed.delete(p); else this.collapsed.add(p);
      this.layout();
      return;
    }
    if (this.dragged) return;
    this.onSelect(path);
  }

  // update recolours the nodes whose steps' states changed.
  update(steps) {
    for (const s of steps) {
      const old = this.steps.get(s.path);
      this.steps.set(s.path, s);
      if (!old || old.status !== s.status || old.attempt !== s.attempt) this.paint(s.path);
    }
  }

  paint(path) {
    const g = this.shapes.get(path);
    const s = this.steps.get(path);
    if (!g) return;
    const status = s ? s.status : "queued";
    g.setAttribute("class", `${g.classList.contains("cluster") ? "cluster" : "node"} st-${status}` +
      (path === this.selected ? " selected" : ""));
    g.setAttribute("data-status", status);
    const text = g.querySelector("text.status");
    let label = STATUS_LABEL[status] || status;
    if (s && s.attempt > 1) label += ` · attempt ${s.attempt}`;
    if (text.textContent !== label) text.textContent = label;
  }

  select(path) {
    const old = this.shapes.get(this.selected);
    if (old) old.classList.remove("selected");
    this.selected = path;
    const g = this.shapes.get(path);
    if (g) g.classList.add("selected");
  }

  // Pan by dragging, zoom with the wheel around the pointer.
  panZoom(root) {
    let start = null;
    root.addEventListener("pointerdown", (ev) => {
      start = { x: ev.clientX, y: ev.clientY, view: { ...this.view } };
      this.dragged = false;
    });
    root.addEventListener("pointermove", (ev) => {
      if (!start) return;
      const k = this.view.w / root.clientWidth;
      const dx = (ev.clientX - start.x) * k, dy = (ev.clientY - start.y) * k;
      if (Math.abs(dx) + Math.abs(dy) > 3 * k) this.dragged = true;
      this.view = { ...start.view, x: start.view.x - dx, y: start.view.y - dy };
      this.apply();
    });
    const end = () => { start = null; setTimeout(() => { this.dragged = false; }, 0); };
    root.addEventListener("pointerup", end);
    root.addEventListener("pointerleave", end);
    root.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const r = root.getBoundingClientRect();
      this.zoomBy(ev.deltaY > 0 ? 1.15 : 1 / 1.15, (ev.clientX - r.left) / r.width, (ev.clientY - r.top) / r.height);
    }, { passive: false });
  }

  zoomBy(f, fx = 0.5, fy = 0.5) {
    const v = this.view;
    const w = v.w * f, h = v.h * f;
    this.view = { x: v.x + (v.w - w) * fx, y: v.y + (v.h - h) * fy, w, h };
    this.apply();
  }

  fit() {
    const pad = 20;
    const bw = this.box.clientWidth || 800, bh = this.box.clientHeight || 500;
    const w = Math.max(this.size.w + 2 * pad, 300), h = Math.max(this.size.h + 2 * pad, 200);
    const k = Math.max(w / bw, h / bh, 1 / 1.5);
    this.view = { x: -pad, y: -pad, w: bw * k, h: bh * k };
    this.apply();
  }

  apply() {
    const v = this.view;
    this.svgEl.setAttribute("viewBox", `${v.x} ${v.y} ${v.w} ${v.h}`);
    // Text smaller than 5 px is not drawn (app.css): a large graph fitted
    // to the page is boxes and lines until zoomed in.
    this.svgEl.classList.toggle("far", (this.box.clientWidth || 800) / v.w < 0.4);
  }
}

// nodeWidth fits a node's lines: its name, caption and longest status.
function nodeWidth(n) {
  statusWidth ||= textWidth(STATUS_LABEL.waiting, "10.5px system-ui, sans-serif");
  return Math.ceil(Math.max(textWidth(caption(n), "10.5px system-ui, sans-serif"), statusWidth,
    textWidth(n.name, "600 12px system-ui, sans-serif")) + 28);
}
let statusWidth = 0;

// caption is a node's second line: its type, and its compute.
function caption(n) {
  let c = n.type;
  if (n.type === "sweep" && n.sweep) c += ` (${n.sweep.goal} ${n.sweep.metric})`;
  if (n.compute) c += " on " + n.compute;
  return c;
}

function label(e) {
  return e.output === e.input ? e.output : `${e.output} → ${e.input}`;
}

function elkEdge(e) {
  const text = label(e);
  return {
    id: `${e.from}>${e.output}>${e.to}>${e.input}`,
    sources: [e.from], targets: [e.to],
    labels: [{ text, width: Math.ceil(textWidth(text, "10px system-ui, sans-serif")) + 6, height: LABEL_H }],
    from: e.from, to: e.to,
  };
}

function drawEdge(e) {
  const g = svg("g", { class: "edge", "data-from": e.sources[0], "data-to": e.targets[0] });
  for (const s of e.sections || []) {
    const pts = [s.startPoint, ...(s.bendPoints || []), s.endPoint];
    g.append(svg("path", { d: "M" + pts.map((p) => `${p.x},${p.y}`).join("L"), "marker-end": "url(#arrow)" }));
  }
  for (const l of e.labels || []) {
    if (l.x === undefined) continue;
    g.append(svg("rect", { x: l.x, y: l.y, width: l.width, height: l.height }),
      svg("text", { x: l.x + 3, y: l.y + l.height - 3, class: "label" }, l.text));
  }
  return g;
}
