import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The repository root, for the real configs the fixtures are checked against. */
export const root = fileURLToPath(new URL('../../', import.meta.url));

/** A fixture directory under test/check/fixtures. */
export const fixture = (...parts: string[]): string =>
  fileURLToPath(new URL(`fixtures/${parts.join('/')}`, import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a dev tool's CLI (a script inside node_modules) with the current node, the way `npm run check` runs it.
 * Resolves with the exit code instead of rejecting: the fixtures are meant to fail.
 */
export function runCli(script: string, args: readonly string[], cwd: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [`${root}node_modules/${script}`, ...args],
      { cwd, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') return reject(error);
        resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr });
      },
    );
  });
}

/** Per-test timeout for tests that start a tool: generous, since CI may run them beside the rest of the suite. */
export const TOOL_TIMEOUT = 90_000;
