// shoot.js photographs porch runs in the Temporal web UI with headless Chromium.
//
//   node shoot.js UI_URL RUN_ID OUT_DIR
//
// It writes ui-run-timeline.png (the run's Timeline), ui-parallel-timeline.png
// (the Timeline of the run's parallel step "count") and ui-run-metadata.png (the
// run's User Metadata tab). take.sh starts the server, runs the demo pipeline and
// calls it; see README.md. Needs playwright-core (NODE_PATH) and a Chromium
// (CHROMIUM, default /usr/bin/chromium).
'use strict';

const path = require('path');
const { chromium } = require('playwright-core');

const WIDTH = 1400;
const MIN_HEIGHT = 900;
const MAX_HEIGHT = 1600;

async function main() {
  const [ui, run, outDir] = process.argv.slice(2);
  if (!ui || !run || !outDir) {
    console.error('usage: node shoot.js UI_URL RUN_ID OUT_DIR');
    process.exit(2);
  }
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: WIDTH, height: MIN_HEIGHT } });
    const workflow = (id) => `${ui}/namespaces/default/workflows/${encodeURIComponent(id)}`;

    await timeline(page, workflow(run), path.join(outDir, 'ui-run-timeline.png'));
    await timeline(page, workflow(`${run}/count`), path.join(outDir, 'ui-parallel-timeline.png'));
    await metadata(page, workflow(run), path.join(outDir, 'ui-run-metadata.png'));
  } finally {
    await browser.close();
  }
}

// open loads a workflow's page and waits for the UI to finish fetching it.
async function open(page, url) {
  await page.setViewportSize({ width: WIDTH, height: MIN_HEIGHT });
  await page.goto(url, { waitUntil: 'networkidle' });
  await page.getByTestId('workflow-id-heading').waitFor();
}

// timeline shoots the Timeline tab in oldest-first order, without the
// Input and Result panes above it, so the header and every bar fit in one image.
async function timeline(page, url, file) {
  await open(page, url);
  const order = page.getByRole('button', { name: 'Descending' });
  if (await order.count()) await order.click();
  await page.addStyleTag({ content: '[data-testid="input-and-result"] { display: none !important; }' });
  const box = page.locator('h2', { hasText: /^Timeline$/ }).locator('xpath=../../..');
  await box.locator('text=/ · |•/').first().waitFor();
  await page.waitForLoadState('networkidle');
  // The timeline's frame is as tall as the window: end below its time axis.
  await shoot(page, box.locator('.tick-label'), file);
}

// metadata shoots the User Metadata tab: the summary, the markdown details
// and the current details.
async function metadata(page, url, file) {
  await open(page, url);
  await page.getByTestId('user-metadata-tab').click();
  await page.getByText('Summary', { exact: true }).waitFor();
  await page.waitForLoadState('networkidle');
  await shoot(page, page.locator('main#content'), file);
}

// shoot grows the viewport until the part of the page from the workflow's
// header to the lowest of the elements last finds is visible, then saves that
// part of the main column (the navigation bar on the left is left out).
async function shoot(page, last, file) {
  const needed = await settledHeight(page);
  await page.setViewportSize({ width: WIDTH, height: Math.min(Math.max(needed, MIN_HEIGHT), MAX_HEIGHT) });
  await page.mouse.move(1, 1); // a bar under the pointer would be drawn highlighted
  await page.waitForTimeout(500); // the timeline redraws its bars after a resize
  const top = await page.getByTestId('back-to-workflows').boundingBox();
  const main = await page.locator('main#content').boundingBox();
  const ends = await last.evaluateAll((els) => els.map((e) => e.getBoundingClientRect().bottom));
  const bottom = Math.min(Math.max(...ends) + 16, page.viewportSize().height);
  const clip = { x: main.x, y: top.y - 16, width: main.width, height: bottom - top.y + 16 };
  await page.screenshot({ path: file, clip });
  console.log(`${file}: ${Math.round(clip.width)}x${Math.round(clip.height)}`);
}

// settledHeight waits until the page's height has stopped changing (the
// markdown of the details renders after the tab shows) and returns it.
async function settledHeight(page) {
  const height = () => page.evaluate(() => document.getElementById('content-wrapper').scrollHeight);
  let last = await height();
  for (let same = 0, tries = 0; same < 4 && tries < 40; tries++) {
    await page.waitForTimeout(250);
    const h = await height();
    same = h === last ? same + 1 : 0;
    last = h;
  }
  return last;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
