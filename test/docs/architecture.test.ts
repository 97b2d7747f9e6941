import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The architecture pages state the current design only: small enough to read in one sitting, and free of the
// history (issue numbers, clock times, "before, …") that belongs in CHANGELOG.md and bench/history.md.

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const folder = join(root, 'docs/architecture');
const MAX_BYTES = 40_000;
const DECISION_MAX_BYTES = 2_000;

/** Files under `dir` whose names match `pattern`, skipping installed packages and build output. */
function filesUnder(dir: string, pattern: RegExp): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    if (name === 'node_modules' || name === 'dist' || name === '.vitepress') return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return filesUnder(path, pattern);
    return pattern.test(name) ? [path] : [];
  });
}

/** The prose of a page: fenced blocks and inline code removed, where a time-like `12:30` may be code. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Every finding of `pattern` in the given text of each page, as `file: match`. */
function findings(files: string[], pattern: RegExp, of: (text: string) => string = (t) => t): string[] {
  return files.flatMap((file) =>
    [...of(readFileSync(file, 'utf8')).matchAll(pattern)].map((m) => `${relative(root, file)}: ${m[0]}`),
  );
}

describe('docs/architecture', () => {
  const files = filesUnder(folder, /\.md$/);

  it('has an entry page and one page per part of the design', () => {
    const pages = files.map((f) => relative(folder, f));
    for (const page of [
      'index.md',
      'layers.md',
      'agent.md',
      'supervision.md',
      'journal.md',
      'hosting.md',
      'xstate.md',
    ]) {
      expect(pages).toContain(page);
    }
  });

  it(`stays within ${MAX_BYTES} bytes in all`, () => {
    const total = files.reduce((sum, f) => sum + statSync(f).size, 0);
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(MAX_BYTES);
  });

  it('names no issue numbers', () => {
    expect(findings(files, /\bissues? \d+|#\d+/gi)).toEqual([]);
  });

  it('gives no clock times outside code', () => {
    expect(findings(files, /\b\d{1,2}:\d{2}\b/g, prose)).toEqual([]);
  });

  it('tells no history', () => {
    expect(findings(files, /\bthis session\b|\bbefore, |\bround \d\b/gi, prose)).toEqual([]);
  });

  it('links only to pages that exist', () => {
    const dead = files.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)]
        .map((m) => m[1] ?? '')
        .filter((target) => !/^[a-z]+:/.test(target))
        .filter((target) => !existsSync(resolve(dirname(file), target)))
        .map((target) => `${relative(root, file)} → ${target}`),
    );
    expect(dead).toEqual([]);
  });

  it('replaces the old single design file, which nothing points to any more', () => {
    const self = fileURLToPath(import.meta.url);
    const sources = ['src', 'machines', 'test', 'bench', 'scripts', 'examples', 'docs']
      .flatMap((dir) => filesUnder(join(root, dir), /\.(ts|js|cjs|mjs|md|json)$/))
      .concat(['CONTRIBUTING.md', '.dependency-cruiser.cjs'].map((f) => join(root, f)))
      .filter((f) => f !== self);
    expect(existsSync(join(root, 'DESIGN.md'))).toBe(false);
    expect(sources.filter((f) => /\bDESIGN\b/.test(readFileSync(f, 'utf8'))).map((f) => relative(root, f))).toEqual([]);
  });

  it('keeps each decision record short and numbered', () => {
    const decisions = files.filter((f) => relative(folder, f).startsWith('decisions/'));
    expect(decisions.length).toBeGreaterThanOrEqual(5);
    for (const file of decisions) {
      expect(relative(folder, file)).toMatch(/^decisions\/(\d{4}-[a-z0-9-]+|index)\.md$/);
      expect(statSync(file).size, relative(root, file)).toBeLessThanOrEqual(DECISION_MAX_BYTES);
    }
  });
});
