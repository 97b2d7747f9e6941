/** What tests that start processes (shell commands, MCP servers) ask of them. */
import { readFileSync } from 'node:fs';
import { until } from './until.js';

/** Whether a process is still running (a zombie waiting to be reaped counts as gone). */
export function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * Polls `check` until it holds, for a bounded while (at least ten seconds, generous for a loaded CI machine, and
 * under the suite's 20 s test timeout): whether it came to hold. What it waits for follows an event the test cannot
 * observe (a process group's kill after a turn ended, a server's log line).
 */
export function eventually(check: () => Promise<boolean> | boolean): Promise<boolean> {
  return until(check, (held) => held, { everyMs: 20, tries: 500 });
}
