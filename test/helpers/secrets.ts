/** Keys of every secret class, planted where a test wants them found, and a search for them in any output. */
import { randomBytes } from 'node:crypto';

const tag = () => randomBytes(6).toString('hex');

/** One variable of every secret class, each value unique to this run and easy to search for. */
export const PLANTED: Readonly<Record<string, string>> = {
  OPENAI_API_KEY: `sk-planted-openai-${tag()}`,
  GITHUB_TOKEN: `ghp_planted${tag()}`,
  AWS_SECRET_ACCESS_KEY: `planted/aws+${tag()}`,
  ANTHROPIC_AUTH_TOKEN: `planted-auth-${tag()}`,
  DB_PASSWORD: `planted-pw-${tag()}`,
  STRIPE_SECRET: `planted-stripe-${tag()}`,
  SLACK_BOT_TOKEN: `xoxb-planted-${tag()}`,
  GPG_PASSPHRASE: `planted-pass-${tag()}`,
  GOOGLE_APPLICATION_CREDENTIALS_JSON: `planted-gcp-${tag()}`,
  GH_PAT: `planted-pat-${tag()}`,
  DATABASE_URL: `postgres://app:planted${tag()}@db.internal/app`,
};

/**
 * Puts the keys in this process's environment, and returns what takes them out again. Call it before anything
 * reads the environment's secrets: they are read at their first use.
 */
export function plantInEnvironment(): () => void {
  Object.assign(process.env, PLANTED);
  return () => {
    for (const name of Object.keys(PLANTED)) delete process.env[name];
  };
}

/** The names of the planted keys whose values appear in a text. */
export function leaks(text: string): string[] {
  return Object.entries(PLANTED).flatMap(([name, value]) => (text.includes(value) ? [name] : []));
}
