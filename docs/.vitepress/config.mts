import { existsSync, readdirSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type DefaultTheme, defineConfig } from 'vitepress';

const guides: DefaultTheme.SidebarItem[] = [
  { text: 'Getting started', link: '/guide/getting-started' },
  { text: 'Agents and tools', link: '/guide/agents' },
  { text: 'Subagents and swarms', link: '/guide/subagents' },
  { text: 'Supervision strategies', link: '/guide/supervision-strategies' },
  { text: 'Sessions', link: '/guide/sessions' },
  { text: 'Time travel', link: '/guide/time-travel' },
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

// The API reference's sidebar, read from what `npm run docs:api` wrote: TypeDoc (typedoc-plugin-markdown) gives each
// entry point a folder with an index.md and one page per export, grouped in a folder per kind. A subpath's folder
// (troupe/testing) sits inside the root entry's (troupe), beside the kind folders.
const kinds: Record<string, string> = {
  classes: 'Classes',
  functions: 'Functions',
  interfaces: 'Interfaces',
  'type-aliases': 'Types',
  variables: 'Values',
  enumerations: 'Enumerations',
  namespaces: 'Namespaces',
};
const apiRoot = fileURLToPath(new URL('../api', import.meta.url));

function apiEntries(dir: string): DefaultTheme.SidebarItem[] {
  const name = relative(apiRoot, dir).split('\\').join('/');
  const folders = readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isDirectory());
  const groups = folders
    .filter((folder) => folder.name in kinds)
    .map((folder) => ({
      text: kinds[folder.name],
      collapsed: true,
      items: readdirSync(join(dir, folder.name))
        .filter((file) => file.endsWith('.md'))
        .sort()
        .map((file) => basename(file, '.md'))
        .map((page) => ({ text: page, link: `/api/${name}/${folder.name}/${page}` })),
    }));
  const subpaths = folders
    .filter((folder) => !(folder.name in kinds) && existsSync(join(dir, folder.name, 'index.md')))
    .flatMap((folder) => apiEntries(join(dir, folder.name)));
  const own = groups.length > 0 ? [{ text: name, link: `/api/${name}/`, collapsed: true, items: groups }] : [];
  return [...own, ...subpaths];
}
const api: DefaultTheme.SidebarItem[] = exists('api/index.md')
  ? readdirSync(apiRoot, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .flatMap((entry) => apiEntries(join(apiRoot, entry.name)))
  : [];

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
    sidebar: {
      '/api/': [{ text: 'API reference', link: '/api/', items: api }],
      '/': [
        { text: 'Guide', items: guides },
        { text: 'Reference', items: reference },
      ],
    },
    outline: [2, 3],
    search: { provider: 'local' },
  },
});
