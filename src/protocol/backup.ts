import * as z from 'zod';
import { command, nonEmpty } from './command-frame';
import { lazySchema } from './lazy-schema';

/** A consistent copy of the data directory, made by the running service (owner only; the CLI's `backup`). */
export const BackupCommand = lazySchema(() =>
  command('backup', {
    path: nonEmpty('path'),
  }),
);

export const BackupResults = lazySchema(() => ({
  backup: z.object({
    path: z.string(),
    /** The files written, relative to `path`. */
    files: z.array(z.string()),
  }),
}));
