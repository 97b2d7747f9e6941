import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Debian's chromium, installed by .ci/run. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Whether the browser tests run: always under CI (a missing browser then fails them), else when it is there. */
const browserAvailable = existsSync(CHROMIUM);
export const runBrowserTests = browserAvailable || process.env.CI === 'true';

/** Headless, and quiet on this machine's closed network (see the env notes on headless Chromium). */
export function launchChromium(): Promise<Browser> {
  if (!browserAvailable) {
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
