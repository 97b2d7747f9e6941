/** The swarm the inspector tests watch: a root supervisor, a lead agent, and two subagents whose tool calls ask. */
import type { InspectionEvent, Observer } from 'xstate';
import { z } from 'zod';
import { createSupervisor, defineTool, type ModelRequest, scriptedModel, textOf } from '../../src/index.js';

function conversation(request: ModelRequest) {
  const users = request.messages.filter((m) => m.role === 'user');
  const tools = request.messages.filter((m) => m.role === 'tool');
  const last = tools[tools.length - 1];
  return {
    prompt: textOf(users[0]),
    answers: request.messages.filter((m) => m.role === 'assistant').length,
    lastTool:
      last?.role === 'tool'
        ? last.content.map((r) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('')).join('\n')
        : '',
  };
}

export const FILES = ['plan.md', 'secrets.txt'];

export function swarmFixture(inspect: Observer<InspectionEvent>) {
  const written: string[] = [];
  const write = defineTool({
    name: 'write_file',
    description: 'Writes a file',
    schema: z.object({ path: z.string() }),
    execute: ({ path }) => {
      written.push(path);
      return `wrote ${path}`;
    },
  });
  const model = scriptedModel(
    (request) => {
      const { prompt, answers, lastTool } = conversation(request);
      if (prompt === 'LEAD') {
        if (answers === 0) {
          return {
            text: 'Splitting the work.',
            toolCalls: [{ name: 'swarm', args: { tasks: FILES.map((file) => ({ prompt: `write ${file}` })) } }],
            usage: { input: 100, output: 20 },
          };
        }
        return { text: `lead done:\n${lastTool}`, usage: { input: 300, output: 30 } };
      }
      const file = prompt.replace(/^write /, '');
      if (answers === 0) {
        return {
          toolCalls: [{ name: 'write_file', args: { path: file }, id: `call_${file.replace(/\W/g, '_')}` }],
          usage: { input: 50, output: 10 },
        };
      }
      return { text: `${file}: ${lastTool}`, usage: { input: 60, output: 5 } };
    },
    { record: false },
  );
  const supervisor = createSupervisor({
    id: 'root',
    model,
    tools: [write],
    policy: (call) => (call.name === 'write_file' ? 'ask' : 'allow'),
    inspect,
  });
  const lead = supervisor.agent({ id: 'lead', tools: [write] });
  return { supervisor, lead, written };
}
