import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderMarkdown } from '../bench/report.js';

// `npm run bench` rewrites bench/results.md whole; the history of the figures lives beside it in bench/history.md,
// and every generated results.md must point there.
describe('bench history', () => {
  const history = new URL('../bench/history.md', import.meta.url);

  it('is linked from every generated results.md, and from the committed one', () => {
    const generated = renderMarkdown({ date: '', node: '', cpus: '', scale: 'smoke', measurements: [] });
    expect(generated).toContain('](history.md)');
    expect(readFileSync(new URL('../bench/results.md', import.meta.url), 'utf8')).toContain('](history.md)');
    expect(existsSync(history)).toBe(true);
  });
});
