import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { root } from './cli.js';

/** The map of the code: CONTRIBUTING.md's first section, up to "Adding things". */
function map(): string {
  const text = readFileSync(`${root}CONTRIBUTING.md`, 'utf8');
  const start = text.indexOf('## How the code is laid out');
  const end = text.indexOf('## Adding things');
  if (start < 0 || end < start) throw new Error('CONTRIBUTING.md has no "How the code is laid out" section');
  return text.slice(start, end);
}

const OUR_TREES = /^(src|machines|examples|test|bench|docs)\//;

/** Every repository path the map names in backticks (`src/runtime/tree/`, `src/inspect/server*`). */
const namedPaths = (section: string): string[] =>
  [...section.matchAll(/`([^`\s]+)`/g)].map((m) => m[1] as string).filter((name) => OUR_TREES.test(name));

/** A named path exists: a folder (`…/`), a file, or a glob's prefix (`src/inspect/server*`) that names something. */
function exists(name: string): boolean {
  const star = name.indexOf('*');
  if (star < 0) return existsSync(`${root}${name}`);
  const prefix = name.slice(0, star);
  const slash = prefix.lastIndexOf('/');
  const folder = `${root}${prefix.slice(0, slash + 1)}`;
  return existsSync(folder) && readdirSync(folder).some((entry) => entry.startsWith(prefix.slice(slash + 1)));
}

const folders = (dir: string): string[] =>
  readdirSync(`${root}${dir}`, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `${dir}${entry.name}/`);

/** The rooms table: each `src/runtime/<room>/` row with the rooms its last column says it may import. */
function roomsTable(section: string): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const m of section.matchAll(/^\| `src\/runtime\/([a-z-]+)\/` \|.*\| ([^|]+) \|$/gm)) {
    const column = (m[2] as string).trim();
    rows.set(m[1] as string, column === 'nothing of the runtime' ? [] : column.split(/,\s*/));
  }
  return rows;
}

describe("CONTRIBUTING.md's map of the code", () => {
  const section = map();

  it('names only paths that exist', () => {
    const named = namedPaths(section);
    expect(named.length).toBeGreaterThan(20);
    expect(named.filter((name) => !exists(name))).toEqual([]);
  });

  it('names every folder of src/ and of src/runtime/, and every file at the root of src/runtime/', () => {
    const named = new Set(namedPaths(section));
    const runtimeFiles = readdirSync(`${root}src/runtime`)
      .filter((entry) => entry.endsWith('.ts'))
      .map((entry) => `src/runtime/${entry}`);
    const missing = [...folders('src/'), ...folders('src/runtime/'), ...runtimeFiles].filter((p) => !named.has(p));
    expect(missing).toEqual([]);
  });

  it('gives each runtime room the imports .dependency-cruiser.cjs allows it, and each room a rule', () => {
    const require = createRequire(import.meta.url);
    const config = require(`${root}.dependency-cruiser.cjs`) as { forbidden: { name: string }[] };
    const rules = config.forbidden.map((rule) => rule.name);
    const table = roomsTable(section);
    expect([...table.keys()].sort()).toEqual(
      folders('src/runtime/')
        .map((f) => f.split('/')[2])
        .sort(),
    );
    for (const [room, below] of table) {
      const rule = config.forbidden.find((r) => r.name === `runtime-room-${room}`) as
        | { to: { pathNot: string } }
        | undefined;
      expect(rules, `a rule for the ${room} room`).toContain(`runtime-room-${room}`);
      expect(rule?.to.pathNot, `${room} may import what the map says`).toBe(
        `^src/runtime/(${[room, ...below].join('|')})/`,
      );
    }
  });
});
