/** The help of the verbs that take a target (`troupe prompt --help`, and every other verb's). */
export const VERBS_USAGE = `Usage: troupe <verb> <agent|session> [arguments] [options]

One command per verb, against either target: without --restate, a session of the folder (its agent runs in this
process, as troupe run's does, and its journal is read); with --restate (or TROUPE_RESTATE_URL), an agent hosted
on Restate (troupe/restate: agentObject + serveAgents), reached through Restate's ingress, whose turn runs in a
worker and survives this command.

Verbs:
  prompt <id> "<text>"       run a turn and wait for it: prints the answer, exits by its stop reason
                             (a session that does not exist yet is started, as troupe run --session=<id> does)
  history <id>               the conversation, as stored
  usage <id>                 tokens over all of the agent's own turns
  approvals <id>             the calls of the agent's tree waiting for approval: agent, call id, tool, arguments
                             (secrets redacted)
  send <id> "<text>"         hosted: send a prompt without waiting; prints the turn's invocation id
  attach <id> <invocation>   hosted: wait for a sent turn, as prompt does
  steer <id> "<text>"        hosted: add a message to the running turn at its next step (none running: starts one)
  interrupt <id>             hosted: stop the running turn (its open tool calls get an "interrupted" result)
  approve <id> <call>        hosted: let a waiting call run
  deny <id> <call>           hosted: refuse it (--reason tells the model why)
A session's running turn is steered, interrupted and answered by the process that runs it (its terminal, or its
inspector page with troupe run --inspect): those verbs on a session are a usage error.

Target:
      --restate <url>   Restate's ingress (default: TROUPE_RESTATE_URL; neither: the folder's sessions)
      --admin <url>     Restate's admin API, where subagents' questions are found (default: TROUPE_RESTATE_ADMIN,
                        else port 9070 beside an ingress on 8080; without it the tree is walked through the ingress)
      --name <object>   the agents' object name (default troupe-agent; agentObject({ name }))
  -C, --cwd <dir>       sessions: the folder they were run in (default: the current one)
      --sessions-dir <dir>  sessions: where they are kept (default: TROUPE_SESSIONS_DIR, else .troupe/sessions)

Options:
      --json            JSON output: the outcome, the list, the history (questions as JSON lines)
      --reason <text>   deny: what the model is told
      --idempotency-key <key>  hosted prompt, send, steer, interrupt: the same key sent again counts once
  -h, --help            this text
A session's prompt also takes troupe run's --offline, --provider, --model, --mode, --max-steps, --mcp-config,
--no-agents-md and --inspect (the session's own settings when not given again; see troupe run --help).

While prompt or attach waits, the calls of the agent's tree that wait for approval are asked on a terminal
(y / n; a session's also "always"); piped, a session's read answers from stdin, a hosted agent's are printed with
the commands that answer them. Ctrl-C interrupts the turn; a second Ctrl-C leaves (a hosted turn goes on).
Exit codes: 0 completed, 1 failed or the ingress refused, 2 usage error, 3 step limit, 130 interrupted.`;
