import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Agent, createAgent, type JsonObject, type PermissionsConfig, scriptedModel } from '../../src/index.js';
import type { ToolResultPart } from '../../src/protocol/index.js';
import {
  createWorkspaceTools,
  type WorkspaceTools,
  type WorkspaceToolsOptions,
} from '../../src/tools/builtin/index.js';
import { resultText } from '../agent/helpers.js';

/** A fresh temporary folder, removed by the returned cleanup. */
export async function tempDir(prefix = 'troupe-ws-'): Promise<string> {
  return fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), prefix)));
}

/** Writes a tree of files: `{ 'src/a.ts': 'text' }`. */
export async function writeTree(root: string, files: Record<string, string>): Promise<void> {
  for (const [name, text] of Object.entries(files)) {
    await fs.mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await fs.writeFile(path.join(root, name), text);
  }
}

/**
 * An agent whose model calls one tool per prompt, as a model would: every call goes through validation, the
 * policy and the tool worker, and the result is what the model would read.
 */
export class ToolDriver {
  readonly agent: Agent;
  private next: { name: string; args: JsonObject } | undefined;

  constructor(
    readonly tools: Pick<WorkspaceTools, 'tools' | 'close'>,
    id = 'driver',
    permissions?: PermissionsConfig,
  ) {
    this.agent = createAgent({
      id,
      tools: tools.tools,
      ...(permissions ? { permissions } : {}),
      model: scriptedModel((request) => {
        const last = request.messages.at(-1);
        if (last?.role === 'tool' || !this.next) return { text: 'done' };
        return { toolCalls: [this.next] };
      }),
    });
  }

  static async open(options: WorkspaceToolsOptions, id?: string, permissions?: PermissionsConfig): Promise<ToolDriver> {
    return new ToolDriver(await createWorkspaceTools(options), id, permissions);
  }

  async call(name: string, args: JsonObject, signal?: AbortSignal): Promise<ToolResultPart> {
    this.next = { name, args };
    const result = await this.agent.prompt(`call ${name}`, signal ? { signal } : {});
    const part = result.messages.flatMap((m) => (m.role === 'tool' ? m.content : []))[0];
    if (!part) throw new Error(`no tool result (turn ended ${result.stopReason})`);
    return part;
  }

  /** The result's text; fails the test when the call was an error. */
  async ok(name: string, args: JsonObject): Promise<string> {
    const part = await this.call(name, args);
    if (part.isError) throw new Error(`${name} failed: ${resultText(part)}`);
    return resultText(part);
  }

  /** The error message of a call that must fail. */
  async refused(name: string, args: JsonObject): Promise<string> {
    const part = await this.call(name, args);
    if (!part.isError) throw new Error(`${name} should have failed but returned: ${resultText(part)}`);
    return resultText(part).replace(`Tool ${name} failed: `, '');
  }

  async close(): Promise<void> {
    await this.agent.stop();
    await this.tools.close();
  }
}
