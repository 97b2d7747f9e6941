/** Regenerates the statechart diagrams under docs/ (`npm run docs`). */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { statechartDocs } from '../src/inspect/docs.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
for (const [path, content] of statechartDocs()) {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), content);
  console.log(`wrote ${path}`);
}
