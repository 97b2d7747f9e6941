/**
 * README.md and the guides are for users of the product as it is: README stays a five-minute read, no page tells
 * history (issue numbers, clock times), and every file they link or show exists. docs/architecture/ has its own checks.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const README_MAX_BYTES = 12_000;

/** The written pages: docs/api/ is generated from the doc comments, and VitePress checks its links. */
function pages(): string[] {
  const out = [join(root, 'README.md')];
  const generated = join(root, 'docs', 'api');
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || entry.name === 'architecture') continue;
      const path = join(dir, entry.name);
      if (path === generated) continue;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) out.push(path);
    }
  };
  walk(join(root, 'docs'));
  return out;
}

/** What a page says in words: code blocks and inline code left out (a cron line or `12:30` may be code). */
function words(path: string): string {
  return readFileSync(path, 'utf8')
    .replace(/^\s*```[\s\S]*?^\s*```/gm, '')
    .replace(/`[^`\n]*`/g, '');
}

function matches(pattern: RegExp, of: (path: string) => string): string[] {
  return pages().flatMap((path) => [...of(path).matchAll(pattern)].map((m) => `${relative(root, path)}: ${m[0]}`));
}

describe('README.md and the guides', () => {
  it(`keep README.md within ${README_MAX_BYTES} bytes`, () => {
    expect(statSync(join(root, 'README.md')).size).toBeLessThanOrEqual(README_MAX_BYTES);
  });

  it('name no issue numbers and give no clock times or dates', () => {
    expect(matches(/\bissues? #?\d+|#\d+\b|\b\d{1,2}:\d{2}\b|\b20\d\d-\d\d-\d\d\b/gi, words)).toEqual([]);
  });

  it('link and show only files that exist', () => {
    const missing = pages().flatMap((path) =>
      [...words(path).matchAll(/\]\(([^)\s#]+)(#[^)\s]*)?\)/g)]
        .map((m) => m[1] ?? '')
        .filter((target) => !/^[a-z]+:/.test(target) && !target.startsWith('/'))
        .filter((target) => ![target, `${target}.md`].some((file) => existsSync(resolve(dirname(path), file))))
        .map((target) => `${relative(root, path)} → ${target}`),
    );
    expect(missing).toEqual([]);
  });
});
