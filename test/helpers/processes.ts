/** What tests that start processes (shell commands, MCP servers) ask of them. */
import { readFileSync } from 'node:fs';

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
 * Polls `check` until it holds, for a bounded while (about five seconds): whether it came to hold. What it waits for
 * follows an event the test cannot observe (a process group's kill after a turn ended, a server's log line).
 */
export async function eventually(check: () => Promise<boolean> | boolean): Promise<boolean> {
  for (let i = 0; i < 250; i++) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}
