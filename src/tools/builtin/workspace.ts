import { constants, type Stats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { allowMatcher, sensitiveReason } from './sensitive.js';

/** A path a built-in tool may not use, with a message written for the model. */
export class WorkspaceError extends Error {
  override readonly name = 'WorkspaceError';
  constructor(
    readonly code:
      | 'invalid'
      | 'outside'
      | 'sensitive'
      | 'not_found'
      | 'dangling'
      | 'loop'
      | 'not_a_file'
      | 'stale'
      | 'io',
    message: string,
  ) {
    super(message);
  }
}

/** Which folders the workspace tools may touch, and which sensitive-looking files they may use anyway. */
export interface WorkspaceOptions {
  /** The folders the tools may touch; relative paths resolve against the first. Default: the current directory. */
  roots?: string | readonly string[];
  /**
   * Globs (workspace-relative) of files that look sensitive (`.env*`, private keys, credentials) but may be used
   * anyway, e.g. `['config/.env.test']`.
   */
  allowSensitive?: readonly string[];
}

/** A checked path: its real location and how tools show it. */
export interface ResolvedPath {
  /** The real path (symlinks resolved; for a new file, its deepest existing ancestor's real path plus the rest). */
  real: string;
  /** Relative to the first root when inside it, else the real absolute path. */
  display: string;
  /** `lstat` of the real path, or undefined when it does not exist yet. */
  stats: Stats | undefined;
}

interface Root {
  given: string;
  real: string;
}

// Linux and macOS limits; checked up front so the model gets a sentence instead of ENAMETOOLONG.
const MAX_PATH = 4096;
const MAX_NAME = 255;

/**
 * The folders an agent's built-in tools may use. Every path is checked twice: lexically (absolute paths and `..`
 * must stay inside a root) and by real path (symlinks, including a root that is itself a link, must resolve inside
 * a root), using the deepest existing ancestor for a file that does not exist yet. Files are then opened and the
 * open descriptor's real path checked again (`verifyOpen`), so a link swapped in between check and use is caught
 * where the platform can say what a descriptor points at.
 */
export class Workspace {
  private readonly roots: Root[];
  private readonly allowed: (relative: string) => boolean;
  /** Per agent: what it last read or wrote, so an edit can refuse a file that changed since. */
  private readonly seen = new Map<string, Map<string, { mtimeMs: number; size: number }>>();

  private constructor(roots: Root[], options: WorkspaceOptions) {
    this.roots = roots;
    this.allowed = allowMatcher(options.allowSensitive ?? []);
  }

  /** Checks that each root exists and is a folder, and resolves its real path once. */
  static async open(options: WorkspaceOptions = {}): Promise<Workspace> {
    const given = options.roots === undefined ? [process.cwd()] : [options.roots].flat();
    if (given.length === 0) throw new WorkspaceError('invalid', 'A workspace needs at least one root folder');
    const roots: Root[] = [];
    for (const root of given) {
      const absolute = path.resolve(root);
      let real: string;
      try {
        real = await fs.realpath(absolute);
      } catch {
        throw new WorkspaceError('not_found', `Workspace folder not found: ${absolute}`);
      }
      if (!(await fs.stat(real)).isDirectory()) {
        throw new WorkspaceError('invalid', `Workspace root is not a folder: ${absolute}`);
      }
      roots.push({ given: absolute, real });
    }
    return new Workspace(roots, options);
  }

  /** The first root's real path: where relative paths and commands start. */
  get cwd(): string {
    return (this.roots[0] as Root).real;
  }

  get rootPaths(): string[] {
    return this.roots.map((root) => root.real);
  }

  /**
   * Resolves a path a model gave and checks it. `write` also refuses a dangling link as the target (writing
   * through it would create the file wherever it points).
   */
  async resolve(input: string, access: 'read' | 'write' = 'read'): Promise<ResolvedPath> {
    checkShape(input);
    const absolute = path.isAbsolute(input) ? path.resolve(input) : path.resolve(this.cwd, input);
    if (!this.roots.some((root) => inside(absolute, root.given) || inside(absolute, root.real))) {
      throw new WorkspaceError('outside', `${input} is outside the workspace (${this.describeRoots()})`);
    }
    const { real, stats } = await realTarget(input, absolute);
    if (!this.roots.some((root) => inside(real, root.real))) {
      throw new WorkspaceError(
        'outside',
        `${input} resolves through a symbolic link to ${real}, outside the workspace (${this.describeRoots()})`,
      );
    }
    const display = this.display(real);
    // The name the model used and the file it lands on: a harmless-looking link to `.env` is still `.env`.
    const reason = sensitiveReason(real) ?? sensitiveReason(absolute);
    if (reason && !this.allowed(display) && !this.allowed(this.display(absolute))) {
      throw new WorkspaceError(
        'sensitive',
        `${input} looks like ${reason}; built-in tools do not open secrets unless the workspace allows it (allowSensitive)`,
      );
    }
    if (stats && !stats.isFile() && !stats.isDirectory()) {
      throw new WorkspaceError('not_a_file', `${input} is not a regular file or folder (a device, pipe or socket)`);
    }
    // `notes.md/` names a folder: the system would refuse it (ENOTDIR), though path.resolve drops the slash.
    if (/\/\.?$/.test(input) && !stats?.isDirectory() && (stats || access === 'write')) {
      throw new WorkspaceError('not_a_file', `${input} is not a folder (a path ending in / names a folder)`);
    }
    if (access === 'write' && stats?.isDirectory()) {
      throw new WorkspaceError('not_a_file', `${input} is a folder`);
    }
    return { real, display, stats };
  }

  /** Whether a real path may be shown and searched by tools that walk folders (sensitive files are skipped). */
  isVisible(real: string): boolean {
    if (!this.roots.some((root) => inside(real, root.real))) return false;
    return sensitiveReason(real) === undefined || this.allowed(this.display(real));
  }

  /** A real path as the tools show it to the model: relative to the first root when inside it, absolute otherwise. */
  display(real: string): string {
    const first = this.cwd;
    if (real === first) return '.';
    if (inside(real, first)) return path.relative(first, real);
    return real;
  }

  /**
   * Checks what an open descriptor really points at (Linux: /proc/self/fd), closing the race between the path
   * check and the open. Elsewhere the path check stands alone.
   */
  async verifyOpen(handle: fs.FileHandle, input: string): Promise<void> {
    let real: string;
    try {
      real = await fs.readlink(`/proc/self/fd/${handle.fd}`);
    } catch {
      return;
    }
    if (!this.roots.some((root) => inside(real, root.real))) {
      throw new WorkspaceError(
        'outside',
        `${input} changed while it was being opened and now points outside the workspace`,
      );
    }
  }

  /** Opens a checked regular file for reading without following a link swapped in as its last component. */
  async openForRead(resolved: ResolvedPath, input: string): Promise<fs.FileHandle> {
    const handle = await fs.open(resolved.real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      await this.verifyOpen(handle, input);
      if (!(await handle.stat()).isFile()) throw new WorkspaceError('not_a_file', `${input} is not a regular file`);
      return handle;
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Remembers the state of a file an agent has just read or written. */
  noteSeen(agentId: string, real: string, stats: Stats): void {
    let files = this.seen.get(agentId);
    if (!files) {
      files = new Map();
      this.seen.set(agentId, files);
    }
    files.set(real, { mtimeMs: stats.mtimeMs, size: stats.size });
  }

  /**
   * Refuses to change an existing file the agent has not read, or that changed after its last read: the change
   * would be based on content the agent has not seen.
   */
  checkFresh(agentId: string, resolved: ResolvedPath, input: string): void {
    const stats = resolved.stats;
    if (!stats) return;
    const last = this.seen.get(agentId)?.get(resolved.real);
    if (!last) {
      throw new WorkspaceError('stale', `${input} exists and you have not read it yet: read it with read_file first`);
    }
    if (last.mtimeMs !== stats.mtimeMs || last.size !== stats.size) {
      throw new WorkspaceError(
        'stale',
        `${input} was modified after you last read it (by someone else, or a command): read it again before changing it`,
      );
    }
  }

  /** Forgets an agent's reads (its run is over). */
  forget(agentId: string): void {
    this.seen.delete(agentId);
  }

  private describeRoots(): string {
    return this.roots.map((root) => root.real).join(', ');
  }
}

function checkShape(input: string): void {
  if (typeof input !== 'string') throw new WorkspaceError('invalid', 'A path must be a string');
  if (input.includes('\0')) throw new WorkspaceError('invalid', 'A path may not contain a NUL character');
  if (input.length > MAX_PATH) {
    throw new WorkspaceError('invalid', `A path may be at most ${MAX_PATH} characters (this one has ${input.length})`);
  }
  const long = input.split(/[\\/]/).find((name) => Buffer.byteLength(name) > MAX_NAME);
  if (long !== undefined) {
    throw new WorkspaceError(
      'invalid',
      `A file name may be at most ${MAX_NAME} bytes (${long.slice(0, 40)}… is longer)`,
    );
  }
}

/** Whether `target` is `root` or inside it (a path-segment test: /ws-evil is not inside /ws). */
function inside(target: string, root: string): boolean {
  if (target === root) return true;
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return target.startsWith(prefix);
}

/**
 * The real path of `absolute`: its deepest existing ancestor's real path plus the components that do not exist
 * yet. A link that points nowhere (dangling) or into a loop is refused wherever it sits on the path.
 */
async function realTarget(input: string, absolute: string): Promise<{ real: string; stats: Stats | undefined }> {
  let existing = absolute;
  const rest: string[] = [];
  for (;;) {
    try {
      await fs.lstat(existing);
      break;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ELOOP') throw loop(input);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
      const parent = path.dirname(existing);
      if (parent === existing) break;
      rest.unshift(path.basename(existing));
      existing = parent;
    }
  }
  let realExisting: string;
  try {
    realExisting = await fs.realpath(existing);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw loop(input);
    if (code === 'ENOENT') {
      throw new WorkspaceError('dangling', `${input} goes through a symbolic link that points to nothing (dangling)`);
    }
    throw error;
  }
  const real = path.join(realExisting, ...rest);
  if (rest.length > 0) return { real, stats: undefined };
  return { real, stats: await fs.lstat(real) };
}

function loop(input: string): WorkspaceError {
  return new WorkspaceError('loop', `${input} goes through a loop of symbolic links`);
}
