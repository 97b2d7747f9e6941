import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * Replaces a file's content so that a failure at any point (a full disk, a file-size limit, a crash) leaves either
 * the old file or the new one, never a cut mix: the text goes to a new file in the same folder, is flushed to the
 * disk, takes the old file's mode (and owner, where this process may set it), and is renamed over the target in
 * one step. A failed attempt removes its temporary file. `check` sees the open temporary file before anything is
 * written (the caller verifies where it really is). A hard link to the old file keeps the old content.
 */
export async function writeAtomically(
  target: string,
  text: string,
  previous: Stats | undefined,
  check: (handle: fs.FileHandle) => Promise<void>,
): Promise<Stats> {
  const dir = path.dirname(target);
  await fs.mkdir(dir, { recursive: true });
  const temp = path.join(dir, `.${path.basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await fs.open(
    temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    previous ? 0o600 : 0o644,
  );
  let renamed = false;
  try {
    await check(handle);
    if (previous) {
      await handle.chmod(previous.mode & 0o7777);
      await handle.chown(previous.uid, previous.gid).catch(() => {});
    }
    await handle.writeFile(text, 'utf8');
    await handle.sync();
    const stats = await handle.stat();
    await handle.close();
    await fs.rename(temp, target);
    renamed = true;
    await syncFolder(dir);
    return stats;
  } finally {
    if (!renamed) {
      await handle.close().catch(() => {});
      await fs.unlink(temp).catch(() => {});
    }
  }
}

/** Makes the rename itself durable; some platforms cannot open a folder for this, and then the rename stands alone. */
async function syncFolder(dir: string): Promise<void> {
  let folder: fs.FileHandle | undefined;
  try {
    folder = await fs.open(dir, constants.O_RDONLY);
    await folder.sync();
  } catch {
  } finally {
    await folder?.close().catch(() => {});
  }
}
