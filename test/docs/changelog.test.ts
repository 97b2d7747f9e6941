import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// CHANGELOG.md follows Keep a Changelog, so a reader (or a release script) finds what changed since a version in
// the same place every time.
const text = readFileSync(new URL('../../CHANGELOG.md', import.meta.url), 'utf8');
const SECTIONS = ['Added', 'Changed', 'Deprecated', 'Removed', 'Fixed', 'Security'];

describe('CHANGELOG.md', () => {
  const releases = [...text.matchAll(/^## (.*)$/gm)].map((m) => m[1] ?? '');

  it('opens with [Unreleased], then dated versions, newest first', () => {
    expect(releases[0]).toBe('[Unreleased]');
    const versions = releases.slice(1);
    expect(versions.length).toBeGreaterThan(0);
    for (const heading of versions) expect(heading).toMatch(/^\[\d+\.\d+\.\d+\] - \d{4}-\d{2}-\d{2}$/);
    const dates = versions.map((heading) => heading.slice(-10));
    expect(dates).toEqual([...dates].sort().reverse());
  });

  it('groups entries only under the standard kinds of change', () => {
    const kinds = [...text.matchAll(/^### (.*)$/gm)].map((m) => m[1]);
    expect(kinds.length).toBeGreaterThan(0);
    for (const kind of kinds) expect(SECTIONS).toContain(kind);
  });
});
