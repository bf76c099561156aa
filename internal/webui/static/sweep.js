// A sweep's trials: a chart of the primary metric of each trial over time
// (one point per trial that reported it, the best one marked), and a
// sortable table of the trials.
import { el, fmtDuration } from "./util.js";

const BEST = "#d97706";
const POINT = "#2563eb";

// sweepSection draws the chart and table; keep receives the chart (to
// destroy it with the panel), open a trial's path when its row is clicked.
export function sweepSection(sw, keep, open) {
  const canvas = el("canvas", { id: "sweep-chart" });
  const box = el("div", { class: "chart" }, canvas);
  const reported = sw.trials.filter((t) => t.value !== undefined && t.value !== null);
  const points = reported.map((t) => ({ x: new Date(t.at).getTime(), y: t.value, trial: t.trial }));
  const best = points.map((p) => p.trial === sw.best);
  // The canvas is laid out once in the page; Chart.js sizes it then.
  requestAnimationFrame(() => {
    const chart = new Chart(canvas, {
      type: "scatter",
      data: {
        datasets: [{
          label: `${sw.metric} (${sw.goal})`,
          data: points,
          pointRadius: best.map((b) => (b ? 9 : 4)),
          pointStyle: best.map((b) => (b ? "star" : "circle")),
          pointBorderWidth: best.map((b) => (b ? 2.5 : 1)),
          pointBackgroundColor: best.map((b) => (b ? BEST : POINT)),
          pointBorderColor: best.map((b) => (b ? BEST : POINT)),
        }],
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        scales: {
          x: { type: "linear", title: { display: true, text: "time the trial reported it" },
            ticks: { callback: (v) => new Date(v).toLocaleTimeString(undefined, { hour12: false }) } },
          y: { title: { display: true, text: sw.metric } },
        },
        plugins: {
          legend: { display: false },
          tooltip: { callbacks: { label: (c) => `trial ${c.raw.trial}: ${sw.metric} ${c.raw.y}` +
            (c.raw.trial === sw.best ? " (best)" : "") } },
        },
      },
    });
    canvas.dataset.points = String(points.length);
    canvas.dataset.best = String(sw.best);
    keep(chart);
  });
  return [el("h3", {}, `Trials: ${sw.summary}`), box, trialTable(sw, open)];
}

// trialTable lists the trials, sortable by any column (click its header).
function trialTable(sw, open) {
  const names = [];
  for (const t of sw.trials) for (const p of t.params || []) if (!names.includes(p.name)) names.push(p.name);
  const param = (t, n) => (t.params || []).find((p) => p.name === n);
  const cols = [
    { title: "trial", key: (t) => t.trial, show: (t) => String(t.trial) },
    ...names.map((n) => ({ title: n, key: (t) => { const p = param(t, n); return p ? (p.is_number ? p.number : p.text) : ""; },
      show: (t) => { const p = param(t, n); return p ? p.text : "-"; } })),
    { title: "status", key: (t) => t.status, show: (t) => t.status.replace("_", "-") },
    { title: sw.metric, key: (t) => (t.value ?? null), show: (t) => num(t.value) },
    { title: "best " + sw.metric, key: (t) => (t.best_value ?? null), show: (t) => num(t.best_value) },
    { title: "duration", key: (t) => duration(t), show: (t) => fmtDuration(duration(t)) },
  ];
  const body = el("tbody");
  let sortBy = 0, asc = true;
  const heads = cols.map((c, i) => el("th", { class: "sortable", "data-col": c.title, onclick: () => {
    asc = sortBy === i ? !asc : true;
    sortBy = i;
    fill();
  } }, c.title));
  const fill = () => {
    heads.forEach((h, i) => h.classList.toggle("sorted-asc", i === sortBy && asc));
    heads.forEach((h, i) => h.classList.toggle("sorted-desc", i === sortBy && !asc));
    const rows = [...sw.trials].sort((a, b) => compare(cols[sortBy].key(a), cols[sortBy].key(b)) * (asc ? 1 : -1));
    body.replaceChildren(...rows.map((t) => {
      const tr = el("tr", { class: "clickable" + (t.trial === sw.best ? " best" : ""), "data-trial": t.trial, title: "open its log" },
        ...cols.map((c) => el("td", {}, c.show(t))));
      tr.addEventListener("click", () => open(t.path));
      return tr;
    }));
  };
  fill();
  return el("table", { id: "trials" }, el("thead", {}, el("tr", {}, ...heads)), body);
}

function num(v) {
  return typeof v === "number" ? String(Number(v.toPrecision(6))) : "-";
}

function duration(t) {
  const end = t.ended ? new Date(t.ended) : new Date();
  return end - new Date(t.started);
}

// compare orders values, the missing ones last.
function compare(a, b) {
  if (a === b) return 0;
  if (a === null || a === "") return 1;
  if (b === null || b === "") return -1;
  return a < b ? -1 : 1;
}
