import { createECDH } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../../platform/atomic-write';
import { PRIVATE_FILE_MODE } from '../../platform/file-modes';
import { webPush } from './web-push-lib';

export const VAPID_FILE_NAME = 'vapid.json';

/**
 * The VAPID `sub` claim: a contact for the push services. It must be a real-looking `mailto:` or
 * `https:` URI: Apple's push service refuses a JWT whose subject is `localhost` or `.local` (403
 * BadJwtToken). The owner may put their own address in vapid.json's `subject`.
 */
export const DEFAULT_VAPID_SUBJECT = 'mailto:remote-assistant@users.noreply.github.com';

export interface VapidKeys {
  /** base64url uncompressed P-256 point: the page's applicationServerKey. */
  publicKey: string;
  /** base64url 32-byte scalar: a secret (never logged, never in get_config). */
  privateKey: string;
  subject: string;
}

interface VapidFile {
  public_key: string;
  private_key: string;
  subject?: string;
  created_at: string;
}

function validSubject(subject: unknown): subject is string {
  if (typeof subject !== 'string') return false;
  try {
    const url = new URL(subject);
    return (url.protocol === 'mailto:' || url.protocol === 'https:') && !/localhost|\.local$/i.test(url.hostname || subject);
  } catch {
    return false;
  }
}

/** Whether the stored pair is one key pair: the public key is the private key's. */
function matches(file: VapidFile): boolean {
  try {
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(Buffer.from(file.private_key, 'base64url'));
    return ecdh.getPublicKey().toString('base64url') === file.public_key;
  } catch {
    return false;
  }
}

/**
 * The service's own VAPID key pair (RFC 8292): made on first use and kept in the data directory
 * (`vapid.json`, 0600), so subscriptions made with its public key stay valid across restarts. A file
 * that is unreadable or holds no matching pair is replaced: the phones then subscribe again (the old
 * subscriptions fail, the push service answering 401/403, and are recorded so).
 */
export class VapidKeyStore {
  private loading?: Promise<VapidKeys>;

  constructor(
    private readonly dataDir: string,
    /** Told of the private key once known, so the log and any text shown redact it. */
    private readonly onSecret: (secret: string) => void,
  ) {}

  keys(): Promise<VapidKeys> {
    this.loading ??= this.load().catch((error: unknown) => {
      this.loading = undefined;
      throw error;
    });
    return this.loading;
  }

  private async load(): Promise<VapidKeys> {
    const file = join(this.dataDir, VAPID_FILE_NAME);
    let stored: VapidFile | undefined;
    try {
      const parsed = JSON.parse(await readFile(file, 'utf8')) as VapidFile;
      if (typeof parsed.public_key === 'string' && typeof parsed.private_key === 'string' && matches(parsed)) stored = parsed;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' && !(error instanceof SyntaxError)) throw error;
    }
    if (!stored) {
      const pair = webPush().generateVAPIDKeys();
      stored = { public_key: pair.publicKey, private_key: pair.privateKey, subject: DEFAULT_VAPID_SUBJECT, created_at: new Date().toISOString() };
      await writeFileAtomic(file, `${JSON.stringify(stored, null, 2)}\n`, { mode: PRIVATE_FILE_MODE });
    }
    this.onSecret(stored.private_key);
    return { publicKey: stored.public_key, privateKey: stored.private_key, subject: validSubject(stored.subject) ? stored.subject : DEFAULT_VAPID_SUBJECT };
  }
}
