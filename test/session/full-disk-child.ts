// A session whose disk fills up: records prompts until the store refuses, then (given a file to delete) frees the
// space and prompts on. Prints one JSON line: each prompt's stop reason or error (or the error creating the
// session), and the warnings.
//   node full-disk-child.mjs <sessions dir> [<file to delete after the first failure>]
import { rmSync } from 'node:fs';
import { createAgent, scriptedModel, sessions } from '../../src/index.js';

const [dir, filler] = process.argv.slice(2) as [string, string | undefined];
const warnings: string[] = [];
const manager = sessions({ dir, onWarning: (warning) => warnings.push(warning) });
const described = (error: unknown) => {
  const { name, problem } = error as { name: string; problem?: string };
  return `${name}: ${problem}`;
};
let session: ReturnType<typeof manager.create>;
try {
  session = manager.create({ id: 'full', agentId: 'root' });
} catch (error) {
  process.stdout.write(`${JSON.stringify({ outcomes: [described(error)], warnings })}\n`);
  process.exit(0);
}
const agent = createAgent({ id: 'root', model: scriptedModel(() => ({ text: 'x'.repeat(700) })), session });
const outcomes: string[] = [];
for (let i = 0; i < 40; i++) {
  try {
    outcomes.push((await agent.prompt(`prompt ${i}`)).stopReason);
  } catch (error) {
    outcomes.push(described(error));
    if (filler) rmSync(filler, { force: true });
  }
}
await agent.stop();
session.close();
process.stdout.write(`${JSON.stringify({ outcomes, warnings })}\n`);
