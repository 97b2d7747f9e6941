import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

// The root entry exports the inspector's functions, but a program that never opens an inspector must not load
// Node's HTTP stack for them when it imports `troupe` (src/inspect/entry.ts). A fresh process, since the test
// runner itself has HTTP loaded.
describe('the inspector from the root entry', () => {
  it('loads no HTTP module until a server is started, then starts one', async () => {
    const program = `
      const http = () => process.moduleLoadList.includes('NativeModule http');
      const troupe = await import('./src/index.ts');
      const before = http();
      const server = await troupe.startInspectorServer();
      const page = await fetch(server.pageUrl);
      await server.close();
      console.log(JSON.stringify({ before, after: http(), status: page.status }));
    `;
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], {
      cwd: new URL('../..', import.meta.url),
    });
    expect(JSON.parse(stdout.trim())).toEqual({ before: false, after: true, status: 200 });
  });
});
