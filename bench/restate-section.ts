import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * bench/results.md holds `npm run bench`'s tables and, at its end, the last report of `npm run bench:restate`: each
 * command rewrites its own part and keeps the other's.
 */
const RESULTS_MD = fileURLToPath(new URL('./results.md', import.meta.url));
const HEADING = '\n## W3 on Restate';

/** The Restate part of results.md as it stands (empty when there is none), from its heading to the end. */
export function restateSection(): string {
  const markdown = existsSync(RESULTS_MD) ? readFileSync(RESULTS_MD, 'utf8') : '';
  const at = markdown.indexOf(HEADING);
  return at >= 0 ? markdown.slice(at) : '';
}

/** Writes `section` (a `## W3 on Restate` report) as results.md's Restate part, keeping the rest. */
export function writeRestateSection(section: string): void {
  const markdown = existsSync(RESULTS_MD) ? readFileSync(RESULTS_MD, 'utf8') : '';
  const at = markdown.indexOf(HEADING);
  const rest = (at >= 0 ? markdown.slice(0, at) : markdown).trimEnd();
  writeFileSync(RESULTS_MD, `${rest}\n\n${section.trim()}\n`);
}
