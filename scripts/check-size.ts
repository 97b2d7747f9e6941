// `npm run check:size`: a module of src/ or machines/ over 400 lines must say why in the comment it opens with (the
// words "400 lines" and the reason), so that a long file is a decision a reader can weigh, not an accident.
// Usage: tsx scripts/check-size.ts [root]  (the repository by default; test/check/size.test.ts passes a fixture).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const LIMIT = 400;
const TREES = ['src', 'machines'];
const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;

function* files(dir: string): Generator<string> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* files(full);
    else if (CODE.test(entry.name)) yield full;
  }
}

const lineCount = (text: string): number => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

/** The comment a file opens with (after a shebang): a run of `//` lines or one block comment; '' when none. */
function openingComment(text: string): string {
  const body = text.replace(/^#![^\n]*\n/, '').trimStart();
  if (body.startsWith('/*')) {
    const end = body.indexOf('*/');
    return end < 0 ? body : body.slice(0, end + 2);
  }
  const lines: string[] = [];
  for (const line of body.split('\n')) {
    if (!line.trimStart().startsWith('//')) break;
    lines.push(line);
  }
  return lines.join('\n');
}

const justified = (text: string): boolean => /\b400 lines\b/i.test(openingComment(text));

const root = path.resolve(process.argv[2] ?? '.');
const over: string[] = [];
for (const tree of TREES) {
  for (const file of files(path.join(root, tree))) {
    const text = readFileSync(file, 'utf8');
    const lines = lineCount(text);
    if (lines > LIMIT && !justified(text)) over.push(`${path.relative(root, file)}: ${lines} lines`);
  }
}
if (over.length > 0) {
  console.error(
    `${over.length} module(s) over ${LIMIT} lines whose opening comment does not say why ("${LIMIT} lines: <why>"):`,
  );
  for (const line of over.sort()) console.error(`  ${line}`);
  process.exit(1);
}
console.log(`no module of ${TREES.join('/ or ')}/ is over ${LIMIT} lines without saying why`);
