import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { connectInspector, startInspectorServer } from '../../src/index.js';
import type { InspectorConnection } from '../../src/inspect/connect.js';
import type { InspectorServer } from '../../src/inspect/server.js';
import { CHROMIUM } from '../helpers/requires.js';

/** Headless, and quiet on this machine's closed network (see the env notes on headless Chromium). */
export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `No browser at ${CHROMIUM}: install Debian's chromium (\`apt-get install -y chromium\`, as .ci/run does)`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** An inspector server with one program connected to it (as run `runId`), and a headless page to open it in. */
export interface InspectorInBrowser {
  readonly server: InspectorServer;
  readonly connection: InspectorConnection;
  readonly browser: Browser;
  /** Not yet on the inspector: a test opens it (`open()`) once its agents exist, or before, as it needs. */
  readonly page: Page;
  /** Uncaught errors of the page's scripts. */
  readonly errors: string[];
  open(): Promise<void>;
  /** Every address the page asked for that is not the inspector's own (the page must load nothing else). */
  foreignRequests(): string[];
  /** Closes the browser, the program's connection and the server (stop the agents first). */
  close(): Promise<void>;
}

export async function inspectorInBrowser(runId: string): Promise<InspectorInBrowser> {
  const server = await startInspectorServer();
  const connection = await connectInspector({ url: server.connectUrl, runId });
  const browser = await launchChromium().catch(async (error: unknown) => {
    await connection.close();
    await server.close();
    throw error;
  });
  const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
  page.setDefaultTimeout(30_000);
  const errors: string[] = [];
  const requests: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('request', (request) => requests.push(request.url()));
  const origin = new URL(server.pageUrl).origin;
  const own = [origin, origin.replace('http', 'ws')];
  return {
    server,
    connection,
    browser,
    page,
    errors,
    open: async () => {
      await page.goto(server.pageUrl);
    },
    foreignRequests: () => requests.filter((url) => !own.some((prefix) => url.startsWith(prefix))),
    close: async () => {
      await browser.close();
      await connection.close();
      await server.close();
    },
  };
}
