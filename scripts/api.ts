/**
 * `npm run check:api`: the API report of every package entry (api/<entry>.api.md, written by
 * @microsoft/api-extractor from the published declarations) must equal the committed one, so a change to the
 * public API fails the check until its report is updated in the same commit. `npm run api:update` (`--update`)
 * writes the reports instead. One declaration build and one compiler program serve every entry.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CompilerState,
  Extractor,
  ExtractorConfig,
  ExtractorLogLevel,
  type ExtractorMessage,
  type IConfigFile,
} from '@microsoft/api-extractor';
import { buildDeclarations, packageEntries, ROOT } from './declarations.js';

const update = process.argv.includes('--update');
const REPORTS = join(ROOT, 'api');
const out = mkdtempSync(join(tmpdir(), 'troupe-api-'));

/** Off: the report is the contract; doc-comment style is TypeDoc's and the reviewers' business, not the check's. */
const quiet = { logLevel: ExtractorLogLevel.None, addToApiReportFile: false };

/** api/troupe.api.md, api/troupe-host.api.md, … */
const reportName = (entry: string) => `${entry.replaceAll('/', '-')}.api.md`;

function configOf(entry: { name: string; types: string }): IConfigFile {
  return {
    projectFolder: out,
    mainEntryPointFilePath: entry.types,
    compiler: {
      overrideTsconfig: {
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          lib: ['ES2023'],
          types: ['node'],
          strict: true,
          skipLibCheck: true,
        },
        include: [join(out, '**/*.d.ts')],
      },
    },
    apiReport: {
      enabled: true,
      reportFileName: reportName(entry.name),
      reportFolder: REPORTS,
      reportTempFolder: join(out, 'api-temp'),
      // A type a signature names but no entry exports is part of the contract too: its shape is in the report.
      includeForgottenExports: true,
    },
    docModel: { enabled: false },
    dtsRollup: { enabled: false },
    tsdocMetadata: { enabled: false },
    newlineKind: 'lf',
    messages: {
      compilerMessageReporting: { default: { logLevel: ExtractorLogLevel.Error } },
      extractorMessageReporting: {
        default: { logLevel: ExtractorLogLevel.Warning },
        // Troupe marks no release stages (@public, @beta): an entry is the stage.
        'ae-missing-release-tag': quiet,
        // A type that an entry's declarations name but that entry does not export is in its report anyway
        // (`includeForgottenExports`): naming it is the entry's choice, its shape is the contract.
        'ae-forgotten-export': quiet,
        // Doc comments are TypeDoc's and the reviewers' business: the report is about shapes.
        'ae-undocumented': quiet,
        'ae-setter-with-docs': quiet,
        'ae-unresolved-link': quiet,
      },
      tsdocMessageReporting: { default: quiet },
    },
  };
}

let failed = false;
try {
  buildDeclarations(out);
  symlinkSync(join(ROOT, 'node_modules'), join(out, 'node_modules'));
  mkdirSync(REPORTS, { recursive: true });
  const entries = packageEntries(out);
  const configs = entries.map((entry) =>
    ExtractorConfig.prepare({
      configObject: configOf(entry),
      configObjectFullPath: undefined,
      packageJsonFullPath: join(ROOT, 'package.json'),
    }),
  );
  const compilerState = CompilerState.create(configs[0] as ExtractorConfig, {
    additionalEntryPoints: entries.map((e) => e.types),
  });
  for (const [i, config] of configs.entries()) {
    const entry = entries[i] as { name: string };
    const report = `api/${reportName(entry.name)}`;
    const messages: string[] = [];
    const result = Extractor.invoke(config, {
      localBuild: update,
      compilerState,
      messageCallback(message: ExtractorMessage) {
        if (message.logLevel === ExtractorLogLevel.None) return;
        messages.push(message.formatMessageWithLocation(out));
        message.handled = true;
      },
    });
    const changed = result.apiReportChanged && !update;
    if (changed || !result.succeeded) {
      failed = true;
      console.error(`${entry.name}: ${changed ? `the public API differs from ${report}` : 'failed'}`);
      for (const line of messages) console.error(`  ${line}`);
    } else {
      console.log(`${entry.name}: ${result.apiReportChanged ? `updated ${report}` : 'unchanged'}`);
    }
  }
  if (failed && !update)
    console.error('A change to the public API: review it, then `npm run api:update` and commit api/.');
} finally {
  rmSync(out, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
