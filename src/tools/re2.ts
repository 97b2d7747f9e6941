import { createRequire } from 'node:module';
import type { RE2JS } from 're2js';

let engine: typeof RE2JS | undefined;

/**
 * RE2JS (regular expressions matched in time linear in the input), loaded on first use: an agent whose tools never
 * compile a model's or a schema's pattern does not pay its 4 MB of resident memory.
 */
export function re2(): typeof RE2JS {
  engine ??= (createRequire(import.meta.url)('re2js') as typeof import('re2js')).RE2JS;
  return engine;
}
