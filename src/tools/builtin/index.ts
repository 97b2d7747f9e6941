/**
 * `troupe/tools`: the built-in workspace tools. `createWorkspaceTools({ roots })` checks the folders once and
 * returns the tools with a `close()` that stops every command and job they started.
 *
 * @module troupe/tools
 */
import type { AnyTool } from '../define-tool.js';
import { editTool, type FileLimits, readFileTool, writeFileTool } from './files.js';
import { type GrepOptions, grepTool } from './grep.js';
import { globTool, listTool, type SearchLimits, treeTool } from './search.js';
import { Shell, type ShellOptions } from './shell.js';
import { Workspace, type WorkspaceOptions } from './workspace.js';

/**
 * What `createWorkspaceTools` takes: the folders the tools may touch (`roots`), the limits of each tool, the shell's
 * settings, and whether to leave out every tool that changes something.
 */
export interface WorkspaceToolsOptions extends WorkspaceOptions {
  files?: FileLimits;
  search?: SearchLimits;
  grep?: GrepOptions;
  /** Shell settings, or `false` for no `bash` / `job_output` / `job_kill`. */
  shell?: ShellOptions | false;
  /** Only the tools that change nothing (list, tree, glob, grep, read_file). */
  readOnly?: boolean;
}

/**
 * The workspace tools, ready for an agent's `tools`, with the workspace they share and a `close()` for the commands
 * they started.
 */
export interface WorkspaceTools {
  tools: AnyTool[];
  workspace: Workspace;
  /** Stops every command and background job the tools started; later commands are refused. */
  close(): Promise<void>;
}

/**
 * Checks the folders once and returns the built-in tools on them: list, tree, glob, grep and read_file; write_file and
 * edit; and a shell with background jobs. Call `close()` when done.
 *
 * @example
 * ```ts
 * const { tools, close } = await createWorkspaceTools({ roots: '.', readOnly: true });
 * const agent = createAgent({ model, tools });
 * await agent.prompt('What does this project do?');
 * await close();
 * ```
 */
export async function createWorkspaceTools(options: WorkspaceToolsOptions = {}): Promise<WorkspaceTools> {
  const workspace = await Workspace.open(options);
  const tools: AnyTool[] = [
    listTool(workspace, options.search),
    treeTool(workspace, options.search),
    globTool(workspace, options.search),
    grepTool(workspace, options.grep),
    readFileTool(workspace, options.files),
  ];
  let shell: Shell | undefined;
  if (!options.readOnly) {
    tools.push(writeFileTool(workspace), editTool(workspace));
    if (options.shell !== false) {
      shell = new Shell(workspace, options.shell ?? {});
      tools.push(...shell.tools());
    }
  }
  return { tools, workspace, close: async () => shell?.close() };
}

export type { FileLimits } from './files.js';
export type { GrepOptions } from './grep.js';
export type { SearchLimits } from './search.js';
export type { ShellOptions } from './shell.js';
export { type ResolvedPath, Workspace, WorkspaceError, type WorkspaceOptions } from './workspace.js';
