import { type ChildProcess, spawn } from 'node:child_process';

/**
 * Kills a process group when this process dies, however it dies. A SIGKILL (the OOM killer, `kill -9`, a container
 * runtime) runs no hook, so an `exit` handler cannot; PR_SET_PDEATHSIG (`setpriv --pdeathsig`) reaches only the
 * direct child, not what it started. The watchdog is a tiny `sh`, outside the group and in a session of its own (a
 * terminal's Ctrl-C does not reach it), reading a pipe whose only writer is this process (Node opens its end of a
 * child's pipes close-on-exec, so no other child inherits it). The first line names the group (and the mark of its processes); then `read` blocks
 * until the pipe closes, which the kernel does when this process dies, and the watchdog SIGKILLs the group and every
 * process carrying the command's mark (those that left the group with `setsid`). A pgid
 * is not reused while its group lives, and the watchdog is dismissed once the group is over.
 *
 * It is started before the command, and told the group's id as soon as `spawn` returns. A shell command
 * (ProcessGroup.shell) waits on its stdin until then, so no moment of its life is unguarded; a process handed to
 * ProcessGroup as is (an MCP server) is unguarded for the moment between its spawn and the guard.
 */
const SCRIPT =
  'read -r group mark || exit 0; read -r _; kill -KILL "-$group" 2>/dev/null; [ -n "$mark" ] && cd /proc || exit 0; ' +
  'for p in [0-9]*; do tr "\\000" "\\n" <"$p/environ" 2>/dev/null | grep -qx "$MARK_NAME=$mark" && kill -KILL "$p"; done';

/** The environment variable that marks every process a shell command starts (see ProcessGroup). */
export const MARK = 'TROUPE_COMMAND';

export class Watchdog {
  private constructor(private readonly process: ChildProcess) {}

  /** Undefined where no `sh` can be started: the process's `exit` hook still covers every ordinary exit. */
  static start(): Watchdog | undefined {
    try {
      const child = spawn('/bin/sh', ['-c', SCRIPT], {
        cwd: '/',
        env: { PATH: '/usr/bin:/bin', MARK_NAME: MARK },
        detached: true,
        stdio: ['pipe', 'ignore', 'ignore'],
      });
      child.once('error', () => {});
      child.stdin?.once('error', () => {});
      // Neither the watchdog nor its pipe keeps this process running.
      child.unref();
      (child.stdin as { unref?(): void } | null)?.unref?.();
      return child.pid === undefined ? undefined : new Watchdog(child);
    } catch {
      return undefined;
    }
  }

  /** Names the group, and the mark its processes carry (those that left the group are killed by it too). */
  guard(pgid: number, mark = ''): void {
    this.process.stdin?.write(`${pgid} ${mark}\n`);
  }

  dismiss(): void {
    this.process.kill('SIGKILL');
  }
}
