import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type DefaultTheme, defineConfig } from 'vitepress';

const guides: DefaultTheme.SidebarItem[] = [
  { text: 'Getting started', link: '/guide/getting-started' },
  { text: 'Agents and tools', link: '/guide/agents' },
  { text: 'Subagents and swarms', link: '/guide/subagents' },
  { text: 'Sessions', link: '/guide/sessions' },
  { text: 'Context', link: '/guide/context' },
  { text: 'Permissions, hooks, budgets', link: '/guide/permissions' },
  { text: 'The troupe command and workspace tools', link: '/guide/cli' },
  { text: 'MCP servers', link: '/guide/mcp' },
  { text: 'Watching agents', link: '/guide/inspector' },
  { text: 'Restate', link: '/guide/restate' },
  { text: 'Testing your agents', link: '/guide/testing' },
  { text: 'Providers and real models', link: '/guide/providers' },
  { text: 'Performance', link: '/guide/performance' },
];

const reference: DefaultTheme.SidebarItem[] = [
  { text: 'Statecharts', link: '/statecharts' },
  { text: 'Coming from another runtime', link: '/parity' },
];
// Generated or separately written sections are linked once their entry page exists, so that the site never links a
// missing page: the API reference (docs/api/, generated from the doc comments) and the architecture.
const exists = (page: string): boolean => existsSync(fileURLToPath(new URL(`../${page}`, import.meta.url)));
if (exists('api/index.md')) reference.unshift({ text: 'API reference', link: '/api/' });
if (exists('architecture/index.md')) reference.push({ text: 'Architecture', link: '/architecture/' });

export default defineConfig({
  title: 'Troupe',
  description: 'An actor-model orchestrator for LLM agents, built on XState v5',
  cleanUrls: true,
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/guide/getting-started' },
      ...(exists('api/index.md') ? [{ text: 'API', link: '/api/' }] : []),
      { text: 'Statecharts', link: '/statecharts' },
    ],
    sidebar: [
      { text: 'Guide', items: guides },
      { text: 'Reference', items: reference },
    ],
    outline: [2, 3],
    search: { provider: 'local' },
  },
});
