/**
 * The model `troupe run --offline` uses: a scripted model that does something sensible in any folder, so the
 * command can be tried (and tested) without a key. It looks at the tree, sends two subagents to find the TODO
 * notes and read the README, writes their findings to TROUPE_NOTES.md (which asks for approval in the default
 * mode) and sums up. A task that quotes a command in backticks runs that command instead (a subagent runs it when
 * the task asks a helper to), and one that quotes a tool with JSON arguments (`mcp__docs__search {"q": "x"}`)
 * calls that tool.
 */
import { type Message, type ModelRequest, textOf } from '../protocol/index.js';
import { type ScriptedAnswer, type ScriptedModel, scriptedModel } from '../providers/index.js';

const TODO_TASK = 'Find the TODO and FIXME notes in this folder.';
const README_TASK = 'Read the README and say what this project is.';
export const NOTES_FILE = 'TROUPE_NOTES.md';

function textOfMessage(message: Message | undefined): string {
  if (!message) return '';
  return message.content.map((part) => ('text' in part ? part.text : '')).join('');
}

function lastToolText(request: ModelRequest): { text: string; isError: boolean } {
  const last = request.messages.at(-1);
  if (last?.role !== 'tool') return { text: '', isError: false };
  return { text: textOf(last), isError: last.content.some((r) => r.isError) };
}

/** Rough token counts, so the live view has numbers to show. */
function usageFor(request: ModelRequest, text: string) {
  const chars = request.messages.reduce((sum, m) => sum + textOfMessage(m).length, 0);
  return { input: 200 + Math.round(chars / 4), output: 20 + Math.round(text.length / 4) };
}

/**
 * Call ids numbered after the calls already in the history: unique within a session even when it is resumed in a
 * new process (the scripted model's own counter starts again at call_1 there, and a journal answers by call id).
 */
function withIds(request: ModelRequest, calls: NonNullable<ScriptedAnswer['toolCalls']>): ScriptedAnswer['toolCalls'] {
  const before = request.messages.reduce(
    (n, m) => n + (m.role === 'assistant' ? m.content.filter((p) => p.type === 'tool_call').length : 0),
    0,
  );
  return calls.map((call, i) => ({ ...call, id: `call_${before + i + 1}` }));
}

function answer(request: ModelRequest, pace: Partial<ScriptedAnswer>): ScriptedAnswer {
  // This turn: from the last prompt on (a session holds earlier turns before it).
  const start = request.messages.findLastIndex((m) => m.role === 'user' && (m.source ?? 'prompt') === 'prompt');
  const task = textOfMessage(request.messages[start]);
  const step = request.messages.slice(start).filter((m) => m.role === 'assistant').length;
  const tool = lastToolText(request);
  const reply = (text: string, toolCalls?: ScriptedAnswer['toolCalls']): ScriptedAnswer => ({
    ...pace,
    text,
    ...(toolCalls ? { toolCalls: withIds(request, toolCalls) } : {}),
    usage: usageFor(request, text),
  });

  if (task === TODO_TASK) {
    if (step === 0) return reply('Searching for notes.', [{ name: 'grep', args: { pattern: 'TODO|FIXME' } }]);
    const lines = tool.text.split('\n').filter((line) => /:\d+:/.test(line));
    if (lines.length === 0) return reply('There are no TODO or FIXME notes.');
    return reply(
      `${lines.length} notes:\n${lines
        .slice(0, 8)
        .map((l) => `- ${l.trim()}`)
        .join('\n')}`,
    );
  }
  if (task === README_TASK) {
    if (step === 0) return reply('Looking for the README.', [{ name: 'glob', args: { pattern: 'README*' } }]);
    if (step === 1) {
      const file = tool.text.split('\n')[0] ?? '';
      if (!file || file.startsWith('No files')) return reply('There is no README here.');
      return reply(`Reading ${file}.`, [{ name: 'read_file', args: { path: file, limit: 40 } }]);
    }
    const lines = tool.text.split('\n').map((line) => line.replace(/^\s*\d+\t/, ''));
    const title = lines.find((line) => line.startsWith('#'))?.replace(/^#+\s*/, '') ?? 'an untitled project';
    const summary = lines.find((line) => line.trim() !== '' && !line.startsWith('#') && !line.startsWith('(')) ?? '';
    return reply(`The README is about "${title}". ${summary.trim()}`);
  }

  const quoted = /`([^`]+)`/.exec(task)?.[1];
  // `tool_name {"json": "args"}` calls that tool (an MCP tool, say); anything else quoted is a shell command.
  const named = quoted ? /^([a-zA-Z0-9_-]+)\s*(\{.*\})$/s.exec(quoted) : null;
  if (named && request.tools.some((t) => t.name === named[1])) {
    if (step === 0) {
      // Arguments that are not JSON go to the tool as text; the tool's validation answers them.
      return reply(`Calling ${named[1]}.`, [{ name: named[1] as string, args: named[2] as string }]);
    }
    return reply(`${named[1]} answered:\n${tool.text.trim()}`);
  }
  const command = quoted;
  if (command && /\bhelper\b/i.test(task) && request.tools.some((t) => t.name === 'agent')) {
    if (step === 0)
      return reply('A helper will run it.', [{ name: 'agent', args: { prompt: `Please run \`${command}\`` } }]);
    return reply(`The helper says:\n${tool.text.trim()}`);
  }
  if (command) {
    if (step === 0) return reply(`Running \`${command}\`.`, [{ name: 'bash', args: { command } }]);
    return reply(`The command ended:\n${tool.text.trim().split('\n').slice(-5).join('\n')}`);
  }
  if (step === 0) return reply('Let me look at the folder first.', [{ name: 'tree', args: { depth: 2 } }]);
  if (step === 1) {
    if (!request.tools.some((t) => t.name === 'swarm')) {
      // Without subagents (an agent deep in the tree) it searches for the notes itself.
      return reply('Now the TODO and FIXME notes.', [{ name: 'grep', args: { pattern: 'TODO|FIXME' } }]);
    }
    return reply('Two helpers will look closer, in parallel.', [
      { name: 'swarm', args: { tasks: [{ prompt: TODO_TASK }, { prompt: README_TASK }] } },
    ]);
  }
  if (step === 2) {
    const notes = `# Notes on this folder\n\nTask: ${task}\n\n${tool.text.trim()}\n`;
    return reply(`I'll write the findings to ${NOTES_FILE}.`, [
      { name: 'write_file', args: { path: NOTES_FILE, content: notes } },
    ]);
  }
  const team = request.tools.some((t) => t.name === 'swarm');
  return reply(
    tool.isError
      ? `I did not write ${NOTES_FILE} (${tool.text.trim()}). The findings are in the ${team ? "subagents' answers" : 'search'} above.`
      : `Done. I looked at the tree, ${team ? 'had two subagents search it' : 'searched it for notes'}, and wrote what they found to ${NOTES_FILE}.`,
  );
}

export interface OfflineOptions {
  /** Milliseconds between streamed chunks (default 15: readable, and the live view has something to draw). */
  deltaDelayMs?: number;
}

export function offlineModel(options: OfflineOptions = {}): ScriptedModel {
  const pace = { deltaDelayMs: options.deltaDelayMs ?? 15, chunkSize: 6, latencyMs: 200 };
  return scriptedModel((request) => answer(request, pace), { id: 'offline', record: false });
}
