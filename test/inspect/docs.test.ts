import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { statechartDocs } from '../../src/inspect/docs.js';

const root = join(import.meta.dirname, '..', '..');

describe('generated statechart docs', () => {
  for (const [path, content] of statechartDocs()) {
    it(`${path} is up to date (run \`npm run docs\` after changing a machine)`, () => {
      let checkedIn: string;
      try {
        checkedIn = readFileSync(join(root, path), 'utf8');
      } catch {
        throw new Error(`${path} is missing: run \`npm run docs\``);
      }
      expect(checkedIn, `${path} is stale: run \`npm run docs\``).toBe(content);
    });
  }
});
