import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { freePort } from '../restate/fixtures/workers.js';
import { type Deployment, type Host, restateHost } from './hosts.js';

/**
 * Restate with its worker in a process of its own, which a scenario kills (`host.crash()`: SIGKILL, then a new
 * worker on the same port) at the moment it chooses. The tools' log is a file, which outlives the worker.
 */
export function restateWithKills(): Promise<Host> {
  return restateHost(workerProcess);
}

async function workerProcess(): Promise<Deployment> {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-conformance-'));
  const logFile = join(dir, 'tools.log');
  writeFileSync(logFile, '');
  const port = await freePort();
  let current = await start(port, logFile);
  return {
    url: current.url,
    crash: async () => {
      await current.kill();
      current = await start(port, logFile);
    },
    executed: () => readFileSync(logFile, 'utf8').split('\n').filter(Boolean),
    close: async () => {
      await current.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function start(port: number, logFile: string): Promise<{ url: string; kill(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'worker.ts'), String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, TROUPE_CONFORMANCE_LOG: logFile },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the worker exited (${code}) before listening`)));
    createInterface({ input: child.stdout }).once('line', (url) => resolve({ url, kill }));
  });
}
