// porch's page: the run list, and a run's DAG with its step panel. It reads
// porch's API (api/...), which reads Temporal's queries and search
// attributes; nothing is kept here between page loads.
import { DAG } from "./dag.js";
import { Panel } from "./panel.js";
import { el, api, fmtTime, fmtDuration, statusBadge } from "./util.js";

const STATUSES = ["queued", "waiting", "running", "succeeded", "failed", "canceled", "skipped", "reused"];
const STATUS_LABEL = { waiting: "waiting for a worker" };
const RUN_FILTERS = ["running", "succeeded", "failed", "canceled", "terminated", "timed_out"];

// How often a page polls: a running run's steps, the run list.
const POLL_RUN_MS = 1000;
const POLL_LIST_MS = 3000;

const main = document.getElementById("main");
let stopView = () => {};

// start shows the view while it reads the page's configuration.
async function start() {
  window.addEventListener("hashchange", route);
  route();
  try {
    const cfg = await api("api/config");
    document.getElementById("where").textContent = "namespace " + cfg.namespace;
    if (cfg.banner) {
      const b = document.getElementById("banner");
      b.textContent = cfg.banner;
      b.hidden = false;
    }
  } catch (e) {
    window.removeEventListener("hashchange", route);
    stopView();
    main.replaceChildren(el("p", { class: "error" }, String(e)));
  }
}

// route shows the view the URL's fragment names: #/ (runs) or #/run/ID.
function route() {
  stopView();
  const m = location.hash.match(/^#\/run\/([^/?]+)(?:\?step=(.*))?$/);
  if (m) {
    stopView = showRun(decodeURIComponent(m[1]), m[2] ? decodeURIComponent(m[2]) : "");
  } else {
    stopView = showRuns();
  }
}

// showRuns lists runs with filters by status and experiment, refreshed
// every few seconds. It returns what stops it.
function showRuns() {
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const status = el("select", { id: "status-filter" }, el("option", { value: "" }, "any status"),
    ...RUN_FILTERS.map((s) => el("option", { value: s }, s.replace("_", " "))));
  status.value = params.get("status") || "";
  const experiment = el("input", { id: "experiment-filter", placeholder: "experiment", list: "experiments" });
  experiment.value = params.get("experiment") || "";
  const experiments = el("datalist", { id: "experiments" });
  const body = el("tbody");
  const note = el("p", { class: "muted" });
  main.replaceChildren(el("div", { class: "filters" }, "Status", status, "Experiment", experiment, experiments),
    el("table", { id: "runs" }, el("thead", {}, el("tr", {}, ...["Run", "Status", "Pipeline", "Experiment", "Started",
      "Duration", "Submitted by"].map((h) => el("th", {}, h)))), body), note);
  let timer = 0;
  let stopped = false;
  const load = async () => {
    clearTimeout(timer);
    const q = new URLSearchParams();
    if (status.value) q.set("status", status.value);
    if (experiment.value.trim()) q.set("experiment", experiment.value.trim());
    try {
      const res = await api("api/runs?" + q);
      if (stopped) return;
      body.replaceChildren(...res.runs.map(runRow));
      note.textContent = res.runs.length ? "" : "No runs match.";
      const seen = new Set([...experiments.children].map((o) => o.value));
      for (const r of res.runs) {
        if (r.experiment && !seen.has(r.experiment)) {
          seen.add(r.experiment);
          experiments.append(el("option", { value: r.experiment }));
        }
      }
    } catch (e) {
      note.replaceChildren(el("span", { class: "error" }, String(e)));
    }
    if (!stopped) timer = setTimeout(load, POLL_LIST_MS);
  };
  const refilter = () => {
    history.replaceState(null, "", "#/?" + new URLSearchParams({ status: status.value, experiment: experiment.value }));
    load();
  };
  status.addEventListener("change", refilter);
  experiment.addEventListener("change", refilter);
  load();
  return () => { stopped = true; clearTimeout(timer); };
}

function runRow(r) {
  const end = r.end ? new Date(r.end) : new Date();
  const tr = el("tr", { class: "clickable", "data-run": r.id },
    el("td", {}, el("a", { href: "#/run/" + encodeURIComponent(r.id) }, r.id)),
    el("td", {}, statusBadge(r.status)), el("td", {}, r.pipeline), el("td", {}, r.experiment || "-"),
    el("td", {}, fmtTime(r.start)), el("td", {}, fmtDuration(end - new Date(r.start))), el("td", {}, r.user || "-"));
  tr.addEventListener("click", (ev) => {
    if (ev.target.tagName !== "A") location.hash = "#/run/" + encodeURIComponent(r.id);
  });
  return tr;
}

// showRun draws a run's DAG and follows it while it runs; step opens that
// step's panel. It returns what stops it.
function showRun(id, step) {
  const head = el("div", { class: "run-head" }, el("h1", {}, id));
  const legend = el("div", { class: "legend" },
    ...STATUSES.map((s) => el("span", { class: "badge st-" + s }, STATUS_LABEL[s] || s)));
  const dagBox = el("div", { id: "dag" });
  const panelBox = el("aside", { id: "panel", hidden: "" });
  main.replaceChildren(head, legend, el("div", { class: "run-body" }, dagBox, panelBox));
  let stopped = false;
  let timer = 0;
  const panel = new Panel(panelBox, id, (path) => {
    history.replaceState(null, "", "#/run/" + encodeURIComponent(id) + (path ? "?step=" + encodeURIComponent(path) : ""));
    dag.select(path);
  });
  const dag = new DAG(dagBox, (path) => panel.open(path, dag.node(path)));
  const poll = async () => {
    try {
      const st = await api("api/runs/" + encodeURIComponent(id) + "/steps");
      if (stopped) return;
      showHead(head, st.run);
      dag.update(st.steps);
      panel.update(st.steps);
      if (st.run.status === "running") timer = setTimeout(poll, POLL_RUN_MS);
    } catch (e) {
      if (!stopped) timer = setTimeout(poll, POLL_RUN_MS * 3);
    }
  };
  (async () => {
    try {
      const res = await api("api/runs/" + encodeURIComponent(id));
      if (stopped) return;
      showHead(head, res.run);
      await dag.draw(res.graph, res.steps, res.layers);
      panel.update(res.steps);
      if (step) panel.open(step, dag.node(step));
      if (res.run.status === "running") timer = setTimeout(poll, POLL_RUN_MS);
    } catch (e) {
      dagBox.replaceChildren(el("p", { class: "error" }, String(e)));
    }
  })();
  return () => { stopped = true; clearTimeout(timer); panel.close(true); };
}

function showHead(head, run) {
  const end = run.end ? new Date(run.end) : new Date();
  const items = [el("h1", {}, run.id), statusBadge(run.status, "run-status"), el("span", {}, "pipeline " + run.pipeline)];
  if (run.experiment) items.push(el("span", {}, "experiment " + run.experiment));
  if (run.user) items.push(el("span", {}, "by " + run.user));
  items.push(el("span", {}, "started " + fmtTime(run.start)), el("span", {}, (run.end ? "took " : "running for ") +
    fmtDuration(end - new Date(run.start))));
  if (run.link) items.push(el("a", { href: run.link, target: "_blank" }, "Temporal UI"));
  head.replaceChildren(...items);
}

start();
