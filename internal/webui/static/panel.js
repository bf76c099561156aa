// The step panel: what a click on a node opens. A step's type, compute,
// environment, attempts, duration, why it ran or was reused, its inputs
// and outputs, its metrics, the tail of its log (followed while it runs),
// a parallel step's mini-batches and a sweep's trials.
import { el, api, fmtTime, fmtDuration, statusBadge } from "./util.js";
import { sweepSection } from "./sweep.js";

// How often an open panel refreshes while its step runs, and follows its log.
const REFRESH_MS = 2000;
const LOG_MS = 1000;

export class Panel {
  constructor(box, runID, onOpen) {
    this.box = box;
    this.run = runID;
    this.onOpen = onOpen;
    this.path = "";
    this.timers = [];
    this.charts = [];
  }

  // open shows the step at path (node is its graph node; none for a
  // sweep's trial).
  async open(path, node) {
    this.close(true);
    this.path = path;
    this.node = node;
    this.box.hidden = false;
    this.box.replaceChildren(el("p", { class: "muted" }, "Loading " + path + "…"));
    this.onOpen(path);
    await this.refresh(true);
  }

  // close hides the panel; leaving is set when the page leaves the run,
  // whose URL is then no longer the panel's to change.
  close(leaving = false) {
    this.timers.forEach(clearTimeout);
    this.timers = [];
    this.destroyCharts();
    if (this.path && !leaving) this.onOpen("");
    this.path = "";
    this.box.hidden = true;
    this.log = null;
  }

  destroyCharts() {
    this.charts.forEach((c) => c.destroy());
    this.charts = [];
  }

  // update is the run's new step states: a panel whose step runs keeps
  // refreshing on its own timer.
  update(steps) {
    const s = steps.find((x) => x.path === this.path);
    if (s && this.status && s.status !== this.status) this.refresh(false);
  }

  async refresh(first) {
    const path = this.path;
    let d;
    try {
      d = await api(`api/runs/${encodeURIComponent(this.run)}/step?path=${encodeURIComponent(path)}`);
    } catch (e) {
      if (path === this.path) this.box.replaceChildren(this.closeButton(), el("p", { class: "error" }, String(e)));
      return;
    }
    if (path !== this.path) return;
    this.status = d.status;
    const logBox = this.log ? this.log.pre : null;
    this.destroyCharts();
    this.box.replaceChildren(...this.sections(d));
    if (d.log) this.followLog(d, first ? null : logBox);
    if (d.status === "running" || d.status === "waiting") {
      this.timers.push(setTimeout(() => this.refresh(false), REFRESH_MS));
    }
  }

  closeButton() {
    return el("button", { class: "close", onclick: () => this.close(), title: "close" }, "×");
  }

  sections(d) {
    const n = this.node || {};
    const started = d.started ? new Date(d.started) : null;
    const ended = d.ended ? new Date(d.ended) : new Date();
    const facts = [
      ["type", n.type || "command (a sweep's trial)"],
      ["compute", n.compute || (n.queue ? "default" : "")],
      ["task queue", n.queue],
      ["environment", n.environment],
      ["command", n.command ? el("code", {}, n.command) : ""],
      ["attempt", d.attempt ? String(d.attempt) : ""],
      ["started", started ? fmtTime(d.started) : ""],
      ["duration", started ? fmtDuration(ended - started) : ""],
      ["why", why(d)],
      ["progress", d.detail],
      ["error", d.error ? el("span", { class: "error" }, d.error) : ""],
      ["workflow", d.link ? el("a", { href: d.link, target: "_blank" }, d.workflow_id) : d.workflow_id],
    ].filter(([, v]) => v);
    const out = [
      this.closeButton(),
      el("h2", {}, d.path + " ", statusBadge(d.status, "step-status")),
      el("dl", {}, ...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
    ];
    if (d.parallel) out.push(...parallelSection(d.parallel));
    if (d.sweep) out.push(...sweepSection(d.sweep, (c) => this.charts.push(c), (p) => this.openTrial(p)));
    out.push(...ports("Inputs", d.inputs), ...ports("Outputs", d.outputs));
    if (d.metrics && d.metrics.length) out.push(...metricsSection(d.metrics));
    if (d.log) {
      this.log = { pre: el("pre", { class: "log", id: "log" }), offset: -1, where: el("p", { class: "muted" }) };
      out.push(el("h3", {}, "Log"), this.log.where, this.log.pre);
    }
    return out;
  }

  openTrial(path) {
    this.open(path, null);
  }

  // followLog shows the log's tail, then what is appended while the step
  // runs. old is the previous refresh's log box, whose text is kept.
  async followLog(d, old) {
    const log = this.log;
    if (old) {
      log.pre.textContent = old.textContent;
      log.offset = Number(old.dataset.offset);
    }
    const path = this.path;
    const read = async () => {
      if (this.log !== log || path !== this.path) return;
      const q = log.offset >= 0 ? `&offset=${log.offset}` : "";
      try {
        const r = await api(`api/runs/${encodeURIComponent(this.run)}/log?path=${encodeURIComponent(path)}${q}`);
        if (this.log !== log) return;
        log.where.textContent = (r.cut ? "the end of " : "") + (r.where || "");
        const atEnd = log.pre.scrollTop + log.pre.clientHeight >= log.pre.scrollHeight - 4;
        if (r.text) log.pre.append(r.text);
        log.offset = r.offset;
        log.pre.dataset.offset = String(r.offset);
        if (atEnd) log.pre.scrollTop = log.pre.scrollHeight;
      } catch (e) {
        log.where.textContent = String(e);
      }
      if (this.status === "running" || this.status === "waiting") this.timers.push(setTimeout(read, LOG_MS));
    };
    await read();
  }
}

// why says why a step ran, or whose outputs it reused.
function why(d) {
  const r = d.reuse;
  if (d.status === "reused" && r) return `reused the outputs of step ${r.from_step} of run ${r.from_run}`;
  if (r && r.reason) return "ran: " + r.reason;
  return "";
}

function ports(title, list) {
  if (!list || !list.length) return [];
  return [el("h3", {}, title), el("table", { class: "ports" },
    el("thead", {}, el("tr", {}, el("th", {}, "name"), el("th", {}, "value"), el("th", {}, "on this host"))),
    el("tbody", {}, ...list.map((p) => el("tr", {},
      el("td", {}, p.name, p.type ? el("div", { class: "muted" }, p.type) : ""),
      el("td", {}, p.value || "-", p.from ? el("div", { class: "muted" }, "from " + p.from) : ""),
      el("td", {}, p.local || "-")))))];
}

function metricsSection(metrics) {
  const num = (v) => (typeof v === "number" ? Number(v.toPrecision(6)) : String(v));
  return [el("h3", {}, "Metrics"), el("table", { id: "metrics" },
    el("thead", {}, el("tr", {}, ...["metric", "last", "min", "max", "reports"].map((h) => el("th", {}, h)))),
    el("tbody", {}, ...metrics.map((m) => {
      const vals = m.points.map((p) => p.value).filter((v) => typeof v === "number");
      return el("tr", {}, el("td", {}, m.key), el("td", {}, num(m.points[m.points.length - 1].value)),
        el("td", {}, vals.length ? num(Math.min(...vals)) : "-"), el("td", {}, vals.length ? num(Math.max(...vals)) : "-"),
        el("td", {}, String(m.points.length)));
    })))];
}

// parallelSection is a parallel step's progress bar and failed mini-batches.
function parallelSection(p) {
  const total = Math.max(p.batches, 1);
  const part = (cls, n) => el("span", { class: cls, style: `width:${(100 * n) / total}%`, title: `${n} ${cls}` });
  const out = [el("h3", {}, "Mini-batches"),
    el("div", { class: "bar", id: "minibatches", "data-succeeded": p.succeeded, "data-failed": p.failed,
      "data-running": p.running, "data-pending": p.pending },
    part("succeeded", p.succeeded), part("failed", p.failed), part("running", p.running), part("pending", p.pending)),
    el("p", {}, `${p.succeeded} succeeded, ${p.failed} failed, ${p.running} running, ${p.pending} pending of ${p.batches} (${p.phase})`)];
  if (p.failed_batches && p.failed_batches.length) {
    out.push(el("table", { id: "failed-batches" },
      el("thead", {}, el("tr", {}, ...["mini-batch", "attempt", "node", "error"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...p.failed_batches.map((b) => el("tr", {}, el("td", {}, String(b.batch)),
        el("td", {}, String(b.attempt)), el("td", {}, b.node || "-"), el("td", { class: "error" }, b.error))))));
  }
  return out;
}
