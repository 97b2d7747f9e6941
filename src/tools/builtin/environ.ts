import fs from 'node:fs';
import { isMainThread } from 'node:worker_threads';
import { isSecretVariable, knownSecrets, rememberEnvironmentSecrets } from '../../protocol/index.js';

/**
 * What keeps this process's secrets from the processes it starts (commands, MCP servers).
 *
 * Their environment is made without the secret variables (`withoutSecrets`). That alone does not hold: a child
 * running as the same user reads its parent's environment from `/proc/<pid>/environ` (or `ps e`), which shows the
 * block the kernel gave this process at its start, whatever `process.env` says since. So `hideOwnSecrets` blanks
 * the secret values in that block: each secret variable is set again first (libc then keeps a copy on the heap,
 * which is what `process.env` reads from then on), and the old bytes are overwritten through `/proc/self/mem`.
 *
 * What this does not cover, and redaction by value (`redactToolResult`) is there for: the environment of the
 * processes above this one (a shell or `npx` that launched it with the keys), and this process's memory, which a
 * same-user child may read through `/proc/<pid>/mem` or ptrace where the kernel allows it (root, or Yama's
 * `ptrace_scope` 0).
 */

/** A copy of an environment without its secret variables, nor any variable holding a known secret. */
export function withoutSecrets(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const secrets = new Set(knownSecrets());
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (!isSecretVariable(name, value) && !(value !== undefined && secrets.has(value))) out[name] = value;
  }
  return out;
}

/**
 * Blanks the values of this process's secret variables in its initial environment block (Linux), and reads the
 * environment's secrets again for redaction. Returns how many values were blanked; 0 where there is no
 * `/proc/self/mem` to write (another OS, a sandbox that forbids it): redaction by value is then all that holds.
 */
export function hideOwnSecrets(): number {
  rememberEnvironmentSecrets();
  let fd: number | undefined;
  try {
    const block = environBlock();
    if (!block) return 0;
    fd = fs.openSync('/proc/self/mem', 'r+');
    const bytes = Buffer.alloc(block.end - block.start);
    fs.readSync(fd, bytes, 0, bytes.length, block.start);
    const secrets = new Set(knownSecrets());
    let hidden = 0;
    let offset = 0;
    while (offset < bytes.length) {
      let end = bytes.indexOf(0, offset);
      if (end === -1) end = bytes.length;
      const entry = bytes.toString('utf8', offset, end);
      const equals = entry.indexOf('=');
      const name = entry.slice(0, equals);
      const value = entry.slice(equals + 1);
      const valueStart = offset + Buffer.byteLength(entry.slice(0, equals + 1));
      if (equals > 0 && value !== '' && (isSecretVariable(name, value) || secrets.has(value))) {
        if (blank(fd, name, value, block.start + valueStart, end - valueStart)) hidden++;
      }
      offset = end + 1;
    }
    return hidden;
  } catch {
    return 0;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Where the kernel keeps this process's initial environment: fields 50 and 51 of /proc/self/stat. */
function environBlock(): { start: number; end: number } | undefined {
  // A worker thread's process.env is its own copy: setting a variable there does not move libc's, which the
  // blanking would then erase for the whole process.
  if (process.platform !== 'linux' || !isMainThread) return undefined;
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const start = Number(fields[47]);
  const end = Number(fields[48]);
  return Number.isSafeInteger(start) && Number.isSafeInteger(end) && end > start ? { start, end } : undefined;
}

/**
 * Overwrites one value in the block once the variable lives elsewhere. If the variable still read from the block
 * (a libc that does not copy on set), the bytes are put back: the secret stays readable rather than lost.
 */
function blank(fd: number, name: string, value: string, at: number, length: number): boolean {
  const before = process.env[name];
  if (before === value) process.env[name] = value;
  const original = Buffer.alloc(length);
  fs.readSync(fd, original, 0, length, at);
  fs.writeSync(fd, Buffer.alloc(length), 0, length, at);
  if (process.env[name] === before) return true;
  fs.writeSync(fd, original, 0, length, at);
  return false;
}
