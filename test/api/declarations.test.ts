/**
 * The published declarations name no internal type: from every entry of `package.json`'s exports, each exported
 * declaration is followed through the types its signature names (members, parameters, heritage, type arguments),
 * as a user's editor would, and none of them may be one of the runtime's own classes (an agent's env, the
 * supervision tree, an attached agent), nor any class no entry exports: a caller could meet it and never name it.
 * The declarations are emitted as `npm run build` emits them (`stripInternal` on), so `@internal` members are gone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDeclarations, type PackageEntry, packageEntries } from '../../scripts/declarations.js';

/** Classes of the runtime that hold its state: never part of a signature a user reads. */
const INTERNAL = ['AgentEnv', 'Tree', 'TreeNode', 'AttachedAgent', 'EventBus', 'Transcript', 'SessionRecorder'];

const out = mkdtempSync(join(tmpdir(), 'troupe-dts-'));
let entries: PackageEntry[];
let program: ts.Program;

beforeAll(() => {
  buildDeclarations(out);
  entries = packageEntries(out);
  program = ts.createProgram(
    entries.map((e) => e.types),
    { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, skipLibCheck: true },
  );
}, 600_000);

afterAll(() => rmSync(out, { recursive: true, force: true }));

interface Reached {
  name: string;
  file: string;
  isClass: boolean;
  /** The exported declaration whose signature led here, for the failure message. */
  via: string;
}

/** Every declaration of ours the exported ones name, transitively, and the exported symbols themselves. */
function reachable(): { exported: Set<ts.Symbol>; reached: Map<ts.Symbol, Reached> } {
  const checker = program.getTypeChecker();
  const ours = (node: ts.Node) => node.getSourceFile().fileName.startsWith(out);
  const resolve = (symbol: ts.Symbol) =>
    symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  const exported = new Set<ts.Symbol>();
  const reached = new Map<ts.Symbol, Reached>();
  const queue: Array<{ symbol: ts.Symbol; via: string }> = [];
  const reach = (symbol: ts.Symbol, via: string) => {
    const target = resolve(symbol);
    const declarations = (target.declarations ?? []).filter(ours);
    if (declarations.length === 0 || reached.has(target)) return;
    const first = declarations[0] as ts.Declaration;
    reached.set(target, {
      name: target.name,
      file: first.getSourceFile().fileName.slice(out.length + 1),
      isClass: declarations.some(ts.isClassDeclaration),
      via,
    });
    queue.push({ symbol: target, via });
  };
  for (const entry of entries) {
    const source = program.getSourceFile(entry.types);
    const module = source && checker.getSymbolAtLocation(source);
    if (!module) throw new Error(`no declarations for ${entry.name} at ${entry.types}`);
    for (const symbol of checker.getExportsOfModule(module)) {
      exported.add(resolve(symbol));
      // `export const X: typeof Class` (an entry that loads its modules lazily) exports the class too.
      for (const declaration of resolve(symbol).declarations ?? []) {
        const type = ts.isVariableDeclaration(declaration) ? declaration.type : undefined;
        const named = type && ts.isTypeQueryNode(type) ? type.exprName : undefined;
        const target = named && checker.getSymbolAtLocation(ts.isQualifiedName(named) ? named.right : named);
        if (target) exported.add(resolve(target));
      }
      reach(symbol, `${entry.name}: ${symbol.name}`);
    }
  }
  const isHidden = (node: ts.Node) =>
    ts.canHaveModifiers(node) &&
    (ts.getModifiers(node) ?? []).some(
      (m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword,
    );
  while (queue.length > 0) {
    const { symbol, via } = queue.shift() as { symbol: ts.Symbol; via: string };
    const visit = (node: ts.Node): void => {
      if (isHidden(node)) return;
      const named = ts.isTypeReferenceNode(node)
        ? node.typeName
        : ts.isExpressionWithTypeArguments(node)
          ? node.expression
          : ts.isTypeQueryNode(node)
            ? node.exprName
            : ts.isImportTypeNode(node)
              ? node.qualifier
              : undefined;
      const found = named && checker.getSymbolAtLocation(ts.isQualifiedName(named) ? named.right : named);
      if (found) reach(found, via);
      ts.forEachChild(node, visit);
    };
    for (const declaration of symbol.declarations ?? []) if (ours(declaration)) visit(declaration);
  }
  return { exported, reached };
}

describe('the published declarations', () => {
  it('name no internal class of the runtime, and no class that no entry exports', () => {
    const { exported, reached } = reachable();
    const leaks = [...reached]
      .filter(([symbol, r]) => INTERNAL.includes(r.name) || (r.isClass && !exported.has(symbol)))
      .map(([, r]) => `${r.name} (${r.file}), reached from ${r.via}`);
    expect(leaks).toEqual([]);
    // The walk does reach beyond the exported names: a signature's own types (AgentConfig from createAgent).
    expect([...reached.values()].map((r) => r.name)).toEqual(
      expect.arrayContaining(['AgentConfig', 'SessionsOptions']),
    );
  });
});
