/** `troupe run` in a real terminal (tmux): the live tree drawn in place, an inline approval, Ctrl-C during a tool. */
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { missing } from '../helpers/requires.js';
import { launchChromium } from '../inspect/browser.js';
import { ANSI, esc, gone, REPO, sampleCopy, TerminalRun } from './helpers.js';

/** Writes the frame into docs/ as text and as a picture (UPDATE_SCREENSHOTS=1). */
async function recordFrame(frame: string): Promise<void> {
  const text = frame.replace(ANSI, '').trimEnd();
  await fs.writeFile(path.join(REPO, 'docs/troupe-run.txt'), `${text}\n`);
  const html = frame
    .trimEnd()
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replaceAll(esc('[2m'), '<span style="color:#8b949e">')
    .replaceAll(esc('[0m'), '</span>')
    .replaceAll(esc('[22m'), '</span>')
    .replaceAll(esc('[39m'), '</span>')
    .replace(ANSI, '');
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 900, height: 200 } });
    await page.setContent(
      `<body style="margin:0;background:#0d1117"><pre id="t" style="display:inline-block;margin:0;padding:14px 18px;color:#e6edf3;font:13px/1.35 'DejaVu Sans Mono',monospace">$ npx troupe run --offline -C examples/sample-project "Tell me about this project"\n${html}</pre></body>`,
    );
    await page.locator('#t').screenshot({ path: path.join(REPO, 'docs/troupe-run.png') });
  } finally {
    await browser.close();
  }
}

let dir: string;
let term: TerminalRun | undefined;

beforeEach(async () => {
  dir = await sampleCopy();
});

afterEach(async () => {
  term?.close();
  term = undefined;
  await fs.rm(dir, { recursive: true, force: true });
});

describe.skipIf(missing('tmux', 'the terminal tests'))('troupe run on a terminal', () => {
  it('draws the tree of agents live, asks inline, and finishes with the answer', async () => {
    term = new TerminalRun(['run', '--offline', '-C', dir, 'Tell me about this project']);
    // Mid-run: the root and both subagents, each with its state, tokens, cost and elapsed time.
    const live = await term.waitFor(/^ {2}\S default_\S+ .*tok \$0\.0000 [\d.]+s\n {2}\S default_/m);
    expect(live).toMatch(/^\S main {2}swarm 2 tasks +[\d.]+k? tok \$0\.0000 [\d.]+s$/m);
    if (process.env.UPDATE_SCREENSHOTS) await recordFrame(term.screen(true));
    const asked = await term.waitFor(
      /\? main wants to run write_file TROUPE_NOTES\.md — \[y\]es \/ \[n\]o \/ \[a\]lways:$/m,
    );
    expect(asked).toContain('Two helpers will look closer, in parallel.');
    term.keys('y');
    const done = await term.waitFor(/EXIT=\d+/);
    expect(done).toContain('[a]lways: yes');
    expect(done).toMatch(/^✓ main {2}done/m);
    expect(done.match(/^ {2}✓ default_\S+ {2}done/gm)).toHaveLength(2);
    expect(done).toMatch(/^completed · .* · [\d.]+s$/m);
    expect(done).toContain('EXIT=0');
    // Drawn in place: each agent appears once on the final screen, not once per frame.
    expect(done.match(/^✓ main /gm)).toHaveLength(1);
    expect(await fs.readFile(path.join(dir, 'TROUPE_NOTES.md'), 'utf8')).toContain('# Notes on this folder');
  }, 90_000);

  it('Ctrl-C during a tool interrupts the turn and exits 130', async () => {
    term = new TerminalRun(['run', '--offline', '--mode', 'bypass', '-C', dir, 'Run `echo $$ > shell.pid; sleep 300`']);
    await term.waitFor(/main {2}bash echo/);
    let pid = '';
    while (!pid) pid = (await fs.readFile(path.join(dir, 'shell.pid'), 'utf8').catch(() => '')).trim();
    term.keys('C-c');
    const done = await term.waitFor(/EXIT=\d+/);
    expect(done).toContain('Interrupting… (Ctrl-C again to exit at once)');
    expect(done).toMatch(/^■ main {2}interrupted/m);
    expect(done).toContain('EXIT=130');
    expect(() => process.kill(Number(pid), 0)).toThrow();
  }, 90_000);

  it('a session killed with SIGKILL during a tool resumes in the live view', async () => {
    term = new TerminalRun([
      'run',
      '--offline',
      '--mode',
      'bypass',
      '--session=term',
      '-C',
      dir,
      'Run `echo $$ > shell.pid; sleep 300`',
    ]);
    await term.waitFor(/main {2}bash echo/);
    let pid = '';
    while (!pid) pid = (await fs.readFile(path.join(dir, 'shell.pid'), 'utf8').catch(() => '')).trim();
    // The shell's parent is troupe itself.
    const troupe = Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
    process.kill(troupe, 'SIGKILL');
    expect(await term.waitFor(/EXIT=\d+/)).toContain('EXIT=137');
    expect(await gone(pid)).toBe(true); // the command died with troupe (its group's watchdog)
    term.close();
    term = new TerminalRun(['resume', '-C', dir]);
    const done = await term.waitFor(/EXIT=\d+/);
    expect(done).toContain('resuming term');
    expect(done).toContain('Tool bash was interrupted by a restart before it finished');
    expect(done).toMatch(/^✓ main {2}done/m);
    expect(done).toMatch(/^completed · .* · [\d.]+s$/m);
    expect(done).toContain('EXIT=0');
  }, 120_000);
});
