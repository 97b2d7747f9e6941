import path from 'node:path';
import picomatch from 'picomatch';

/**
 * Files that hold secrets: environment files (every name that starts with `.env`: `.env.local`, `.envrc`,
 * `.env-prod`), private keys, credential stores (`.netrc`, `.pgpass`, `.git-credentials`, `*credentials*.json`,
 * Terraform variables and state). Refused to every built-in tool unless allowed (`allowSensitive`), because a
 * model that reads one puts the secret in the transcript, the provider's logs and every event listener. Matched on
 * the basename (and, for a few stores, the last two segments), case-insensitively.
 */
const SECRET_NAMES = [
  '.env*',
  '*.pem',
  '*.key',
  '*.p12',
  '*.pfx',
  '*.jks',
  '*.keystore',
  'id_rsa',
  'id_dsa',
  'id_ecdsa',
  'id_ed25519',
  'id_*_sk',
  '.netrc',
  '.npmrc',
  '.pypirc',
  '.git-credentials',
  '.pgpass',
  '.htpasswd',
  'credentials',
  '*credentials*.json',
  '*.tfvars',
  '*.tfvars.json',
  '*.tfstate',
  '*.tfstate.backup',
  'secrets.json',
  'secrets.y?(a)ml',
];
const SECRET_PLACES = ['.ssh/*', '.aws/*', '.gnupg/*', '.docker/config.json', '.kube/config'];
/** Templates that document which variables exist, without their values. */
const TEMPLATES = ['.env.example', '.env.sample', '.env.template', '.env.dist', '*.pub'];

const options = { dot: true, nocase: true };
const secretName = picomatch(SECRET_NAMES, options);
const secretPlace = picomatch(SECRET_PLACES, options);
const template = picomatch(TEMPLATES, options);

/** Why a path looks like a secret, or undefined. Takes any path; only its last two segments matter. */
export function sensitiveReason(file: string): string | undefined {
  const base = path.basename(file);
  if (template(base)) return undefined;
  if (secretName(base)) {
    if (base.toLowerCase().startsWith('.env')) return 'an environment file';
    if (/^id_|\.(pem|key|p12|pfx|jks|keystore)$/i.test(base)) return 'a private key';
    return 'a credentials file';
  }
  const lastTwo = `${path.basename(path.dirname(file))}/${base}`;
  if (secretPlace(lastTwo)) return 'a credentials store';
  return undefined;
}

/** A matcher for the workspace-relative paths a user allowed despite looking sensitive. */
export function allowMatcher(patterns: readonly string[]): (relative: string) => boolean {
  if (patterns.length === 0) return () => false;
  return picomatch([...patterns], { dot: true });
}
