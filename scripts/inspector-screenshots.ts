/**
 * Refreshes the inspector's screenshots under docs/ (`npm run docs:screenshots`): the `--demo` swarm as a new user
 * sees it in headless Chromium. Needs /usr/bin/chromium (or CHROMIUM_PATH).
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { runDemo } from '../src/cli/demo.js';
import { startInspectorServer } from '../src/inspect/server.js';
import { CHROMIUM } from '../test/helpers/requires.js';
import { launchChromium } from '../test/inspect/browser.js';

const docs = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs');
const shot = (name: string) => {
  console.log(`wrote docs/${name}`);
  return join(docs, name);
};

const server = await startInspectorServer();
const lines: string[] = [];
const demo = runDemo({ url: server.connectUrl, log: (line) => lines.push(line) });
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
  page.setDefaultTimeout(30_000);
  await page.goto(server.pageUrl);
  const approve = page.locator('[data-testid="approval"] button[data-action="approve"]:not([disabled])');
  await approve.nth(2).waitFor();
  await page.waitForTimeout(500);
  // 1. The swarm waiting for a person: the lead's chart, the subagents' calls, the batch.
  await page.screenshot({ path: shot('inspector.png') });

  // 2. What a plain headless screenshot paints at once (the 4 s of virtual time).
  await promisify(execFile)(CHROMIUM, [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--window-size=1500,900',
    `--screenshot=${shot('inspector-first-paint.png')}`,
    '--virtual-time-budget=4000',
    server.pageUrl,
  ]);

  // 3. Controlling a subagent: steered from the page, its chart at 100 % around where it is.
  const sub = page.locator('[data-testid="actor"][data-kind="agent"]').nth(2);
  await sub.click();
  await page.locator('[data-testid="steer-text"]').fill('Keep the upgrade guide under a page.');
  await page.locator('button[data-action="steer"]').click();
  await page.locator('[data-testid="command-outcome"][data-state="applied"]').waitFor();
  await page.locator('[data-testid="zoom-active"]').click();
  await page.waitForTimeout(300);
  await page.screenshot({ path: shot('inspector-control.png') });

  // 4. After the answers: who answered how, the tasks settled, the transitions the lead's last step took.
  await approve.first().click();
  await approve.first().click();
  await page.locator('[data-testid="approval"] button[data-action="deny"]').first().click();
  await demo;
  await page.locator('[data-testid="actor"][data-name="lead"]').click();
  await page.locator('[data-testid="batch"][data-open="false"]').waitFor();
  await page.waitForTimeout(500);
  await page.screenshot({ path: shot('inspector-answered.png') });
} finally {
  await browser.close();
  await server.close();
}
