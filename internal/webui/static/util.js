// Small helpers the page's modules share.

// el makes an element: attrs are attributes (on* keys are listeners),
// children are nodes or text.
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  e.append(...children.filter((c) => c !== undefined && c !== null));
  return e;
}

const SVG = "http://www.w3.org/2000/svg";

// svg makes an SVG element with attributes.
export function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  e.append(...children);
  return e;
}

// api fetches a JSON answer of porch's API; its error message when it
// failed.
export async function api(path) {
  const res = await fetch(path, { headers: { Accept: "application/json" } });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.error || res.status + " " + res.statusText);
  return body;
}

export function fmtTime(t) {
  if (!t) return "-";
  const d = new Date(t);
  return d.toLocaleString(undefined, { hour12: false });
}

// fmtDuration is 0.3s, 12.5s, 2m05s, 1h02m03s, as porch's CLI writes them.
export function fmtDuration(ms) {
  if (!(ms >= 0)) return "-";
  const s = ms / 1000;
  if (s < 60) return s.toFixed(1) + "s";
  const r = Math.round(s);
  const h = Math.floor(r / 3600), m = Math.floor(r / 60) % 60, sec = r % 60;
  const pad = (n) => String(n).padStart(2, "0");
  return h > 0 ? `${h}h${pad(m)}m${pad(sec)}s` : `${m}m${pad(sec)}s`;
}

// statusBadge is a status in its colours.
export function statusBadge(status, id) {
  const cls = status === "early_terminated" ? "canceled" : status;
  return el("span", { class: "badge st-" + cls, id }, status === "waiting" ? "waiting for a worker" : status.replace("_", " "));
}

// textWidth measures text as the graph draws it.
const canvas = document.createElement("canvas").getContext("2d");
let canvasFont = "";
export function textWidth(text, font = "12px system-ui, sans-serif") {
  // Setting a font parses it: a large graph measures a thousand texts.
  if (font !== canvasFont) canvas.font = canvasFont = font;
  return canvas.measureText(text).width;
}
