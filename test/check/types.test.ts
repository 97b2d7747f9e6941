import { describe, expect, it } from 'vitest';
import { fixture, runCli, TOOL_TIMEOUT } from './cli.js';

describe('tsc (tsconfig.json, strict) against test/check/fixtures/tsc', () => {
  it(
    'rejects implicit any, unchecked index access and a type error, and nothing in the correct file',
    async () => {
      // The fixture's tsconfig.json extends the repo's, so these are the compiler options `npm run check` uses.
      const { code, stdout } = await runCli(
        'typescript/bin/tsc',
        ['-p', 'tsconfig.json', '--noEmit', '--pretty', 'false'],
        fixture('tsc'),
      );
      const errors = stdout
        .split('\n')
        .filter((line) => line.includes('error TS'))
        .map((line) => line.replace(/\(\d+,\d+\): error (TS\d+):.*/, ': $1'))
        .sort();

      expect(errors).toEqual([
        'implicit-any.ts: TS7006', // parameter implicitly has an 'any' type (strict)
        'unchecked-index.ts: TS2532', // object is possibly 'undefined' (noUncheckedIndexedAccess)
        'wrong-type.ts: TS2322', // type 'string' is not assignable to type 'number'
      ]);
      expect(code).toBe(2);
    },
    TOOL_TIMEOUT,
  );
});
