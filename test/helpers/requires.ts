/**
 * Tests that need a program this machine may not have (ripgrep, tmux, Chromium). On a developer's machine a
 * missing one skips those tests with a printed reason, so `npm test` is green on a fresh machine; under CI
 * (`CI` set, as CI services and .ci/run set it) a missing one fails the file, so CI never passes by skipping.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { restateServerBinary } from '../../src/restate/dev-server.js';

/** Debian's chromium, installed by .ci/run; CHROMIUM_PATH names another. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const TOOLS = {
  rg: { what: 'ripgrep', found: () => runs('rg', '--version'), install: 'apt-get install ripgrep' },
  tmux: { what: 'tmux', found: () => runs('tmux', '-V'), install: 'apt-get install tmux' },
  chromium: {
    what: `Chromium at ${CHROMIUM}`,
    found: () => existsSync(CHROMIUM),
    install: 'apt-get install chromium, or set CHROMIUM_PATH',
  },
  restate: {
    what: 'restate-server',
    found: () => {
      try {
        return existsSync(restateServerBinary());
      } catch {
        return false;
      }
    },
    install: 'npm install: the @restatedev/restate-server package ships it for this platform',
  },
} as const;

export type Tool = keyof typeof TOOLS;

function runs(command: string, flag: string): boolean {
  return spawnSync(command, [flag], { stdio: 'ignore' }).error === undefined;
}

/** Whether this run is CI's: any value of `CI` but an empty one, `0` or `false`. */
function underCi(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.CI !== undefined && !['', '0', 'false'].includes(env.CI.toLowerCase());
}

/**
 * Whether `tool` is missing here, for `describe.skipIf(missing('tmux'))` / `it.skipIf`. Missing: says which tests
 * skip and why on stderr, or, under CI, throws (the test file fails with the reason). `what` names those tests.
 */
export function missing(tool: Tool, what: string): boolean {
  const { what: program, found, install } = TOOLS[tool];
  if (found()) return false;
  if (underCi()) throw new Error(`${what}: ${program} is missing, and CI must have it (${install})`);
  console.warn(`skipped ${what}: ${program} is not installed (${install})`);
  return true;
}
