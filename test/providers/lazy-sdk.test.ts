/**
 * The provider SDKs are loaded on a model's first request, not by `import 'troupe'`: an application that uses one
 * provider (or only the scripted model) does not pay the other SDK's import (~17 MB for openai, ~26 MB for
 * @anthropic-ai/sdk, measured as RSS). A child process reports every SDK module it resolves.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const index = fileURLToPath(new URL('../../src/index.ts', import.meta.url));

const hooks = `export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (/[\\\\/]node_modules[\\\\/](openai|@anthropic-ai[\\\\/]sdk)[\\\\/]/.test(result.url)) {
    process.stderr.write('sdk-loaded ' + result.url + '\\n');
  }
  return result;
}`;
const register = `import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}));`;

/** The SDK modules the script resolved, in the order it resolved them. */
async function sdkModulesLoadedBy(script: string): Promise<string[]> {
  const { stdout, stderr } = await run(
    process.execPath,
    [
      '--import',
      'tsx',
      '--import',
      `data:text/javascript,${encodeURIComponent(register)}`,
      '--input-type=module',
      '-e',
      script,
    ],
    { env: { ...process.env, NODE_OPTIONS: '' } },
  );
  expect(stdout).toContain('script done');
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('sdk-loaded '))
    .map((line) => line.slice('sdk-loaded '.length));
}

describe('provider SDKs load lazily', () => {
  it('importing troupe and making both models loads neither SDK', async () => {
    const loaded = await sdkModulesLoadedBy(`
      const troupe = await import(${JSON.stringify(index)});
      troupe.openai({ model: 'gpt-test', apiKey: 'k' });
      troupe.anthropic({ model: 'claude-test', apiKey: 'k' });
      console.log('script done');
    `);
    expect(loaded).toEqual([]);
  }, 30_000);

  it('the detector sees an SDK that is imported (the check can fail)', async () => {
    const loaded = await sdkModulesLoadedBy(`await import('@anthropic-ai/sdk'); console.log('script done');`);
    expect(loaded.some((url) => url.includes('@anthropic-ai/sdk'))).toBe(true);
  }, 30_000);
});
