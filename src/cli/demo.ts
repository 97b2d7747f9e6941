/**
 * `troupe inspect --demo`: an offline swarm to watch in the inspector. A lead agent splits a release note into
 * three subagent tasks; each subagent asks to write a file, and waits for you to approve or deny it on the page.
 */
import { z } from 'zod';
import { createSupervisor, defineTool } from '../index.js';
import { connectInspector } from '../inspect/connect.js';
import type { ModelRequest } from '../protocol/index.js';
import { type ScriptedAnswer, scriptedModel } from '../providers/index.js';

const FILES = ['changelog.md', 'upgrade-guide.md', 'announcement.md'];

function answer(request: ModelRequest): ScriptedAnswer {
  const users = request.messages.filter((m) => m.role === 'user');
  const first = users[0]?.content.find((part) => part.type === 'text');
  const prompt = first?.type === 'text' ? first.text : '';
  const answers = request.messages.filter((m) => m.role === 'assistant').length;
  const pace = { deltaDelayMs: 25, chunkSize: 4 };
  if (prompt === 'Prepare the release notes.') {
    if (answers === 0) {
      return {
        ...pace,
        text: 'Three documents; one writer each.',
        toolCalls: [{ name: 'swarm', args: { tasks: FILES.map((file) => ({ prompt: `Write ${file}` })) } }],
        usage: { input: 420, output: 48 },
      };
    }
    return {
      ...pace,
      text: 'All three documents are settled; see the results above.',
      usage: { input: 900, output: 22 },
    };
  }
  const file = prompt.replace(/^Write /, '');
  if (answers === 0) {
    return {
      ...pace,
      text: `Drafting ${file}.`,
      toolCalls: [{ name: 'write_file', args: { path: file, text: `# ${file}\n` } }],
      usage: { input: 180, output: 35 },
    };
  }
  return { ...pace, text: `${file} is done.`, usage: { input: 260, output: 9 } };
}

export interface DemoOptions {
  /** The inspector's connect url. */
  url: string;
  /** Approve every call at once instead of waiting for the page (for tests). */
  autoApprove?: boolean;
  log?: (line: string) => void;
}

/** Runs the demo swarm once; resolves with the lead's final answer. */
export async function runDemo(options: DemoOptions): Promise<string> {
  const log = options.log ?? console.log;
  const connection = await connectInspector({ url: options.url, runId: 'demo' });
  const write = defineTool({
    name: 'write_file',
    description: 'Writes a file',
    schema: z.object({ path: z.string(), text: z.string() }),
    execute: ({ path }) => `wrote ${path}`,
  });
  const supervisor = createSupervisor({
    id: 'demo',
    model: scriptedModel(answer, { record: false }),
    policy: (call) => (call.name === 'write_file' ? 'ask' : 'allow'),
    inspect: connection.inspect,
  });
  connection.attach(supervisor);
  supervisor.on('approval_requested', (event) => {
    if (options.autoApprove) supervisor.approve(event);
    else log(`${event.agentId} asks to run ${event.toolName}: approve or deny it on the page`);
  });
  try {
    const lead = supervisor.agent({ id: 'lead', tools: [write] });
    const result = await lead.prompt('Prepare the release notes.');
    log(`lead: ${result.text}`);
    return result.text;
  } finally {
    await supervisor.stop();
    await connection.close();
  }
}
