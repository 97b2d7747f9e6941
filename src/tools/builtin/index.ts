/**
 * `troupe/tools`: the built-in workspace tools. `createWorkspaceTools({ roots })` checks the folders once and
 * returns the tools with a `close()` that stops every command and job they started.
 */
import type { AnyTool } from '../define-tool.js';
import { editTool, type FileLimits, readFileTool, writeFileTool } from './files.js';
import { type GrepOptions, grepTool } from './grep.js';
import { globTool, listTool, type SearchLimits, treeTool } from './search.js';
import { Shell, type ShellOptions } from './shell.js';
import { Workspace, type WorkspaceOptions } from './workspace.js';

export interface WorkspaceToolsOptions extends WorkspaceOptions {
  files?: FileLimits;
  search?: SearchLimits;
  grep?: GrepOptions;
  /** Shell settings, or `false` for no `bash` / `job_output` / `job_kill`. */
  shell?: ShellOptions | false;
  /** Only the tools that change nothing (list, tree, glob, grep, read_file). */
  readOnly?: boolean;
}

export interface WorkspaceTools {
  tools: AnyTool[];
  workspace: Workspace;
  /** Stops every command and background job the tools started; later commands are refused. */
  close(): Promise<void>;
}

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
