// Drives porch's web page in headless Chromium for TestPageInBrowser:
//   node check.js MODE BASE RUN ARGS_JSON
// MODE live checks a running run as it goes on (ARGS: gate file, palette,
// screenshot folder), reused a run whose steps were reused (ARGS: the
// first run, palette, screenshot folder), large the load of a 500-step run.
// It prints one line of JSON (figures) and exits non-zero with the failed
// check's message.
const fs = require("fs");
const path = require("path");
const { chromium } = require("playwright-core");

const [mode, base, run, argsJSON] = process.argv.slice(2);
const args = JSON.parse(argsJSON);
const TIMEOUT = 120000;

function check(ok, msg) {
  if (!ok) throw new Error(msg);
}

function rgb(hex) {
  const n = parseInt(hex.slice(1), 16);
  return `rgb(${n >> 16}, ${(n >> 8) & 255}, ${n & 255})`;
}

const node = (p) => `g[data-path="${p}"]`;

async function statusOf(page, p) {
  return page.getAttribute(node(p), "data-status");
}

async function waitStatus(page, p, want) {
  await page.waitForFunction(([sel, want]) => {
    const g = document.querySelector(sel);
    return g && want.includes(g.getAttribute("data-status"));
  }, [node(p), [].concat(want)], { timeout: TIMEOUT });
}

// colours are a node's rect fill and stroke as the browser computed them.
async function colours(page, p) {
  return page.$eval(node(p) + " > rect", (r) => {
    const s = getComputedStyle(r);
    return { fill: s.fill, stroke: s.stroke, dash: s.strokeDasharray };
  });
}

async function checkColour(page, p, status) {
  const c = await colours(page, p);
  const want = args.palette[status];
  check(c.fill === rgb(want.Fill) && c.stroke === rgb(want.Stroke),
    `step ${p} (${status}) is drawn ${c.fill}/${c.stroke}, want ${rgb(want.Fill)}/${rgb(want.Stroke)}`);
  return c;
}

async function open(page, p) {
  await page.click(node(p));
  await page.waitForFunction((p) => {
    const h = document.querySelector("#panel h2");
    return h && h.textContent.startsWith(p + " ");
  }, p, { timeout: TIMEOUT });
}

async function shot(page, name) {
  if (args.shots) await page.screenshot({ path: path.join(args.shots, name) });
}

async function live(page) {
  await page.goto(`${base}#/run/${run}`);
  await page.evaluate(() => { window.__notReloaded = true; });
  await page.waitForSelector("svg#graph", { timeout: TIMEOUT });
  const leaves = await page.$$eval("g.node", (gs) => gs.map((g) => g.getAttribute("data-path")));
  check(JSON.stringify(leaves.sort()) === JSON.stringify(["after_flaky", "flaky", "prepare", "report/publish", "report/read",
    "score", "train", "tune"]), "the graph's steps: " + leaves);
  check(await page.$$eval("g.cluster", (gs) => gs.length) === 1, "the nested pipeline is a box");
  check(await page.getAttribute("#dag", "data-layout") === "elk", "a small run is laid out by elkjs");
  const edges = await page.$$eval("g.edge", (gs) => gs.map((g) => g.getAttribute("data-from") + ">" + g.getAttribute("data-to") +
    ":" + g.textContent));
  check(edges.length === 7, "7 edges: " + edges);
  check(edges.includes("flaky>after_flaky:result → r"), "the edge flaky → after_flaky is labelled result → r: " + edges);
  check(edges.includes("train>report:model"), "an edge ends at the nested pipeline: " + edges);

  await waitStatus(page, "prepare", "running");
  await checkColour(page, "prepare", "running");
  check(await statusOf(page, "train") === "queued", "train waits for prepare");
  await checkColour(page, "train", "queued");
  await open(page, "prepare");
  await page.waitForFunction(() => (document.querySelector("#log") || {}).textContent?.includes("waiting for the gate"),
    null, { timeout: TIMEOUT });
  await shot(page, "ui-porch-run.png");

  fs.writeFileSync(args.gate, "open");
  // The log follows the running step, the nodes change colour: no reload.
  await page.waitForFunction(() => document.querySelector("#log").textContent.includes("gate open"), null, { timeout: TIMEOUT });
  await waitStatus(page, "prepare", "succeeded");
  await checkColour(page, "prepare", "succeeded");
  await page.waitForFunction(() => (document.querySelector("#metrics") || {}).textContent?.includes("0.125"), null, { timeout: TIMEOUT });
  await page.waitForFunction(() => ["succeeded", "failed"].includes(document.querySelector("#run-status")?.textContent),
    null, { timeout: TIMEOUT });
  check(await page.evaluate(() => window.__notReloaded), "the page was reloaded");
  const want = { train: "succeeded", score: "succeeded", tune: "succeeded", flaky: "failed", after_flaky: "skipped",
    "report/read": "succeeded", "report/publish": "succeeded" };
  for (const [p, st] of Object.entries(want)) {
    await waitStatus(page, p, st);
    await checkColour(page, p, st);
  }
  check((await colours(page, "after_flaky")).dash !== "none", "a skipped step is dashed");
  check(await page.textContent("#run-status") === "failed", "the run failed on flaky");

  await open(page, "score");
  await page.waitForSelector("#minibatches", { timeout: TIMEOUT });
  const bar = await page.$eval("#minibatches", (b) => ({ ...b.dataset }));
  check(bar.succeeded === "5" && bar.failed === "1" && bar.running === "0" && bar.pending === "0", "mini-batches: " + JSON.stringify(bar));
  check((await page.textContent("#failed-batches")).includes("cannot score bad.txt"), "the failed mini-batch's error is listed");
  await shot(page, "ui-porch-parallel.png");

  await open(page, "tune");
  await page.waitForSelector("#sweep-chart[data-points]", { timeout: TIMEOUT });
  const chart = await page.$eval("#sweep-chart", (c) => {
    const ds = Chart.getChart(c).data.datasets[0];
    const best = ds.pointStyle.indexOf("star");
    return { points: ds.data.length, stars: ds.pointStyle.filter((s) => s === "star").length, bestY: ds.data[best].y,
      bestTrial: c.dataset.best };
  });
  check(chart.points === 3, "one point per trial: " + JSON.stringify(chart));
  check(chart.stars === 1 && chart.bestY === 0.9, "the best trial (acc 0.9) is marked: " + JSON.stringify(chart));
  const best = await page.$eval("#trials tr.best", (tr) => tr.getAttribute("data-trial"));
  check(best === chart.bestTrial, `the table marks trial ${best}, the chart ${chart.bestTrial}`);
  await page.click('#trials th[data-col="acc"]');
  const accs = await page.$eval("#trials", (table) => {
    const col = [...table.querySelectorAll("th")].findIndex((th) => th.dataset.col === "acc");
    return [...table.querySelectorAll("tbody tr")].map((tr) => tr.children[col].textContent);
  });
  check(JSON.stringify(accs) === JSON.stringify(["0.2", "0.5", "0.9"]), "sorted by acc: " + accs);
  await shot(page, "ui-porch-sweep.png");

  await page.click('[data-toggle="report"]');
  await page.waitForSelector(node("report") + ".node", { timeout: TIMEOUT });
  check(await page.$$eval("g.cluster", (gs) => gs.length) === 0, "the nested pipeline collapsed");
  check(!(await page.$(node("report/read"))), "its steps are hidden");
  return { edges: edges.length };
}

async function reused(page) {
  await page.goto(`${base}#/run/${run}`);
  await page.waitForSelector("svg#graph", { timeout: TIMEOUT });
  for (const [p, st] of Object.entries({ prepare: "reused", train: "reused", score: "reused", flaky: "failed", after_flaky: "skipped" })) {
    await waitStatus(page, p, st);
    await checkColour(page, p, st);
  }
  await open(page, "prepare");
  await page.waitForFunction((first) => document.querySelector("#panel").textContent
    .includes(`reused the outputs of step prepare of run ${first}`), args.first, { timeout: TIMEOUT });
  await shot(page, "ui-porch-reused.png");

  await page.goto(`${base}#/`);
  const rows = async () => {
    await page.waitForTimeout(300);
    await page.waitForSelector("#runs tbody", { state: "attached", timeout: TIMEOUT });
    return page.$$eval("#runs tbody tr", (trs) => trs.map((tr) => tr.getAttribute("data-run")));
  };
  await page.waitForSelector(`#runs tr[data-run="${run}"]`, { timeout: TIMEOUT });
  await shot(page, "ui-porch-runs.png");
  await page.selectOption("#status-filter", "failed");
  await page.waitForFunction(() => location.hash.includes("status=failed"));
  await page.waitForFunction((ids) => ids.every((id) => document.querySelector(`#runs tr[data-run="${id}"]`)),
    [run, args.first], { timeout: TIMEOUT });
  await page.selectOption("#status-filter", "succeeded");
  await page.waitForFunction((id) => !document.querySelector(`#runs tr[data-run="${id}"]`), run, { timeout: TIMEOUT });
  check((await rows()).every((r) => r !== args.first), "a failed run is not listed as succeeded");
  await page.selectOption("#status-filter", "");
  await page.fill("#experiment-filter", "no-such-experiment");
  await page.press("#experiment-filter", "Enter");
  await page.waitForFunction(() => document.querySelectorAll("#runs tbody tr").length === 0, null, { timeout: TIMEOUT });
  await page.fill("#experiment-filter", "ui-test");
  await page.press("#experiment-filter", "Enter");
  await page.waitForFunction((ids) => ids.every((id) => document.querySelector(`#runs tr[data-run="${id}"]`)),
    [run, args.first], { timeout: TIMEOUT });
  return {};
}

// large measures a 500-step run's page: the time from navigation to the
// graph drawn with every step's status, how long placing and drawing it
// took (the first time and on a reload), how long elkjs takes to lay the same graph out in the same page
// (the baseline), the longest task on the main thread while the page
// polls, and a click.
async function large(page) {
  await page.addInitScript(() => {
    // The longest task that starts once the graph is drawn.
    window.__longest = 0;
    new PerformanceObserver((list) => {
      const drawn = performance.getEntriesByName("porch:graph-drawn")[0];
      for (const e of list.getEntries()) {
        if (drawn && e.startTime > drawn.startTime) window.__longest = Math.max(window.__longest, e.duration);
      }
    }).observe({ type: "longtask", buffered: true });
  });
  await page.goto(`${base}#/run/${run}`);
  await page.waitForFunction((n) => document.querySelectorAll("g.node[data-status]").length === n &&
    performance.getEntriesByName("porch:graph-drawn").length > 0, args.steps, { timeout: TIMEOUT });
  const loadMs = await page.evaluate(() => performance.getEntriesByName("porch:graph-drawn")[0].startTime);
  const layoutMs = Number(await page.getAttribute("#dag", "data-layout-ms"));
  check(await page.getAttribute("#dag", "data-layout") === "layers", "a large run is placed from its layers");
  const edges = await page.$$eval("g.edge path", (ps) => ps.length);
  check(edges === args.steps - 1, `${edges} edges drawn, want ${args.steps - 1}`);
  // Five seconds of live polling, then a click on a step.
  await page.waitForTimeout(5000);
  const clickMs = await page.evaluate(async (sel) => {
    const t0 = performance.now();
    document.querySelector(sel).dispatchEvent(new MouseEvent("click", { bubbles: true }));
    while (!document.querySelector("#panel h2")) await new Promise((r) => requestAnimationFrame(r));
    return performance.now() - t0;
  }, node(args.click) + " > rect");
  const longestTaskMs = await page.evaluate(() => window.__longest);
  // Last, the baseline, in the same page: elkjs laying the same graph out as
  // the page would without layers.
  const elkMs = await page.evaluate(async (run) => {
    const res = await (await fetch("api/runs/" + run)).json();
    const elk = new ELK({ workerUrl: "static/vendor/elk-worker.min.js" });
    // The worker started and its code compiled first: timed is the layout.
    await elk.layout({ id: "warm", children: [{ id: "a", width: 1, height: 1 }] });
    const t0 = performance.now();
    await elk.layout({
      id: "root",
      layoutOptions: { "elk.algorithm": "layered", "elk.direction": "RIGHT", "elk.layered.thoroughness": "2",
        "elk.edgeLabels.placement": "CENTER" },
      children: res.graph.nodes.map((n) => ({ id: n.path, width: 150, height: 54 })),
      edges: res.graph.edges.map((e, i) => ({ id: "e" + i, sources: [e.from], targets: [e.to],
        labels: [{ text: e.output, width: 60, height: 14 }] })),
    });
    const ms = performance.now() - t0;
    elk.terminateWorker();
    return ms;
  }, run);
  await shot(page, "ui-porch-500.png");
  // elkjs was timed warm (its worker started, its code compiled); the
  // page's first placing ran cold, while the page loaded. It is timed
  // warm too, on a reload, and the faster of the two is compared.
  await page.reload();
  await page.waitForFunction((n) => document.querySelectorAll("g.node[data-status]").length === n &&
    performance.getEntriesByName("porch:graph-drawn").length > 0, args.steps, { timeout: TIMEOUT });
  const warmLayoutMs = Number(await page.getAttribute("#dag", "data-layout-ms"));
  return { loadMs, firstLayoutMs: layoutMs, layoutMs: Math.min(layoutMs, warmLayoutMs), elkMs, clickMs, longestTaskMs };
}

(async () => {
  const browser = await chromium.launch({
    executablePath: args.chromium,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  try {
    const out = await { live, reused, large }[mode](page);
    check(errors.length === 0, "errors in the page: " + errors.join("; "));
    console.log(JSON.stringify(out));
  } catch (e) {
    console.error(`${mode}: ${e.message}` + (errors.length ? ` (page errors: ${errors.join("; ")})` : ""));
    await page.screenshot({ path: path.join(args.failDir, `failed-${mode}.png`) }).catch(() => {});
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
})();
