import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * bench/results.md holds `npm run bench`'s tables and, at its end, the reports of `npm run bench:restate`, oldest
 * first: `npm run bench` rewrites its own part and keeps the Restate part; each Restate run appends its report.
 */
const RESULTS_MD = fileURLToPath(new URL('./results.md', import.meta.url));
const HEADING = '\n## W3 on Restate';

/** The Restate part of results.md as it stands (empty when there is none), from its heading to the end. */
export function restateSection(): string {
  const markdown = existsSync(RESULTS_MD) ? readFileSync(RESULTS_MD, 'utf8') : '';
  const at = markdown.indexOf(HEADING);
  return at >= 0 ? markdown.slice(at) : '';
}

/** Appends `section` (a `## W3 on Restate` report) to results.md's Restate part, keeping everything before it. */
export function writeRestateSection(section: string): void {
  const markdown = existsSync(RESULTS_MD) ? readFileSync(RESULTS_MD, 'utf8') : '';
  writeFileSync(RESULTS_MD, `${markdown.trimEnd()}\n\n${section.trim()}\n`);
}
