/**
 * Finds the TypeScript blocks of README.md and docs/ for test/docs/snippets.test.ts: what a reader copies must
 * compile under `strict` against the public entries and, when it is a whole program, run offline.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export interface Snippet {
  /** Where the block is, as `file:line` of its first code line (what a failure names). */
  readonly where: string;
  readonly code: string;
  /** Why the block is only type-checked, from its first line `// not run: <why>`; undefined when it runs. */
  readonly notRun: string | undefined;
  /**
   * Set by a first line `// run twice: <why>`: a program that crashes on purpose and recovers when run again (a
   * session resumed after a kill), so it is run twice in one folder and the second run must succeed.
   */
  readonly twice: boolean;
}

const fence = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/;
const notRunMarker = /^\/\/ not run: (\S.*)$/;
const twiceMarker = /^\/\/ run twice: \S/;

/**
 * The Markdown files whose blocks are checked: README.md and docs/, without the site's build folders and without
 * docs/api/, which TypeDoc writes from the doc comments (its blocks are signatures, not programs).
 */
function markdownFiles(root: string): string[] {
  const files = [join(root, 'README.md')];
  const generated = join(root, 'docs', 'api');
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const path = join(dir, entry.name);
      if (path === generated) continue;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  walk(join(root, 'docs'));
  return files.sort();
}

/** Every ```ts (or ```typescript) block of a Markdown text, in order, with its indentation removed. */
export function snippetsOf(markdown: string, name: string): Snippet[] {
  const snippets: Snippet[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = fence.exec(lines[i] ?? '');
    if (!open) continue;
    const [, indent = '', marks = '', lang = ''] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const line = lines[j] ?? '';
      if (line.trim().startsWith(marks) && line.trim().replace(/[`~]/g, '') === '') break;
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart());
    }
    if (lang === 'ts' || lang === 'typescript') {
      const code = body.join('\n');
      const first = body[0]?.trim() ?? '';
      const notRun = notRunMarker.exec(first)?.[1];
      snippets.push({ where: `${name}:${i + 2}`, code, notRun, twice: twiceMarker.test(first) });
    }
    i = j;
  }
  return snippets;
}

export function allSnippets(root: string): Snippet[] {
  return markdownFiles(root).flatMap((file) => snippetsOf(readFileSync(file, 'utf8'), relative(root, file)));
}
