/**
 * Every TypeScript block of README.md and docs/ compiles under `strict` against the package's public entries
 * (mapped to src/, so no build is needed), all in one TypeScript program, and every block that does not say
 * `// not run: <why>` on its first line runs offline as a program of its own (twice, in the same folder, when it
 * says `// run twice: <why>`: the first run crashes on purpose, the second must recover). A reader copies these blocks: one
 * that no longer matches the API fails here, not in their project.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pLimit from 'p-limit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allSnippets, snippetsOf } from './extract.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The package's entries, as `package.json` exports them, by their source files. */
const entries: Record<string, string> = {
  troupe: 'src/index.ts',
  'troupe/host': 'src/host/index.ts',
  'troupe/machines': 'src/machines/index.ts',
  'troupe/testing': 'src/testing/index.ts',
  'troupe/tools': 'src/tools/builtin/index.ts',
  'troupe/mcp': 'src/mcp/index.ts',
  'troupe/restate': 'src/restate/index.ts',
  'troupe/restate/dev': 'src/restate/dev-server.ts',
};

/**
 * What a fragment may use without declaring it: the names the guides give the things every example has (a model,
 * some tools, an agent). A block that declares one of them itself shadows these.
 */
const fragmentGlobals = `import type { Agent, AnyTool, Model } from 'troupe';
declare global {
  const model: Model;
  const tools: AnyTool[];
  const agent: Agent;
}
export {};
`;

const snippets = allSnippets(root);
const runnable = snippets.map((snippet, index) => ({ ...snippet, index })).filter((s) => s.notRun === undefined);
let dir = '';

function fileOf(index: number): string {
  return `block${String(index).padStart(3, '0')}.ts`;
}

function node(args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env) {
  return new Promise<{ code: number | null; output: string }>((resolve) => {
    execFile(process.execPath, args, { cwd, env, maxBuffer: 64 << 20, timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'troupe-snippets-'));
  // The blocks import zod, xstate and the rest as a project that installed troupe would.
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  snippets.forEach((snippet, index) => {
    writeFileSync(join(dir, fileOf(index)), `${snippet.code}\nexport {};\n`);
  });
  writeFileSync(join(dir, 'fragment-globals.d.ts'), fragmentGlobals);
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  const paths = Object.fromEntries(Object.entries(entries).map(([name, file]) => [name, [join(root, file)]]));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      extends: join(root, 'tsconfig.json'),
      compilerOptions: { paths, noEmit: true },
      include: ['*.ts'],
      exclude: [],
    }),
  );
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the extractor', () => {
  it('finds ts blocks, indented ones too, reads the not-run marker and skips other languages', () => {
    const markdown = [
      '# Title', //
      '```sh',
      'npm test',
      '```',
      '- a list item:',
      '  ```ts',
      '  // not run: needs OPENAI_API_KEY',
      '  const a = 1;',
      '  ```',
      '````typescript',
      '// run twice: it crashes',
      'const b = 2;',
      '```',
      '````',
    ].join('\n');
    expect(snippetsOf(markdown, 'x.md')).toEqual([
      {
        where: 'x.md:7',
        code: '// not run: needs OPENAI_API_KEY\nconst a = 1;',
        notRun: 'needs OPENAI_API_KEY',
        twice: false,
      },
      { where: 'x.md:11', code: '// run twice: it crashes\nconst b = 2;\n```', notRun: undefined, twice: true },
    ]);
  });
});

describe('the code blocks of README.md and docs/', () => {
  it('are found, and each says why when it does not run', () => {
    expect(snippets.length).toBeGreaterThan(0);
    console.log(`${snippets.length} TypeScript blocks type-checked, ${runnable.length} run`);
  });

  it('type-check under strict against the public entries', { timeout: 600_000 }, async () => {
    const { code, output } = await node([join(root, 'node_modules/typescript/bin/tsc'), '-p', dir], dir);
    // Name each error by the Markdown line it comes from.
    const errors = output
      .split('\n')
      .filter((line) => line.includes('error TS'))
      .map((line) => {
        const at = /block(\d{3})\.ts\((\d+),(\d+)\)/.exec(line);
        const snippet = at ? snippets[Number(at[1])] : undefined;
        if (!at || !snippet) return line;
        const [file, start] = snippet.where.split(':');
        return `${file}:${Number(start) + Number(at[2]) - 1}: ${line.slice(line.indexOf('error TS'))}`;
      });
    expect(errors).toEqual([]);
    expect(code).toBe(0);
  });

  // The programs run two at a time: each is mostly a Node start-up, and the machine is shared.
  const slots = pLimit(2);
  it.concurrent.for(runnable)('$where runs offline', { timeout: 600_000 }, ({ code, index, twice }, { expect }) =>
    slots(async () => {
      const cwd = join(dir, `run${index}`);
      mkdirSync(cwd);
      // The public entries by their source files; everything else resolves through node_modules.
      const program = code.replace(/from '(troupe(?:\/\w+)*)'/g, (whole, name: string) => {
        const file = entries[name];
        return file ? `from '${join(root, file)}'` : whole;
      });
      writeFileSync(join(cwd, 'main.ts'), `${program}\nexport {};\n`);
      const env = { ...process.env };
      for (const key of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'OPENAI_BASE_URL', 'TROUPE_INSPECT', 'TROUPE_MODEL']) {
        delete env[key];
      }
      if (twice) {
        const crash = await node(['--import', 'tsx', 'main.ts'], cwd, env);
        expect(crash.code, `the first run was meant to crash:\n${crash.output}`).not.toBe(0);
      }
      const run = await node(['--import', 'tsx', 'main.ts'], cwd, env);
      expect(run.code, run.output).toBe(0);
    }),
  );
});
